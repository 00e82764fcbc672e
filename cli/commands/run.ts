// `run`: load a model (downloading it first) and open its chat; `bench`: measure models.
import { readFileSync, writeFileSync } from "node:fs";
import { Client, CliError, ensureServer, target } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { dim, table } from "../format.ts";
import { LOAD_FLAGS, LOAD_FLAGS_HELP, loadOptionsFrom } from "../load-flags.ts";
import { chatLoop, maxTokensFrom } from "./chat.ts";
import { loadWithPhases, pullWithProgress } from "./models.ts";

const clientOf = (input: CommandInput) => new Client(target(input.values as { host?: string; port?: string }));

/** Downloads (with the bar) what is missing, then loads with the given options. */
export async function pullAndLoad(client: Client, model: string, options: Record<string, unknown> = {}): Promise<void> {
  const info = await client.json("GET", `/v1/models/${encodeURIComponent(model)}`);
  if (!info.downloaded) await pullWithProgress(client, { model_name: model });
  await loadWithPhases(client, { model_name: model, ...options }, (line) => process.stderr.write(dim(`${line}\n`)));
}

/** Opens a URL in the desktop's browser; false when there is none to open it. */
async function openBrowser(url: string): Promise<boolean> {
  const argv = process.platform === "darwin" ? ["open", url] : process.platform === "win32" ? ["cmd", "/c", "start", "", url] : ["xdg-open", url];
  if (!Bun.which(argv[0]!)) return false;
  try {
    const child = Bun.spawn(argv, { stdio: ["ignore", "ignore", "ignore"] });
    return (await child.exited) === 0;
  } catch {
    return false;
  }
}

export const run: Command = {
  name: "run",
  summary: "Load a model and chat with it (in the web app, or the terminal with --chat-cli)",
  usage: "run MODEL [--chat-cli] [--max-tokens N] [load options]",
  help: `Starts the server if none is running, loads the model (downloading it first, with progress)
and opens its chat in the web app in your browser, printing the address when no browser can be
opened. Where the server has no web app, or with --chat-cli, the chat runs in the terminal:
type a message and press Enter; /bye or Ctrl-D leaves (see lemonade chat --help).
  --chat-cli       Chat in the terminal
  --max-tokens N   Cap each reply (terminal chat)
${LOAD_FLAGS_HELP}
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, ...LOAD_FLAGS, "chat-cli": { type: "boolean" }, "max-tokens": { type: "string" } },
  async run(input) {
    const [model, ...extra] = input.positionals;
    if (!model || extra.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const maxTokens = maxTokensFrom(input.values["max-tokens"]);
    const client = clientOf(input);
    await ensureServer(client);
    await pullAndLoad(client, model, loadOptionsFrom(input.values));
    if (!input.values["chat-cli"]) {
      const page = await client.request("GET", "/");
      await page.body?.cancel();
      if (page.ok && page.headers.get("content-type")?.includes("text/html")) {
        const url = `${client.base}/?model=${encodeURIComponent(model)}#chat`;
        if (await openBrowser(url)) console.log(`Opened ${url}`);
        else console.log(`Open ${url} in your browser to chat with ${model}.`);
        return 0;
      }
    }
    return chatLoop(client, model, { stream: true, maxTokens });
  },
};

interface BenchRun {
  model: string;
  run: number;
  ttft_ms: number;
  prompt_tokens_per_second: number;
  generation_tokens_per_second: number;
  peak_memory_mb: number | null;
}

/** The engine's peak resident memory (VmHWM), when it runs on this machine and /proc shows it. */
function peakMemoryMb(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

const positiveInt = (raw: unknown, flag: string, fallback: number, min = 1) => {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!(Number.isInteger(n) && n >= min)) throw new CliError(`--${flag} must be a whole number from ${min}, got ${raw}`, 2);
  return n;
};

export const bench: Command = {
  name: "bench",
  summary: "Measure models: time to first token, prompt and generation tokens/s, peak memory",
  usage: "bench MODEL... [--runs N] [--warmup N] [--tokens N] [--backend B] [--ctx-size N] [--json] [--output FILE] [--compare FILE]",
  help: `Loads each model and runs fixed requests, reporting the engine's own timings per run.
  --runs N         Measured requests per model (default 3)
  --warmup N       Unmeasured requests first (default 1)
  --tokens N       Tokens to generate per request (default 64)
  --backend B      llama.cpp backend to load with (llamacpp_backend)
  --ctx-size N     Context size to load with
  --json           Print the runs as JSON
  --output FILE    Also write the runs as JSON to FILE
  --compare FILE   Show each median beside the one in FILE (an earlier --output)
${SERVER_FLAGS_HELP}`,
  options: {
    ...SERVER_FLAGS,
    runs: { type: "string" },
    warmup: { type: "string" },
    tokens: { type: "string" },
    backend: { type: "string" },
    "ctx-size": { type: "string" },
    json: { type: "boolean" },
    output: { type: "string" },
    compare: { type: "string" },
  },
  async run(input) {
    const models = input.positionals;
    if (!models.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const v = input.values;
    const runs = positiveInt(v.runs, "runs", 3);
    const warmup = positiveInt(v.warmup, "warmup", 1, 0);
    const tokens = positiveInt(v.tokens, "tokens", 64);
    const options: Record<string, unknown> = {};
    if (v.backend !== undefined) options.llamacpp_backend = String(v.backend);
    if (v["ctx-size"] !== undefined) options.ctx_size = positiveInt(v["ctx-size"], "ctx-size", 0, -1);
    let baseline: BenchRun[] | undefined;
    if (v.compare) {
      try {
        baseline = JSON.parse(readFileSync(String(v.compare), "utf8")).runs;
      } catch (err) {
        throw new CliError(`--compare ${v.compare} is not an earlier --output file: ${(err as Error).message}`);
      }
    }
    const client = clientOf(input);
    await ensureServer(client);
    const all: BenchRun[] = [];
    for (const model of models) {
      await pullAndLoad(client, model, options);
      const pid = ((await client.json("GET", "/v1/health")).all_models_loaded as any[]).find((m) => m.model_name === model)?.pid;
      for (let i = 0; i < warmup + runs; i++) {
        const res = await client.json("POST", "/v1/chat/completions", {
          model,
          messages: [{ role: "user", content: `Benchmark run ${i}: write a long story about a lemon.` }],
          max_tokens: tokens,
          ignore_eos: true,
          cache_prompt: false,
        });
        const t = res.timings;
        if (!t) throw new CliError(`${model}'s engine reports no timings; bench measures llama.cpp models`);
        if (i < warmup) continue;
        all.push({
          model,
          run: i - warmup + 1,
          ttft_ms: t.prompt_ms,
          prompt_tokens_per_second: t.prompt_per_second,
          generation_tokens_per_second: t.predicted_per_second,
          peak_memory_mb: peakMemoryMb(pid),
        });
      }
    }
    const report = { tokens, runs: all };
    if (v.output) writeFileSync(String(v.output), JSON.stringify(report, null, 2) + "\n");
    if (v.json) {
      console.log(JSON.stringify(report, null, 2));
      return 0;
    }
    const f = (n: number | null) => (n === null ? "" : n.toFixed(1));
    console.log(
      table(
        ["MODEL", "RUN", "TTFT MS", "PROMPT TOK/S", "GEN TOK/S", "PEAK MB"],
        all.map((r) => [r.model, String(r.run), f(r.ttft_ms), f(r.prompt_tokens_per_second), f(r.generation_tokens_per_second), r.peak_memory_mb === null ? "" : String(r.peak_memory_mb)]),
      ),
    );
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    for (const model of models) {
      const mine = all.filter((r) => r.model === model);
      const theirs = baseline?.filter((r) => r.model === model) ?? [];
      const line = (key: "ttft_ms" | "generation_tokens_per_second") => {
        const now = median(mine.map((r) => r[key]));
        const before = theirs.length ? median(theirs.map((r) => r[key])) : undefined;
        return `${now.toFixed(1)}${before !== undefined ? ` (was ${before.toFixed(1)}, ${(now / before).toFixed(2)}x)` : ""}`;
      };
      console.log(`${model}: median TTFT ${line("ttft_ms")} ms, generation ${line("generation_tokens_per_second")} tokens/s`);
    }
    return 0;
  },
};
