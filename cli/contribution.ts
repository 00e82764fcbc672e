// `lemonade bench --submit`: a benchmark contribution a maintainer can merge into the tuning
// profiles (auto-tune.md phase 3). Anonymised: the machine is named only by its archetype (no host
// name, CPU serial, user or path), a model by its name, and the numbers are medians.
import { VERSION } from "../lib/version.ts";
import type { Client } from "./client.ts";
import { type BenchRun } from "./bench-runs.ts";
import { median } from "../lib/bench.ts";

export const CONTRIBUTION_FORMAT = "lemonade-bench-contribution";

export interface Contribution {
  model: string;
  recipe: string;
  backend: string;
  /** The performance parameters the model ran with, and the context size. */
  parameters: Record<string, string | number>;
  runs: number;
  tokens: number;
  tokens_per_second: number;
  prompt_tokens_per_second: number;
  ttft_ms: number;
  peak_memory_mb: number | null;
}

/** One model's entry, from its runs and the server's view of how it is loaded now. */
export async function contribution(client: Client, model: string, runs: BenchRun[], tokens: number): Promise<Contribution> {
  const health = await client.json("GET", "/v1/health");
  const loaded = await client.loadedEntry<{ model_name: string; recipe: string; backend?: string; recipe_options: Record<string, unknown> }>(model, health);
  const view = await client.json("GET", `/v1/models/${encodeURIComponent(model)}/options`);
  const params = Object.fromEntries(Object.entries((view.tuning?.params ?? {}) as Record<string, { value: string | number }>).map(([k, p]) => [k, p.value]));
  const ctx = loaded?.recipe_options.ctx_size;
  const memory = runs.map((r) => r.peak_memory_mb).filter((m): m is number => m !== null);
  return {
    model,
    recipe: loaded?.recipe ?? view.recipe,
    backend: loaded?.backend ?? view.tuning?.backend ?? "",
    parameters: { ...params, ...(typeof ctx === "number" ? { ctx_size: ctx } : {}) },
    runs: runs.length,
    tokens,
    tokens_per_second: round(median(runs.map((r) => r.generation_tokens_per_second))),
    prompt_tokens_per_second: round(median(runs.map((r) => r.prompt_tokens_per_second))),
    ttft_ms: round(median(runs.map((r) => r.ttft_ms))),
    peak_memory_mb: memory.length ? Math.max(...memory) : null,
  };
}

const round = (n: number) => Math.round(n * 10) / 10;

/** The whole file: the format, the server version, the day (not the time), the archetype. */
export async function submission(client: Client, entries: Contribution[]) {
  const health = await client.json("GET", "/v1/health");
  return {
    format: CONTRIBUTION_FORMAT,
    format_version: 1,
    lemonade_version: health.version ?? VERSION,
    date: new Date().toISOString().slice(0, 10),
    archetype: health.auto_tune?.archetype ?? null,
    results: entries,
  };
}
