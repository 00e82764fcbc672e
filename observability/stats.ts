// /v1/stats: the last generation request's performance, from the engine's own timings, and
// running totals since start.

export interface EngineTimings {
  prompt_n?: number;
  prompt_ms?: number;
  cache_n?: number;
  predicted_n?: number;
  predicted_per_second?: number;
}

export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  input_tokens?: number;
  output_tokens?: number;
}

export interface LastRequest {
  time_to_first_token: number | null;
  tokens_per_second: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  prompt_tokens: number | null;
  cache_tokens: number | null;
}

/** A model as Lemonade keys its telemetry and labels its per-model series. */
export interface ModelIdentity {
  /** The catalog id; a label shows it as the id the API lists (Metrics.modelName). */
  model_name: string;
  checkpoint: string;
  type: string;
  device: string;
  recipe: string;
}

/** The identity of a catalog model; the device is "cpu", as /v1/health reports every engine's. */
export function modelIdentity(model: { id: string; checkpoints: Record<string, string>; type: string; recipe: string }): ModelIdentity {
  return { model_name: model.id, checkpoint: model.checkpoints.main ?? "", type: model.type, device: "cpu", recipe: model.recipe };
}

export interface TelemetryTotals {
  request_count_total: number;
  input_tokens_total: number;
  output_tokens_total: number;
  prompt_tokens_total: number;
  cache_tokens_total: number;
}

/** One model's telemetry: its latest request and its running totals. */
export interface ModelTelemetry {
  identity: ModelIdentity;
  last: LastRequest;
  totals: TelemetryTotals;
}

const noTotals = (): TelemetryTotals => ({ request_count_total: 0, input_tokens_total: 0, output_tokens_total: 0, prompt_tokens_total: 0, cache_tokens_total: 0 });

function addTo(totals: TelemetryTotals, last: LastRequest): void {
  totals.request_count_total++;
  totals.input_tokens_total += last.input_tokens ?? 0;
  totals.output_tokens_total += last.output_tokens ?? 0;
  totals.prompt_tokens_total += last.prompt_tokens ?? 0;
  totals.cache_tokens_total += last.cache_tokens ?? 0;
}

export const identityKey = (i: ModelIdentity) => JSON.stringify([i.model_name, i.checkpoint, i.type, i.device, i.recipe]);

/** How many recent requests per model the speed monitor keeps. */
const RECENT_SPEEDS = 8;

export class GenerationStats {
  last: LastRequest = {
    time_to_first_token: null,
    tokens_per_second: null,
    input_tokens: null,
    output_tokens: null,
    prompt_tokens: null,
    cache_tokens: null,
  };
  totals = noTotals();
  /** Per model, keyed by its whole identity as Lemonade keys it: a model loaded again with
   * another checkpoint or recipe starts a record of its own, and records outlive unloads. */
  private readonly byModel = new Map<string, ModelTelemetry>();
  routing = { routing_decisions_total: 0, routing_switches_total: 0 };
  /** The model each conversation was last routed to, by a hash of its system prompt and first user message. */
  private readonly routed = new Map<string, string>();

  /** Counts a collection.router decision, and a switch when the conversation's last one differed. */
  recordRoute(conversation: string, target: string): void {
    this.routing.routing_decisions_total++;
    const before = this.routed.get(conversation);
    if (before !== undefined && before !== target) this.routing.routing_switches_total++;
    this.routed.delete(conversation);
    this.routed.set(conversation, target);
    // Bounded: the oldest conversations are forgotten first.
    if (this.routed.size > 10_000) this.routed.delete(this.routed.keys().next().value!);
  }

  /** Each model's generation speeds of its last requests, newest last (the auto-tune monitor's). */
  private readonly speeds = new Map<string, number[]>();

  observeSpeed(model: string, tokensPerSecond: number): void {
    const list = [...(this.speeds.get(model) ?? []), tokensPerSecond].slice(-RECENT_SPEEDS);
    this.speeds.set(model, list);
  }

  forgetSpeeds(model: string): void {
    this.speeds.delete(model);
  }

  recentSpeeds(model: string): number[] {
    return this.speeds.get(model) ?? [];
  }

  /** Records one finished request, in all and for its model when named; returns what was recorded. */
  record(timings: EngineTimings | undefined, usage: Usage | undefined, identity?: ModelIdentity): LastRequest {
    const t = timings ?? {};
    const cache = t.cache_n ?? null;
    const processed = t.prompt_n ?? null;
    const promptTotal = processed !== null ? processed + (cache ?? 0) : (usage?.prompt_tokens ?? usage?.input_tokens ?? null);
    const output = t.predicted_n ?? usage?.completion_tokens ?? usage?.output_tokens ?? null;
    this.last = {
      time_to_first_token: t.prompt_ms !== undefined ? t.prompt_ms / 1000 : null,
      tokens_per_second: t.predicted_per_second ?? null,
      input_tokens: processed ?? promptTotal,
      output_tokens: output,
      prompt_tokens: promptTotal,
      cache_tokens: cache,
    };
    addTo(this.totals, this.last);
    if (identity) {
      const key = identityKey(identity);
      const model = this.byModel.get(key) ?? { identity, last: this.last, totals: noTotals() };
      model.last = this.last;
      addTo(model.totals, this.last);
      this.byModel.set(key, model);
    }
    return this.last;
  }

  /** Each model's telemetry so far, with a model that has none yet as Lemonade reports it: zero
   * tokens, timings and totals, and no cache figure. */
  models(loaded: ModelIdentity[] = []): ModelTelemetry[] {
    const fresh = loaded
      .filter((i) => !this.byModel.has(identityKey(i)))
      .map((identity) => ({
        identity,
        last: { time_to_first_token: 0, tokens_per_second: 0, input_tokens: 0, output_tokens: 0, prompt_tokens: 0, cache_tokens: null },
        totals: noTotals(),
      }));
    return [...this.byModel.values(), ...fresh];
  }

  snapshot() {
    return { ...this.last, ...this.totals, ...this.routing };
  }
}

/** Finds the engine's timings and usage in a finished response: a JSON body, or the tail of an
 * event stream (the last events carry them). */
export function extractTimings(text: string): { timings?: EngineTimings; usage?: Usage } | null {
  const candidates = text.trimStart().startsWith("{") && !text.includes("\ndata:") ? [text] : text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => l.slice(6));
  let found = null as { timings?: EngineTimings; usage?: Usage } | null;
  for (const c of candidates.reverse()) {
    if (!c.includes('"timings"') && !c.includes('"usage"')) continue;
    try {
      const json = JSON.parse(c);
      const timings = json.timings ?? json.response?.timings;
      const usage = json.usage ?? json.response?.usage;
      if (timings || usage) {
        found = { timings: found?.timings ?? timings, usage: found?.usage ?? usage };
        if (found.timings) break;
      }
    } catch {
      // A partial event at the cut; the ones after it are whole.
    }
  }
  return found;
}
