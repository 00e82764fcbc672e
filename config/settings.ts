// The whole of config.json as Lemonade defines it (config/defaults.json): every key, nested ones
// as `section.key`, checked against its default's JSON type; the effective settings (defaults,
// then the file, then what this server runs with); and changes from POST /internal/set, merged
// into the file and saved atomically.
import { join } from "node:path";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import defaultsFile from "./defaults.json" with { type: "json" };
import type { Json } from "../lib/json.ts";

/** The running server's settings these views read (config/config.ts's Config is one). */
export interface LiveSettings {
  cacheDir: string;
  host: string;
  port: number;
  logLevel: string;
  maxLoadedModels: number;
  ctxSize: number;
  extraModelsDir: string | null;
  offline: boolean;
}

const { _source, ...DEFAULTS } = defaultsFile as Json;

/** Settings Lemonade reads with a default of its own, though its defaults file leaves them out
 * (the multi-model and telemetry guides), as flat keys: listed by GET /internal/config only once set. */
const UNLISTED: Json = { auto_evict: false, auto_evict_threshold_pct: 0.9, "telemetry.max_attribute_length": 4096 };

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Objects flattened to `a.b.c` keys; arrays and scalars are values. */
export function flatten(value: Json, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const key = prefix + k;
    // A default that is itself a free-form object (headers maps) is one value, not a section.
    if (isObject(v) && isObject(defaultAt(key)) && !isLeafObject(key)) Object.assign(out, flatten(v, `${key}.`));
    else out[key] = v;
  }
  return out;
}

function defaultAt(key: string): unknown {
  if (key in UNLISTED) return UNLISTED[key];
  let node: unknown = DEFAULTS;
  for (const part of key.split(".")) node = isObject(node) ? node[part] : undefined;
  return node;
}

/** Keys whose default is an object of user-defined entries (`telemetry.otlp.headers`, ...). */
function isLeafObject(key: string): boolean {
  const d = defaultAt(key);
  return isObject(d) && Object.keys(d).length === 0;
}

/** The telemetry settings' own rules (Lemonade's runtime configuration checks), or null. */
function telemetryProblem(key: string, value: unknown): string | null {
  const n = value as number;
  const whole = (min: number) => (Number.isInteger(n) && n >= min ? null : `'${key}' must be a whole number from ${min}`);
  switch (key) {
    case "telemetry.max_queue_capacity":
    case "telemetry.max_attribute_length":
    case "telemetry.otlp.send_batch_size":
      return whole(1);
    case "telemetry.otlp.max_retries":
      return whole(0);
    case "telemetry.otlp.retry_backoff_base_s":
      return n >= 0 ? null : `'${key}' must be >= 0`;
    case "telemetry.otlp.batch_timeout_s":
      return n > 0 ? null : `'${key}' must be positive`;
    case "telemetry.otlp.protocol":
      return value === "http/protobuf" || value === "http/json" ? null : "'telemetry.otlp.protocol' must be either 'http/protobuf', or 'http/json'";
    case "telemetry.otlp.semantics":
      return (value as unknown[]).every((s) => s === "openinference" || s === "otel_genai") ? null : "'telemetry.otlp.semantics' items must be 'openinference' or 'otel_genai'";
    case "telemetry.otlp.headers":
      return Object.values(value as Json).every((v) => typeof v === "string") ? null : "'telemetry.otlp.headers' values must be strings";
  }
  return null;
}

/** Session header lists, which Lemonade also takes as one header name. */
const HEADER_LISTS = new Set(["telemetry.session.headers.id", "telemetry.session.headers.client"]);

const typeOf = (v: unknown) => (Array.isArray(v) ? "array" : v === null ? "null" : typeof v);

/** What a setting means here and the values it takes beyond its default's type: a range, one
 * value outside it (`-1` for "automatic"), or a fixed list. Keys without an entry are kept as given. */
interface SettingRule {
  doc: string;
  minimum?: number;
  maximum?: number;
  /** A value allowed outside the range, such as `-1`. */
  special?: number;
  integer?: boolean;
  enum?: string[];
}

const LOG_LEVELS = ["trace", "debug", "info", "warning", "error", "critical", "fatal", "none"];

const RULES: Record<string, SettingRule> = {
  host: { doc: "The address the server listens on; changing it makes the server listen anew." },
  port: { doc: "The port the server listens on; changing it makes the server listen anew.", minimum: 0, maximum: 65535, integer: true },
  log_level: { doc: "How much the server logs.", enum: LOG_LEVELS },
  max_loaded_models: { doc: "Models resident at once per type; -1 is unlimited. Loading one more evicts the one idle longest.", minimum: 1, special: -1, integer: true },
  ctx_size: { doc: "The default context size of a load; -1 sizes it automatically from the model and memory.", minimum: 1, maximum: 2 ** 31 - 1, special: -1, integer: true },
  offline: { doc: "Never reach the internet: no downloads, no update checks; only what is on disk is served." },
  extra_models_dir: { doc: "A folder of extra GGUF models, listed by file name (extra.<file name> where a registered model holds that name); rescanned when changed. Empty for none." },
  global_timeout: { doc: "Seconds a cloud provider's request may take.", minimum: 1, integer: true },
  auto_evict: {
    doc: "Dynamic VRAM management, for models that set no auto_evict of their own: an idle model is downsized after its downsize_idle_timeout and unloaded after its evict_idle_timeout; on, GPU memory is also watched against auto_evict_threshold_pct.",
  },
  auto_evict_threshold_pct: { doc: "With auto_evict on: the share of GPU memory in use (the fullest GPU's, 0 to 1) at which the most disposable idle model is unloaded.", minimum: 0, maximum: 1 },
  disable_model_filtering: { doc: "List every catalog model, also those this machine cannot run." },
  no_fetch_executables: { doc: "Never download or build engines: only those installed are used." },
  "llamacpp.backend": { doc: "The llama.cpp backend a load uses unless the model names one: auto, cpu, vulkan, rocm, cuda, metal or system." },
  "llamacpp.args": { doc: "Extra llama-server arguments for every load (allow-listed flags only)." },
  "llamacpp.rpc_workers": { doc: "RPC workers (`lemonade worker` on other machines) a model with the `rpc` option is split across, as `host:port`; read at start-up." },
  "llamacpp.rpc_secret": { doc: "The secret the RPC workers share (LEMONADE_RPC_SECRET wins); never shown, read at start-up." },
  "whispercpp.backend": { doc: "The whisper.cpp backend: auto, cpu or system." },
  "whispercpp.args": { doc: "Extra whisper-server arguments for every load." },
  "sdcpp.backend": { doc: "The stable-diffusion.cpp backend." },
  "sdcpp.args": { doc: "Extra sd-server arguments for every load." },
  "sdcpp.steps": { doc: "Default inference steps of an image.", minimum: 1, integer: true },
  "sdcpp.cfg_scale": { doc: "Default classifier-free guidance scale.", minimum: 0 },
  "sdcpp.width": { doc: "Default image width in pixels.", minimum: 64, integer: true },
  "sdcpp.height": { doc: "Default image height in pixels.", minimum: 64, integer: true },
};

const rangeText = (key: string, r: SettingRule) =>
  `'${key}' must be ${r.special !== undefined ? `${r.special} or ` : ""}a ${r.integer ? "whole " : ""}number${r.minimum !== undefined ? ` from ${r.minimum}` : ""}${r.maximum !== undefined ? ` to ${r.maximum}` : ""}`;

/** Why a `key = value` cannot be set, or null. Types follow the default; some keys have ranges or lists. */
export function settingProblem(key: string, value: unknown): string | null {
  const d = defaultAt(key);
  // Lemonade's wording, which its CLI recognises.
  if (d === undefined) return `Unknown config key: '${key}'`;
  if (isObject(d) && !isLeafObject(key)) return `'${key}' is a section; set its keys (${Object.keys(d).slice(0, 5).join(", ")}, ...)`;
  if (HEADER_LISTS.has(key)) {
    const ok = typeof value === "string" || (Array.isArray(value) && value.every((h) => typeof h === "string"));
    return ok ? null : `'${key}' must be a string or array of strings`;
  }
  if (typeOf(value) !== typeOf(d)) return `'${key}' must be ${typeOf(d) === "object" ? "an object" : `a ${typeOf(d)}`} like its default ${JSON.stringify(d)}, got ${JSON.stringify(value)?.slice(0, 80)}`;
  if (key.startsWith("telemetry.")) return telemetryProblem(key, value);
  const rule = RULES[key];
  if (!rule) return null;
  if (rule.enum && !rule.enum.includes(String(value))) return `'${key}' must be one of ${rule.enum.join(", ")}`;
  if (typeof value === "number" && value !== rule.special) {
    const out = (rule.integer && !Number.isInteger(value)) || (rule.minimum !== undefined && value < rule.minimum) || (rule.maximum !== undefined && value > rule.maximum);
    if (out) return rangeText(key, rule);
  }
  return null;
}

/** One setting as GET /internal/config/schema describes it. */
export interface SettingSchema {
  type: string;
  default: unknown;
  description?: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  special?: number;
  integer?: boolean;
}

/** Every setting (nested ones as `section.key`): its type and default, and what it means here. */
export function settingsSchema(): Record<string, SettingSchema> {
  const out: Record<string, SettingSchema> = {};
  for (const [key, d] of Object.entries(flatten(DEFAULTS))) {
    const { doc, ...rule } = RULES[key] ?? { doc: undefined };
    out[key] = { type: typeOf(d), default: d, ...(doc ? { description: doc } : {}), ...rule };
  }
  return out;
}


/** A set of changes that cannot be applied as given (two spellings of one setting disagree). */
export class SettingsConflict extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

/** Backend sections: the defaults' sections that configure an engine (args, backend, binaries). */
const isBackendSection = (name: string) => {
  const d = DEFAULTS[name];
  return isObject(d) && Object.keys(d).some((k) => k === "args" || k === "backend" || k.endsWith("_bin"));
};

/** The changes of a POST /internal/set body (or `lemonade config set`), flattened: `{"a.b": v}` or
 * `{"a": {"b": v}}`; the flat spellings backend flags use (`vllm_args`, `llamacpp_backend`) are
 * their section's keys; `no_broadcast` is `broadcast` negated; `rocm` is `rocm_channel`. */
export function changesOf(body: Json): Record<string, unknown> {
  const changes = flatten(body);
  const put = (from: string, key: string, value: unknown) => {
    delete changes[from];
    if (key in changes && JSON.stringify(changes[key]) !== JSON.stringify(value)) {
      throw new SettingsConflict(from, `Ambiguous config: both '${from}' and '${key}' were provided with different values`);
    }
    changes[key] = value;
  };
  if ("broadcast" in changes && "no_broadcast" in changes) throw new SettingsConflict("no_broadcast", "Cannot specify both 'broadcast' and 'no_broadcast'");
  if ("no_broadcast" in changes) {
    const v = changes.no_broadcast;
    if (typeof v !== "boolean") throw new SettingsConflict("no_broadcast", "'no_broadcast' must be a boolean");
    put("no_broadcast", "broadcast", !v);
  }
  if ("rocm" in changes) put("rocm", "rocm_channel", changes.rocm);
  for (const key of Object.keys(changes)) {
    const cut = key.indexOf("_");
    if (key.includes(".") || cut < 0 || !isBackendSection(key.slice(0, cut))) continue;
    put(key, `${key.slice(0, cut)}.${key.slice(cut + 1)}`, changes[key]);
  }
  return changes;
}

/** The first problem of a config.json's Lemonade settings (their types and ranges), or null.
 * Keys Lemonade does not define are left alone. */
export function fileProblem(file: Json): string | null {
  for (const [key, value] of Object.entries(flatten(file))) {
    if (defaultAt(key) === undefined) continue;
    const problem = settingProblem(key, value);
    if (problem) return problem;
  }
  return null;
}

/** Sets `a.b.c` in a nested object. */
function setPath(target: Json, key: string, value: unknown): void {
  const parts = key.split(".");
  let node = target;
  for (const part of parts.slice(0, -1)) {
    if (!isObject(node[part])) node[part] = {};
    node = node[part] as Json;
  }
  node[parts.at(-1)!] = value;
}

function merge(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = isObject(v) && isObject(out[k]) ? merge(out[k] as Json, v) : v;
  return out;
}

const configPath = (config: Pick<LiveSettings, "cacheDir">) => join(config.cacheDir, "config.json");

/** Every setting as this server has it: the defaults, the file, and what it runs with now. */
export function effectiveSettings(config: LiveSettings): Json {
  const file = readJsonFile<Json>(configPath(config), {});
  const live: Json = {
    host: config.host,
    port: config.port,
    log_level: config.logLevel.toLowerCase(),
    max_loaded_models: config.maxLoadedModels,
    ctx_size: config.ctxSize,
    extra_models_dir: config.extraModelsDir ?? "",
    offline: config.offline,
  };
  const out = merge(merge(DEFAULTS, isObject(file) ? file : {}), live);
  // The workers' secret is shown only as set or not.
  const llamacpp = out.llamacpp as Json | undefined;
  if (llamacpp?.rpc_secret) llamacpp.rpc_secret = "(set)";
  return out;
}

/** Writes changes into config.json (merged, atomically); returns the file as saved. */
export function saveSettings(config: Pick<LiveSettings, "cacheDir">, changes: Record<string, unknown>): Json {
  const current = readJsonFile<Json>(configPath(config), {});
  const next: Json = isObject(current) ? structuredClone(current) : {};
  for (const [key, value] of Object.entries(changes)) setPath(next, key, value);
  writeJsonFileAtomic(configPath(config), next);
  return next;
}
