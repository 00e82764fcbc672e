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
  totals = { request_count_total: 0, input_tokens_total: 0, output_tokens_total: 0, prompt_tokens_total: 0, cache_tokens_total: 0 };
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

  /** Records one finished request; returns what was recorded. */
  record(timings: EngineTimings | undefined, usage: Usage | undefined): LastRequest {
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
    this.totals.request_count_total++;
    this.totals.input_tokens_total += this.last.input_tokens ?? 0;
    this.totals.output_tokens_total += output ?? 0;
    this.totals.prompt_tokens_total += promptTotal ?? 0;
    this.totals.cache_tokens_total += cache ?? 0;
    return this.last;
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
