// Prometheus metrics (prom-client). prom-client's default Node collectors report NaN event-loop
// figures under Bun, and the docs say non-finite samples are omitted, so the process gauges are ours.
// The metric classes from prom-client's own modules: its index also loads the Pushgateway client,
// which pulls in node:http, https and zlib — about 11 MB of resident memory this server never uses.
import Counter from "prom-client/lib/counter.js";
import Gauge from "prom-client/lib/gauge.js";
import Histogram from "prom-client/lib/histogram.js";
import Registry from "prom-client/lib/registry.js";
import { MODEL_TYPES, RECIPE_SPECS } from "../spec/recipes.ts";
import { GenerationStats, identityKey, type ModelIdentity } from "./stats.ts";

export interface LoadedModelInfo {
  identity: ModelIdentity;
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

/** The host's use now, as /v1/system-stats reports it; null where it cannot be read. */
export interface HostUse {
  cpu_percent: number | null;
  memory_gb: number | null;
  gpu_percent: number | null;
  vram_gb: number | null;
  npu_percent: number | null;
}

/** Where the scrape-time series read the server's state. */
export interface MetricSources {
  loaded: () => LoadedModelInfo[];
  /** `max_loaded_models` now (-1 unlimited). */
  maxLoaded: () => number;
  /** The generation telemetry (observability/stats.ts): in all, per model, and routing. */
  stats: GenerationStats;
  pools: () => PoolMemberInfo[];
  host: () => Promise<HostUse>;
  /** The id the API lists the model with catalog id `id` by: what every model label carries. */
  publicId: (id: string) => string;
}

const noHost: HostUse = { cpu_percent: null, memory_gb: null, gpu_percent: null, vram_gb: null, npu_percent: null };

/** Lemonade's per-model label names, in the order its samples carry them. */
const MODEL_LABELS = ["checkpoint", "device", "model_name", "recipe", "type"] as const;
type ModelLabel = (typeof MODEL_LABELS)[number];
const modelLabels = (i: ModelIdentity, publicId: (id: string) => string): Record<ModelLabel, string> => ({
  checkpoint: i.checkpoint,
  device: i.device,
  model_name: publicId(i.model_name),
  recipe: i.recipe,
  type: i.type,
});

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<"method" | "route" | "status">;
  readonly httpDuration: Histogram<"method" | "route">;
  readonly engineRequests: Counter<"model" | "endpoint" | "status">;
  readonly modelRequestDuration: Histogram<"model" | "endpoint">;
  readonly generatedTokens: Counter<"model">;
  readonly cloudRequests: Counter<"provider" | "model" | "status">;
  readonly timeToFirstToken: Histogram<"model">;
  private readonly loaded: () => LoadedModelInfo[];
  private readonly host: () => Promise<HostUse>;
  /** A model's label value, read when the sample is taken: Lemonade names a model by the id its
   * API lists then, so a shadowed built-in and the model shadowing it stay apart. */
  readonly modelName: (id: string) => string;

  constructor(version: string, sources: Partial<MetricSources> = {}) {
    const { maxLoaded = () => 1, stats = new GenerationStats(), pools = () => [], host = async () => noHost } = sources;
    const loadedModels = (this.loaded = sources.loaded ?? (() => []));
    this.host = host;
    const modelName = (this.modelName = sources.publicId ?? ((id) => id));
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
      help: "HTTP requests answered, by method, route pattern (a versioned route's under /v1, whichever prefix was asked) and status.",
      labelNames: ["method", "route", "status"],
      registers,
    });
    new Gauge({
      name: "lemonade_loaded_models",
      help: "Models loaded now (Lemonade's name for it).",
      registers,
      collect() {
        this.set(loadedModels().length);
      },
    });
    // Lemonade's per-model families: every model with telemetry, and every loaded one, labelled by
    // its whole identity. Each is set from the telemetry at scrape time, as Lemonade renders them.
    const perModel = () => {
      const identities = loadedModels().map((m) => m.identity);
      const loaded = new Set(identities.map(identityKey));
      return stats.models(identities).map((t) => ({ ...t, labels: modelLabels(t.identity, modelName), loaded: loaded.has(identityKey(t.identity)) }));
    };
    type Row = ReturnType<typeof perModel>[number];
    const modelFamily = (name: string, help: string, kind: "gauge" | "counter", value: (r: Row) => number | null) => {
      const collect = function (this: Gauge<ModelLabel> | Counter<ModelLabel>) {
        this.reset();
        for (const row of perModel()) {
          const v = value(row);
          // Unknown figures are left out, as the docs ask of unavailable values.
          if (v === null || !Number.isFinite(v)) continue;
          if (this instanceof Gauge) this.set(row.labels, v);
          else this.inc(row.labels, v);
        }
      };
      if (kind === "gauge") new Gauge({ name, help, labelNames: MODEL_LABELS, registers, collect });
      else new Counter({ name, help, labelNames: MODEL_LABELS, registers, collect });
    };
    modelFamily("lemonade_model_info", "Metadata for each Lemonade model observed by this process.", "gauge", () => 1);
    modelFamily("lemonade_model_loaded", "Whether this model is currently loaded in Lemonade.", "gauge", (r) => (r.loaded ? 1 : 0));
    modelFamily("lemonade_model_input_tokens", "Input tokens of the model's latest request.", "gauge", (r) => r.last.input_tokens);
    modelFamily("lemonade_model_output_tokens", "Output tokens of the model's latest request.", "gauge", (r) => r.last.output_tokens);
    modelFamily("lemonade_model_prompt_tokens", "Prompt tokens (cached ones included) of the model's latest request.", "gauge", (r) => r.last.prompt_tokens);
    modelFamily("lemonade_model_cache_tokens", "Prompt tokens the engine's prefix cache served on the model's latest request.", "gauge", (r) => r.last.cache_tokens);
    modelFamily("lemonade_model_time_to_first_token_seconds", "Time to first token of the model's latest request, in seconds.", "gauge", (r) => r.last.time_to_first_token);
    modelFamily("lemonade_model_tokens_per_second", "Generation speed of the model's latest request.", "gauge", (r) => r.last.tokens_per_second);
    modelFamily("lemonade_model_requests_total", "Generation requests recorded for a model.", "counter", (r) => r.totals.request_count_total);
    modelFamily("lemonade_model_input_tokens_total", "Input tokens recorded for a model.", "counter", (r) => r.totals.input_tokens_total);
    modelFamily("lemonade_model_output_tokens_total", "Output tokens recorded for a model.", "counter", (r) => r.totals.output_tokens_total);
    modelFamily("lemonade_model_prompt_tokens_total", "Prompt tokens recorded for a model.", "counter", (r) => r.totals.prompt_tokens_total);
    modelFamily("lemonade_model_cache_tokens_total", "Prompt tokens served from the engine's prefix cache for a model.", "counter", (r) => r.totals.cache_tokens_total);
    new Gauge({
      name: "lemonade_max_loaded_models",
      help: "Models of one type that may be loaded at once (max_loaded_models; -1 is unlimited), by type.",
      labelNames: ["type"],
      registers,
      collect() {
        for (const type of MODEL_TYPES) this.set({ type }, maxLoaded());
      },
    });
    const total = (name: string, help: string, value: () => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(value());
        },
      });
    total("lemonade_requests_total", "Generation requests recorded in all.", () => stats.totals.request_count_total);
    total("lemonade_input_tokens_total", "Input tokens recorded in all.", () => stats.totals.input_tokens_total);
    total("lemonade_output_tokens_total", "Output tokens recorded in all.", () => stats.totals.output_tokens_total);
    total("lemonade_prompt_tokens_total", "Prompt tokens recorded in all.", () => stats.totals.prompt_tokens_total);
    total("lemonade_cache_tokens_total", "Prompt tokens served from engines' prefix caches in all.", () => stats.totals.cache_tokens_total);
    total("lemonade_routing_decisions_total", "Cumulative collection.router routing decisions.", () => stats.routing.routing_decisions_total);
    total("lemonade_routing_switches_total", "Cumulative routing decisions that changed a conversation's routed model.", () => stats.routing.routing_switches_total);
    new Gauge({
      name: "lemonade_queued_requests",
      help: "Requests waiting for a loaded model's engine slots, by model.",
      labelNames: ["model"],
      registers,
      collect() {
        this.reset();
        for (const m of loadedModels()) this.set({ model: modelName(m.identity.model_name) }, m.queued);
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
    this.engineRequests = new Counter({
      name: "lemonade_engine_requests_total",
      help: "Requests forwarded to a model's engine or cloud provider, by model, endpoint and status.",
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

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The server's metrics, then the own of each engine whose recipe declares a scrape
   * (spec/recipes.ts `metrics`), renamed `lemonade_<prefix>_*` and labelled with the model. A
   * scrape that fails or is slow is left out, never fatal. */
  async render(): Promise<string> {
    const [registered, host] = await Promise.all([this.registry.metrics(), this.host()]);
    const own = registered + hostText(host);
    const scrapes = await Promise.all(
      this.loaded()
        .flatMap((m) => {
          const scrape = RECIPE_SPECS[m.identity.recipe]?.metrics;
          return scrape ? [scrapeEngine(m, scrape, modelLabels(m.identity, this.modelName))] : [];
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

/** Lemonade's host gauges. Written here, not registered: prom-client always samples a gauge
 * without labels, and a figure the host cannot give must be left out. */
const HOST_GAUGES: [string, string, (h: HostUse) => number | null][] = [
  ["lemonade_cpu_usage_percent", "Host CPU use, in percent.", (h) => h.cpu_percent],
  ["lemonade_memory_used_gb", "Host memory in use, in GiB.", (h) => (h.memory_gb === null ? null : Math.round(h.memory_gb * 10) / 10)],
  ["lemonade_gpu_usage_percent", "GPU use, in percent.", (h) => h.gpu_percent],
  ["lemonade_vram_used_gb", "GPU memory in use, in GiB.", (h) => h.vram_gb],
  ["lemonade_npu_usage_percent", "NPU use, in percent.", (h) => h.npu_percent],
];

function hostText(h: HostUse): string {
  return HOST_GAUGES.map(([name, help, value]) => {
    const v = value(h);
    const sample = v !== null && Number.isFinite(v) ? `${name} ${v}\n` : "";
    return `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${sample}`;
  }).join("");
}

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

type Families = Map<string, { meta: string[]; samples: string[] }>;

async function scrapeEngine(m: LoadedModelInfo, scrape: { path: string; prefix: string }, ids: Record<ModelLabel, string>): Promise<Families> {
  const families: Families = new Map();
  let text: string;
  try {
    const res = await fetch(`${m.url}${scrape.path}`, { signal: AbortSignal.timeout(500) });
    if (!res.ok) return families;
    text = await res.text();
  } catch {
    return families;
  }
  const labels = MODEL_LABELS.map((k) => `${k}="${escapeLabel(ids[k])}"`).join(",");
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
