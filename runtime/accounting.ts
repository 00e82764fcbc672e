// What an exchange leaves behind once it ends: its request counted and timed by model, route and
// status, a cloud provider's request counted, and a generation's timings and token counts (read
// from the end of the engine's answer) in /v1/stats and the token metrics.
import type { Metrics } from "../observability/metrics.ts";
import { extractTimings, type GenerationStats, type ModelIdentity } from "../observability/stats.ts";

export interface AccountingDeps {
  metrics: Metrics;
  stats: GenerationStats;
}

/** One ended exchange, as the accounting sees it. */
export interface Ended {
  modelId: string;
  /** The model as Lemonade's per-model telemetry names it. */
  identity: ModelIdentity;
  /** Metrics label: the route, e.g. `chat_completions`. */
  endpoint: string;
  /** The cloud provider that served it, if one did. */
  provider?: string;
  status: number;
  seconds: number;
  /** Whether the answer carries generation timings. */
  generation: boolean;
  /** The end of the engine's answer, when it came whole. */
  tail?: string;
}

export function account({ metrics, stats }: AccountingDeps, ended: Ended): void {
  const { modelId, status } = ended;
  const model = metrics.modelName(modelId);
  const labels = { model, endpoint: ended.endpoint };
  metrics.engineRequests.inc({ ...labels, status: String(status) });
  if (ended.provider) metrics.cloudRequests.inc({ provider: ended.provider, model, status: String(status) });
  metrics.modelRequestDuration.observe(labels, ended.seconds);
  if (!ended.generation || !ended.tail || status < 200 || status >= 300) return;
  const found = extractTimings(ended.tail);
  if (!found) return;
  const rec = stats.record(found.timings, found.usage, ended.identity);
  if (rec.tokens_per_second !== null && (rec.output_tokens ?? 0) > 1) stats.observeSpeed(modelId, rec.tokens_per_second);
  if (rec.output_tokens) metrics.generatedTokens.inc({ model }, rec.output_tokens);
  if (rec.time_to_first_token !== null) metrics.timeToFirstToken.observe({ model }, rec.time_to_first_token);
}
