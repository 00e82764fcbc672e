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

/** Settings Lemonade takes that its defaults file does not list, with their defaults. */
const UNLISTED: Record<string, unknown> = { "telemetry.max_attribute_length": 4096 };

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

/** Why a `key = value` cannot be set, or null. Types follow the default; a few keys have ranges. */
export function settingProblem(key: string, value: unknown): string | null {
  const d = defaultAt(key);
  if (d === undefined) return `'${key}' is not a Lemonade setting`;
  if (isObject(d) && !isLeafObject(key)) return `'${key}' is a section; set its keys (${Object.keys(d).slice(0, 5).join(", ")}, ...)`;
  if (HEADER_LISTS.has(key)) {
    const ok = typeof value === "string" || (Array.isArray(value) && value.every((h) => typeof h === "string"));
    return ok ? null : `'${key}' must be a string or array of strings`;
  }
  if (typeOf(value) !== typeOf(d)) return `'${key}' must be ${typeOf(d) === "object" ? "an object" : `a ${typeOf(d)}`} like its default ${JSON.stringify(d)}, got ${JSON.stringify(value)?.slice(0, 80)}`;
  if (key.startsWith("telemetry.")) return telemetryProblem(key, value);
  const n = value as number;
  switch (key) {
    case "port":
      return Number.isInteger(n) && n >= 0 && n <= 65535 ? null : "'port' must be a whole number from 0 to 65535";
    case "max_loaded_models":
      return Number.isInteger(n) && (n === -1 || n >= 1) ? null : "'max_loaded_models' must be -1 (unlimited) or a whole number from 1";
    case "ctx_size":
      return Number.isInteger(n) && (n === -1 || (n >= 1 && n < 2 ** 31)) ? null : "'ctx_size' must be -1 (automatic) or a whole number from 1 to 2^31 - 1";
    case "log_level":
      return ["trace", "debug", "info", "warning", "error", "critical", "fatal", "none"].includes(String(value)) ? null : `'log_level' must be one of trace, debug, info, warning, error`;
  }
  return null;
}

/** The changes of a POST /internal/set body: `{"a.b": v}` or `{"a": {"b": v}}`, flattened. */
export function changesOf(body: Json): Record<string, unknown> {
  return flatten(body);
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
  return merge(merge(DEFAULTS, isObject(file) ? file : {}), live);
}

/** Writes changes into config.json (merged, atomically); returns the file as saved. */
export function saveSettings(config: Pick<LiveSettings, "cacheDir">, changes: Record<string, unknown>): Json {
  const current = readJsonFile<Json>(configPath(config), {});
  const next: Json = isObject(current) ? structuredClone(current) : {};
  for (const [key, value] of Object.entries(changes)) setPath(next, key, value);
  writeJsonFileAtomic(configPath(config), next);
  return next;
}
