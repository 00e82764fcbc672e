// Server configuration. Precedence, highest first: command-line flags, LEMONADE_* environment
// variables, config.json in the cache directory, built-in defaults.
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { readJsonFile } from "../lib/json-file.ts";
import { parseHostSpec } from "../lib/host-spec.ts";
import { parseLogLevel, type Severity } from "../lib/log-level.ts";
import { CONFIG_SECTIONS, RECIPE_DEFAULT_KEYS } from "../spec/recipes.ts";
import { fileProblem } from "./settings.ts";

export interface Config {
  host: string;
  port: number;
  cacheDir: string;
  logLevel: Severity;
  /** Models of one type resident at once; -1 is unlimited. */
  maxLoadedModels: number;
  ctxSize: number;
  extraModelsDir: string | null;
  /** Hugging Face hub cache: where model files live. */
  hfCacheDir: string;
  apiKey: string | null;
  adminApiKey: string | null;
  /** Browser origins allowed besides loopback ones; `*` allows every origin. */
  allowedOrigins: string[];
  /** The largest request body accepted, in bytes (LEMONADE_MAX_BODY_MB); larger is a 413. */
  maxBodyBytes: number;
  /** Host names besides loopback ones a loopback-bound server answers to (LEMONADE_ALLOWED_HOSTS). */
  allowedHosts: string[];
  /** The only folder MCP tools may write files into. */
  mcpImageDir: string;
  /** The Hugging Face hub to download from (HF_ENDPOINT) and its token (HF_TOKEN). */
  hfEndpoint: string;
  hfToken: string | null;
  /** ModelScope (MODELSCOPE_ENDPOINT, else https://$MODELSCOPE_DOMAIN, else www.modelscope.cn) and
   * where its files go (MODELSCOPE_CACHE, else <cache>/modelscope/hub). */
  msEndpoint: string;
  msCacheDir: string;
  /** No network: downloads are refused. */
  offline: boolean;
  /** The npm registry engine sources come from. */
  npmRegistry: string | undefined;
  /** PATH, where `system` backends find their binaries. */
  searchPath: string;
  /** Silence (ms) after which a waiting request checks its engine's health
   * (LEMONADE_HANG_CHECK_MS; 0 turns the check off). */
  hangCheckMs: number;
  /** Silence (ms) in a stream after which a keep-alive is written (LEMONADE_PING_MS). */
  pingMs: number;
  /** Binaries config.json points backends at (`llamacpp.vulkan_bin`, `sdcpp.cpu_bin`, ...), by
   * section, then backend; `builtin` (the default) means none. */
  binaries: Record<string, Record<string, string>>;
  /** Server-wide recipe options from config.json's sections (`llamacpp.args` -> `llamacpp_args`,
   * `sdcpp.steps` -> `steps`, ...): the layer below each model's own. */
  recipeDefaults: Record<string, string | number | boolean>;
  /** config.json `disable_model_filtering`: models of recipes this machine cannot run are listed too. */
  disableModelFiltering: boolean;
  /** Requests that may wait for one engine's slots (LEMONADE_MAX_QUEUE, `max_queue`); more get 503. */
  maxQueue: number;
  /** config.json `global_timeout`: the most seconds a request to a cloud provider may take. */
  globalTimeoutS: number;
  /** Where prebuilt engines are downloaded from: LEMONADE_GITHUB_ENDPOINT, else https://github.com. */
  githubEndpoint: string;
  /** GitHub's releases API, for the sha256 digests of unpinned assets: LEMONADE_GITHUB_API_ENDPOINT,
   * else https://api.github.com beside github.com, else the LEMONADE_GITHUB_ENDPOINT itself. */
  githubApiEndpoint?: string;
  /** config.json `no_fetch_executables`: engines are neither downloaded nor built. */
  noFetchExecutables: boolean;
  /** Memory a load may use, in bytes (LEMONADE_MEMORY_LIMIT_GB; default: what the system has available). */
  memoryLimitBytes: number | null;
  /** RPC workers (`lemonade worker`) models may be split across: config.json `llamacpp.rpc_workers`
   * (LEMONADE_RPC_WORKERS, comma-separated), as `host:port`. */
  rpcWorkers: string[];
  /** The secret those workers share: LEMONADE_RPC_SECRET, else config.json `llamacpp.rpc_secret`. */
  rpcSecret: string | null;
  /** How long a worker has to complete its handshake, in ms (LEMONADE_RPC_TIMEOUT_MS). */
  rpcTimeoutMs: number;
  /** Auto-tune (auto-tune.md): archetype profiles and local overlays applied at load; on by default. */
  autoTune: boolean;
  /** Where tuning profiles are fetched from; null: the bundled set only. */
  autoTuneProfilesUrl: string | null;
  /** Cloud providers' keys from the environment (`LEMONADE_<PROVIDER>_API_KEY`), by variable name. */
  cloudKeys: Record<string, string>;
  /** The KV cache of an evicted engine's recent conversations, saved and restored on its next load
   * (runtime/kv-cache.ts): config.json `kv_cache_swap` (LEMONADE_KV_CACHE_SWAP; default on), its
   * disk budget `kv_cache_swap_mb` (default 4096) and age `kv_cache_swap_hours` (default 24). */
  kvCache: { enabled: boolean; budgetBytes: number; maxAgeMs: number };
  /** config.json `auto_evict_threshold_pct` (default 0.90): with the server-wide `auto_evict` on,
   * the share of GPU memory in use at which the most disposable idle model is evicted. */
  autoEvictThresholdPct: number;
}

/** The keys config.json may hold, as Lemonade spells them. */
interface ConfigFile {
  host?: string;
  port?: number;
  log_level?: string;
  max_loaded_models?: number;
  ctx_size?: number;
  extra_models_dir?: string;
  offline?: boolean;
  max_queue?: number;
  global_timeout?: number;
  no_fetch_executables?: boolean;
  disable_model_filtering?: boolean;
  auto_tune?: boolean;
  auto_tune_profiles_url?: string;
  kv_cache_swap?: boolean;
  kv_cache_swap_mb?: number;
  kv_cache_swap_hours?: number;
  auto_evict_threshold_pct?: number;
  /** The recipes' sections (spec/recipes.ts `config`). */
  [section: string]: unknown;
}

function recipeDefaultsFrom(file: ConfigFile): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [key, option] of Object.entries(RECIPE_DEFAULT_KEYS)) {
    const [section, name] = key.split(".") as [string, string];
    const value = (file[section] as Record<string, unknown> | undefined)?.[name];
    // Empty args add nothing; the others are values as Lemonade's defaults spell them.
    if ((typeof value === "string" && value !== "") || typeof value === "number" || typeof value === "boolean") out[option] = value;
  }
  // The server-wide auto_evict answers for every model whose own is unset.
  if (typeof file.auto_evict === "boolean") out.auto_evict = file.auto_evict;
  return out;
}

function binariesFrom(path: string, file: ConfigFile): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const section of CONFIG_SECTIONS) {
    const value = file[section];
    if (value === undefined) continue;
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${path}: "${section}" must be an object`);
    for (const [key, bin] of Object.entries(value)) {
      if (!key.endsWith("_bin")) continue;
      if (typeof bin !== "string") throw new Error(`${path}: "${section}.${key}" must be a string, got ${JSON.stringify(bin)?.slice(0, 100)}`);
      if (bin && bin !== "builtin") (out[section] ??= {})[key.slice(0, -"_bin".length)] = resolve(bin);
    }
  }
  return out;
}

/** The JSON type each key must have; a wrong one stops start-up with a message naming file and key. */
const FILE_TYPES: Partial<Record<keyof ConfigFile, "string" | "integer" | "boolean">> = {
  host: "string",
  port: "integer",
  log_level: "string",
  max_loaded_models: "integer",
  ctx_size: "integer",
  extra_models_dir: "string",
  offline: "boolean",
  auto_tune: "boolean",
  auto_tune_profiles_url: "string",
  max_queue: "integer",
  kv_cache_swap: "boolean",
  kv_cache_swap_mb: "integer",
  kv_cache_swap_hours: "integer",
};

function checkFileTypes(path: string, file: Record<string, unknown>): void {
  for (const [key, type] of Object.entries(FILE_TYPES)) {
    const value = file[key];
    if (value === undefined) continue;
    const ok = type === "integer" ? Number.isInteger(value) : typeof value === type;
    if (!ok) throw new Error(`${path}: "${key}" must be ${type === "integer" ? "an integer" : `a ${type}`}, got ${JSON.stringify(value)?.slice(0, 100)}`);
  }
}

export type Overrides = Partial<Pick<Config, "host" | "port" | "cacheDir" | "logLevel">>;

type Env = Record<string, string | undefined>;

export function defaultCacheDir(env: Env = process.env): string {
  return resolve(env.LEMONADE_CACHE_DIR || join(homedir(), ".cache", "lemonade"));
}

function hfCacheDir(env: Env): string {
  if (env.HF_HUB_CACHE) return resolve(env.HF_HUB_CACHE);
  if (env.HF_HOME) return resolve(env.HF_HOME, "hub");
  return join(homedir(), ".cache", "huggingface", "hub");
}

function list(raw: string | undefined): string[] {
  return (raw ?? "")
    .split(",")
    .map((o) => o.trim())
    .filter(Boolean);
}

function ctxSetting(raw: string | number | undefined): number {
  const n = intSetting("ctx_size", raw, 4096, -1, 2 ** 31 - 1);
  if (n === 0) throw new Error("ctx_size must be -1 (automatic) or a whole number from 1");
  return n;
}

function intSetting(name: string, raw: string | number | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === "") return fallback;
  const n = typeof raw === "number" ? raw : Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/** A share from 0 to 1 (`auto_evict_threshold_pct`), else the default. */
function shareSetting(name: string, raw: unknown, fallback: number): number {
  if (raw === undefined) return fallback;
  if (typeof raw !== "number" || !(raw >= 0 && raw <= 1)) throw new Error(`${name} must be a number from 0 to 1, got ${JSON.stringify(raw)}`);
  return raw;
}

/** LEMONADE_MEMORY_LIMIT_GB: a positive number of GiB, or unset (the system's available memory). */
const llamacppSection = (file: ConfigFile) => (file.llamacpp ?? {}) as Record<string, unknown>;

function memoryLimit(raw: string | undefined): number | null {
  if (!raw) return null;
  const gb = Number(raw);
  if (!(gb > 0)) throw new Error(`LEMONADE_MEMORY_LIMIT_GB must be a positive number of GB, got ${JSON.stringify(raw)}`);
  return gb * 1024 ** 3;
}

export function loadConfig(overrides: Overrides = {}, env: Env = process.env): Config {
  const cacheDir = overrides.cacheDir ?? defaultCacheDir(env);
  const file = readJsonFile<ConfigFile>(join(cacheDir, "config.json"), {});
  if (typeof file !== "object" || file === null || Array.isArray(file)) {
    throw new Error(`${join(cacheDir, "config.json")} must hold a JSON object`);
  }
  checkFileTypes(join(cacheDir, "config.json"), file as Record<string, unknown>);
  const problem = fileProblem(file as Record<string, unknown>);
  if (problem) throw new Error(`${join(cacheDir, "config.json")}: ${problem}`);
  const maxLoaded = intSetting(
    "max_loaded_models",
    env.LEMONADE_MAX_LOADED_MODELS ?? file.max_loaded_models,
    1,
    -1,
    1024,
  );
  if (maxLoaded === 0) throw new Error("max_loaded_models must be -1 (unlimited) or at least 1");
  const extra = env.LEMONADE_EXTRA_MODELS_DIR ?? file.extra_models_dir;
  // `host`, `host:port` or `http://host:port`, as Lemonade's CLI and server read it.
  const envHost = env.LEMONADE_HOST ? parseHostSpec(env.LEMONADE_HOST) : undefined;
  return {
    host: overrides.host ?? envHost?.host ?? file.host ?? "127.0.0.1",
    port: overrides.port ?? intSetting("port", env.LEMONADE_PORT ?? envHost?.port ?? file.port, 13305, 0, 65535),
    cacheDir,
    logLevel: overrides.logLevel ?? parseLogLevel(env.LEMONADE_LOG_LEVEL ?? file.log_level),
    maxLoadedModels: maxLoaded,
    // -1 is Lemonade's default: each model's own window (capped as a load caps it).
    ctxSize: ctxSetting(env.LEMONADE_CTX_SIZE ?? file.ctx_size),
    extraModelsDir: extra ? resolve(extra) : null,
    hfCacheDir: hfCacheDir(env),
    apiKey: env.LEMONADE_API_KEY || null,
    adminApiKey: env.LEMONADE_ADMIN_API_KEY || null,
    hfEndpoint: (env.HF_ENDPOINT || "https://huggingface.co").replace(/\/+$/, ""),
    hfToken: env.HF_TOKEN || null,
    msEndpoint: (env.MODELSCOPE_ENDPOINT || `https://${env.MODELSCOPE_DOMAIN || "www.modelscope.cn"}`).replace(/\/+$/, ""),
    msCacheDir: resolve(env.MODELSCOPE_CACHE || join(cacheDir, "modelscope", "hub")),
    npmRegistry: env.NPM_CONFIG_REGISTRY || env.npm_config_registry || undefined,
    searchPath: env.PATH ?? "",
    binaries: binariesFrom(join(cacheDir, "config.json"), file),
    disableModelFiltering: file.disable_model_filtering === true,
    recipeDefaults: recipeDefaultsFrom(file),
    maxQueue: intSetting("max_queue", env.LEMONADE_MAX_QUEUE ?? file.max_queue, 512, 0, 1_000_000),
    globalTimeoutS: intSetting("global_timeout", file.global_timeout, 600, 1, 86_400),
    githubEndpoint: (env.LEMONADE_GITHUB_ENDPOINT || "https://github.com").replace(/\/+$/, ""),
    ...(env.LEMONADE_GITHUB_API_ENDPOINT ? { githubApiEndpoint: env.LEMONADE_GITHUB_API_ENDPOINT.replace(/\/+$/, "") } : {}),
    noFetchExecutables: file.no_fetch_executables === true,
    memoryLimitBytes: memoryLimit(env.LEMONADE_MEMORY_LIMIT_GB),
    rpcWorkers: env.LEMONADE_RPC_WORKERS !== undefined ? list(env.LEMONADE_RPC_WORKERS) : (llamacppSection(file).rpc_workers as string[] | undefined) ?? [],
    rpcSecret: env.LEMONADE_RPC_SECRET || (llamacppSection(file).rpc_secret as string | undefined) || null,
    rpcTimeoutMs: intSetting("LEMONADE_RPC_TIMEOUT_MS", env.LEMONADE_RPC_TIMEOUT_MS, 3000, 100, 600_000),
    autoTune: env.LEMONADE_AUTO_TUNE ? !/^(0|false|no|off)$/i.test(env.LEMONADE_AUTO_TUNE) : file.auto_tune !== false,
    autoTuneProfilesUrl: (env.LEMONADE_AUTO_TUNE_PROFILES_URL ?? file.auto_tune_profiles_url) || null,
    cloudKeys: Object.fromEntries(
      Object.entries(env).filter((e): e is [string, string] => /^LEMONADE_[A-Z0-9_]+_API_KEY$/.test(e[0]) && e[0] !== "LEMONADE_ADMIN_API_KEY" && !!e[1]),
    ),
    hangCheckMs: intSetting("LEMONADE_HANG_CHECK_MS", env.LEMONADE_HANG_CHECK_MS, 10_000, 0, 3_600_000),
    pingMs: intSetting("LEMONADE_PING_MS", env.LEMONADE_PING_MS, 1000, 50, 600_000),
    offline: env.LEMONADE_OFFLINE ? /^(1|true|yes)$/i.test(env.LEMONADE_OFFLINE) : file.offline === true,
    mcpImageDir: resolve(env.LEMONADE_MCP_IMAGE_DIR || join(cacheDir, "mcp-images")),
    maxBodyBytes: intSetting("LEMONADE_MAX_BODY_MB", env.LEMONADE_MAX_BODY_MB, 64, 1, 4096) * 1024 * 1024,
    allowedOrigins: list(env.LEMONADE_ALLOWED_ORIGINS),
    allowedHosts: list(env.LEMONADE_ALLOWED_HOSTS).map((h) => h.toLowerCase()),
    kvCache: {
      enabled: env.LEMONADE_KV_CACHE_SWAP ? /^(1|true|yes|on)$/i.test(env.LEMONADE_KV_CACHE_SWAP) : file.kv_cache_swap !== false,
      budgetBytes: intSetting("kv_cache_swap_mb", file.kv_cache_swap_mb, 4096, 0, 1_048_576) * 1024 * 1024,
      maxAgeMs: intSetting("kv_cache_swap_hours", file.kv_cache_swap_hours, 24, 0, 87_600) * 3_600_000,
    },
    autoEvictThresholdPct: shareSetting("auto_evict_threshold_pct", file.auto_evict_threshold_pct, 0.9),
  };
}
