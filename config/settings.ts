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
 * (lemonade-docs-guide-configuration-multi-model.md): listed by GET /internal/config only once set. */
const UNLISTED: Json = { auto_evict: false, auto_evict_threshold_pct: 0.9 };

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
  return isObject(d) && (Object.keys(d).length === 0 || key.endsWith(".headers"));
}

const typeOf = (v: unknown) => (Array.isArray(v) ? "array" : v === null ? "null" : typeof v);

/** Why a `key = value` cannot be set, or null. Types follow the default; a few keys have ranges. */
export function settingProblem(key: string, value: unknown): string | null {
  const d = defaultAt(key);
  if (d === undefined) return `'${key}' is not a Lemonade setting`;
  if (isObject(d) && !isLeafObject(key)) return `'${key}' is a section; set its keys (${Object.keys(d).slice(0, 5).join(", ")}, ...)`;
  if (typeOf(value) !== typeOf(d)) return `'${key}' must be ${typeOf(d) === "object" ? "an object" : `a ${typeOf(d)}`} like its default ${JSON.stringify(d)}, got ${JSON.stringify(value)?.slice(0, 80)}`;
  const n = value as number;
  switch (key) {
    case "port":
      return Number.isInteger(n) && n >= 0 && n <= 65535 ? null : "'port' must be a whole number from 0 to 65535";
    case "max_loaded_models":
      return Number.isInteger(n) && (n === -1 || n >= 1) ? null : "'max_loaded_models' must be -1 (unlimited) or a whole number from 1";
    case "ctx_size":
      return Number.isInteger(n) && (n === -1 || (n >= 1 && n < 2 ** 31)) ? null : "'ctx_size' must be -1 (automatic) or a whole number from 1 to 2^31 - 1";
    case "auto_evict_threshold_pct":
      return n >= 0 && n <= 1 ? null : "'auto_evict_threshold_pct' must be between 0.0 and 1.0";
    case "log_level":
      return ["trace", "debug", "info", "warning", "error", "critical", "fatal", "none"].includes(String(value)) ? null : `'log_level' must be one of trace, debug, info, warning, error`;
  }
  return null;
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
