// What `lemonade bench` measures, shared with `lemonade tune`: fixed chat requests against a
// loaded model, each timed by the engine itself (its `timings`), and the engine's peak memory.
import { readFileSync } from "node:fs";
import { CliError, type Client } from "./client.ts";


export interface BenchRun {
  model: string;
  /** The load's backend, context size and llama-server args, where bench was given them. */
  backend?: string;
  ctx_size?: number;
  llamacpp_args?: string;
  run: number;
  ttft_ms: number;
  prompt_tokens_per_second: number;
  generation_tokens_per_second: number;
  peak_memory_mb: number | null;
}

/** The engine's peak resident memory (VmHWM), when it runs on this machine and /proc shows it. */
export function peakMemoryMb(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** `warmup` unmeasured then `runs` measured requests of `tokens` generated tokens each, against the
 * model as it is loaded now. */
export async function measureLoaded(client: Client, model: string, opts: { runs: number; warmup: number; tokens: number }): Promise<BenchRun[]> {
  const pid = (await client.loadedEntry<{ model_name: string; pid: number }>(model))?.pid;
  const out: BenchRun[] = [];
  for (let i = 0; i < opts.warmup + opts.runs; i++) {
    const res = await client.json("POST", "/v1/chat/completions", {
      model,
      messages: [{ role: "user", content: `Benchmark run ${i}: write a long story about a lemon.` }],
      max_tokens: opts.tokens,
      ignore_eos: true,
      cache_prompt: false,
    });
    const t = res.timings;
    if (!t) throw new CliError(`${model}'s engine reports no timings; bench measures llama.cpp models`);
    if (i < opts.warmup) continue;
    out.push({
      model,
      run: i - opts.warmup + 1,
      ttft_ms: t.prompt_ms,
      prompt_tokens_per_second: t.prompt_per_second,
      generation_tokens_per_second: t.predicted_per_second,
      peak_memory_mb: peakMemoryMb(pid),
    });
  }
  return out;
}
