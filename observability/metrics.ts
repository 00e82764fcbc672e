// Prometheus metrics (prom-client). prom-client's default Node collectors report NaN event-loop
// figures under Bun, and the docs say non-finite samples are omitted, so the process gauges are ours.
// The metric classes from prom-client's own modules: its index also loads the Pushgateway client,
// which pulls in node:http, https and zlib — about 11 MB of resident memory this server never uses.
import Counter from "prom-client/lib/counter.js";
import Gauge from "prom-client/lib/gauge.js";
import Histogram from "prom-client/lib/histogram.js";
import Registry from "prom-client/lib/registry.js";
import { RECIPE_SPECS } from "../spec/recipes.ts";

export interface LoadedModelInfo {
  model: string;
  checkpoint: string;
  recipe: string;
  type: string;
  device: string;
  /** The engine's base URL, for scraping its own /metrics. */
  url: string;
  /** Requests waiting in the server's queue for the engine's slots. */
  queued: number;
}

/** A cloud pool's member now (runtime/pool.ts). */
export interface PoolMemberInfo {
  provider: string;
  /** Its base URL, which carries no credentials. */
  member: string;
  up: boolean;
  inFlight: number;
}

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<"method" | "route" | "status">;
  readonly httpDuration: Histogram<"method" | "route">;
  readonly modelRequests: Counter<"model" | "endpoint" | "status">;
  readonly modelRequestDuration: Histogram<"model" | "endpoint">;
  readonly generatedTokens: Counter<"model">;
  readonly promptTokens: Counter<"model">;
  private readonly cacheTokens: Counter<"model">;
  private readonly modelCacheTokensTotal: Counter<"model">;
  private readonly cacheTokensTotal: Counter;
  readonly cloudRequests: Counter<"provider" | "model" | "status">;
  readonly timeToFirstToken: Histogram<"model">;

  constructor(
    version: string,
    private readonly loaded: () => LoadedModelInfo[] = () => [],
    /** `max_loaded_models` now (-1 unlimited). */
    maxLoaded: () => number = () => 1,
    /** collection.router's decisions so far, and those that changed a conversation's model. */
    routing: () => { decisions: number; switches: number } = () => ({ decisions: 0, switches: 0 }),
    pools: () => PoolMemberInfo[] = () => [],
  ) {
    const registers = [this.registry];
    new Gauge({ name: "lemonade_server_up", help: "Whether the Lemonade server is running.", registers }).set(1);
    new Gauge({
      name: "lemonade_server_info",
      help: "Lemonade server build information.",
      labelNames: ["version"],
      registers,
    }).set({ version }, 1);
    new Gauge({
      name: "lemonade_process_start_time_seconds",
      help: "Start time of the server process since the Unix epoch, in seconds.",
      registers,
    }).set(Math.round(Date.now() / 1000 - process.uptime()));
    new Gauge({
      name: "lemonade_process_resident_memory_bytes",
      help: "Resident memory of the server process, in bytes.",
      registers,
      collect() {
        this.set(process.memoryUsage().rss);
      },
    });
    new Gauge({
      name: "lemonade_process_cpu_seconds_total",
      help: "User and system CPU time spent by the server process, in seconds.",
      registers,
      collect() {
        const { user, system } = process.cpuUsage();
        this.set((user + system) / 1e6);
      },
    });
    this.httpRequests = new Counter({
      name: "lemonade_http_requests_total",
      help: "HTTP requests answered, by method, route pattern and status.",
      labelNames: ["method", "route", "status"],
      registers,
    });
    const loadedModels = this.loaded;
    // Labelled as Lemonade labels it (model_name, checkpoint, type, device, recipe), and by `model`
    // as this server's other per-model series are.
    const infoLabels = (m: LoadedModelInfo) => ({ model: m.model, model_name: m.model, checkpoint: m.checkpoint, type: m.type, device: m.device, recipe: m.recipe });
    // Lemonade exports both series for each loaded model, with the same labels and value.
    for (const [name, help] of [
      ["lemonade_model_info", "Metadata for each Lemonade model observed by this process."],
      ["lemonade_model_loaded", "Whether this model is currently loaded in Lemonade."],
    ] as const) {
      new Gauge({
        name,
        help,
        labelNames: ["model", "model_name", "checkpoint", "type", "device", "recipe"],
        registers,
        collect() {
          this.reset();
          for (const m of loadedModels()) this.set(infoLabels(m), 1);
        },
      });
    }
    new Counter({
      name: "lemonade_routing_decisions_total",
      help: "Cumulative collection.router routing decisions.",
      registers,
      collect() {
        this.reset();
        this.inc(routing().decisions);
      },
    });
    new Counter({
      name: "lemonade_routing_switches_total",
      help: "Cumulative routing decisions that changed a conversation's routed model.",
      registers,
      collect() {
        this.reset();
        this.inc(routing().switches);
      },
    });
    new Gauge({
      name: "lemonade_queued_requests",
      help: "Requests waiting for a loaded model's engine slots, by model.",
      labelNames: ["model"],
      registers,
      collect() {
        this.reset();
        for (const m of loadedModels()) this.set({ model: m.model }, m.queued);
      },
    });
    new Gauge({
      name: "lemonade_pool_member_up",
      help: "Whether a cloud pool's member takes requests (1) or is down until its probe answers (0), by provider and member base URL.",
      labelNames: ["provider", "member"],
      registers,
      collect() {
        this.reset();
        for (const m of pools()) this.set({ provider: m.provider, member: m.member }, m.up ? 1 : 0);
      },
    });
    new Gauge({
      name: "lemonade_pool_member_in_flight",
      help: "Requests a cloud pool's member is serving now, by provider and member base URL.",
      labelNames: ["provider", "member"],
      registers,
      collect() {
        this.reset();
        for (const m of pools()) this.set({ provider: m.provider, member: m.member }, m.inFlight);
      },
    });
    new Gauge({
      name: "lemonade_loaded_models",
      help: "Models loaded now (Lemonade's name for it).",
      registers,
      collect() {
        this.set(loadedModels().length);
      },
    });
    new Gauge({
      name: "lemonade_max_loaded_models",
      help: "Models of one type that may be loaded at once (max_loaded_models; -1 is unlimited).",
      registers,
      collect() {
        this.set(maxLoaded());
      },
    });
    new Gauge({
      name: "lemonade_models_loaded",
      help: "Models loaded now.",
      registers,
      collect() {
        this.set(loadedModels().length);
      },
    });
    this.modelRequests = new Counter({
      name: "lemonade_model_requests_total",
      help: "Requests forwarded to a model's engine, by model, endpoint and status.",
      labelNames: ["model", "endpoint", "status"],
      registers,
    });
    this.modelRequestDuration = new Histogram({
      name: "lemonade_model_request_duration_seconds",
      help: "Time from forwarding a request to the end of the engine's answer.",
      labelNames: ["model", "endpoint"],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers,
    });
    this.generatedTokens = new Counter({
      name: "lemonade_generated_tokens_total",
      help: "Tokens generated, by model.",
      labelNames: ["model"],
      registers,
    });
    this.promptTokens = new Counter({
      name: "lemonade_prompt_tokens_total",
      help: "Prompt tokens processed or served from cache, by model.",
      labelNames: ["model"],
      registers,
    });
    this.cacheTokens = new Counter({
      name: "lemonade_model_cache_tokens",
      help: "Prompt tokens the engine reused from its cache instead of processing them, by model.",
      labelNames: ["model"],
      registers,
    });
    this.modelCacheTokensTotal = new Counter({
      name: "lemonade_model_cache_tokens_total",
      help: "Cumulative prompt tokens served from the backend prefix cache for a model.",
      labelNames: ["model"],
      registers,
    });
    this.cacheTokensTotal = new Counter({ name: "lemonade_cache_tokens_total", help: "Cumulative prompt tokens served from backend prefix caches.", registers });
    this.cloudRequests = new Counter({
      name: "lemonade_cloud_requests_total",
      help: "Requests forwarded to cloud providers, by provider, model and status.",
      labelNames: ["provider", "model", "status"],
      registers,
    });
    this.timeToFirstToken = new Histogram({
      name: "lemonade_time_to_first_token_seconds",
      help: "Prompt processing time before the first generated token, by model.",
      labelNames: ["model"],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
      registers,
    });
    this.httpDuration = new Histogram({
      name: "lemonade_http_request_duration_seconds",
      help: "Time from request to response headers, by method and route pattern.",
      labelNames: ["method", "route"],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers,
    });
  }

  /** Prompt tokens a model's engine served from its prefix cache: per model and in all. */
  recordCacheTokens(model: string, tokens: number): void {
    this.cacheTokens.inc({ model }, tokens);
    this.modelCacheTokensTotal.inc({ model }, tokens);
    this.cacheTokensTotal.inc(tokens);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The server's metrics, then the own of each engine whose recipe declares a scrape
   * (spec/recipes.ts `metrics`), renamed `lemonade_<prefix>_*` and labelled with the model. A
   * scrape that fails or is slow is left out, never fatal. */
  async render(): Promise<string> {
    const own = await this.registry.metrics();
    const scrapes = await Promise.all(
      this.loaded()
        .flatMap((m) => {
          const scrape = RECIPE_SPECS[m.recipe]?.metrics;
          return scrape ? [scrapeEngine(m, scrape)] : [];
        }),
    );
    // One HELP/TYPE per family, with every engine's samples grouped under it.
    const families = new Map<string, { meta: string[]; samples: string[] }>();
    for (const scrape of scrapes) {
      for (const [name, fam] of scrape) {
        const into = families.get(name) ?? { meta: fam.meta, samples: [] };
        into.samples.push(...fam.samples);
        families.set(name, into);
      }
    }
    const engines = [...families.values()].map((f) => [...f.meta, ...f.samples].join("\n")).join("\n");
    return engines ? `${own}\n${engines}\n` : own;
  }
}

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

type Families = Map<string, { meta: string[]; samples: string[] }>;

async function scrapeEngine(m: LoadedModelInfo, scrape: { path: string; prefix: string }): Promise<Families> {
  const families: Families = new Map();
  let text: string;
  try {
    const res = await fetch(`${m.url}${scrape.path}`, { signal: AbortSignal.timeout(500) });
    if (!res.ok) return families;
    text = await res.text();
  } catch {
    return families;
  }
  const labels = `model="${escapeLabel(m.model)}",recipe="${escapeLabel(m.recipe)}"`;
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { meta: [], samples: [] }));
    return f;
  };
  const prefix = `${scrape.prefix}:`;
  for (const line of text.split("\n")) {
    const renamed = line.replaceAll(prefix, `lemonade_${scrape.prefix}_`);
    const meta = /^# (HELP|TYPE) (\S+)/.exec(renamed);
    if (meta) {
      family(meta[2]!).meta.push(renamed);
      continue;
    }
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(renamed);
    // Non-finite samples are omitted, as the docs ask.
    if (!match || !Number.isFinite(Number(match[3]))) continue;
    const existing = match[2] ? match[2].slice(1, -1) + "," : "";
    family(match[1]!).samples.push(`${match[1]}{${existing}${labels}} ${match[3]}`);
  }
  return families;
}
