// Cloud providers: OpenAI-compatible upstreams (a hosted provider, another Lemonade, vLLM, a
// llama-server on a bigger box) whose models are listed beside local ones as `<provider>.<id>`.
// Base URLs live in config.json `cloud_providers`; keys only in memory (POST /v1/cloud/auth) or
// in the server's environment (`LEMONADE_<PROVIDER>_API_KEY`, which wins). A key is never written,
// logged or answered back: only provider names and states leave this module. A provider may be a
// pool: several member servers serving the same models (replicas), each request going to one
// (runtime/pool.ts chooses), each member with its own key or the provider's.
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import { changed } from "../lib/generation.ts";
import { clip } from "../lib/scrub.ts";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import { join } from "node:path";
import { classify, type CatalogModel } from "./catalog.ts";

/** How a provider is spoken to: OpenAI's API, or Anthropic's Messages API (served through
 * `/v1/messages` only). */
export type Wire = "openai" | "anthropic";

/** One provider as config.json keeps it. */
export interface ProviderRecord {
  provider: string;
  /** The first member's, for a pool. */
  base_url: string;
  /** A pool's member base URLs (two or more, `base_url` first); absent for one server. */
  members?: string[];
  /** Absent: `openai`. */
  wire?: Wire;
  /** A key may travel to this `http://` base URL (the user opted in). */
  allow_insecure_http?: boolean;
  /** The header the key travels in, for a gateway that does not take `Authorization`; absent: the wire's own. */
  auth_header_name?: string;
  /** What the key's header value starts with (`""` for a bare key); absent: the wire's own. */
  auth_header_prefix?: string;
}

/** The header a key travels in, as the install answers and system-info report it. */
interface AuthHeader {
  auth_header_name: string;
  auth_header_prefix: string;
}

/** `/v1/install`'s and `/v1/cloud/auth`'s cautions about an `http://` provider, as Lemonade words them:
 * every one as `warnings`, and joined as the older `warning`. */
type Warnings = { warnings?: string[]; warning?: string };

const ANTHROPIC_VERSION = "2023-06-01";

/** A model the provider's `GET /models` listed. */
export interface CloudEntry {
  /** The provider's own id, sent upstream as `model`. */
  upstreamId: string;
  labels: string[];
  maxOutputTokens?: number;
  contextLength?: number;
  costInputPerMillion?: number;
  costOutputPerMillion?: number;
}

export interface AuthState {
  env_var_set: boolean;
  runtime_key_set: boolean;
}

interface ProviderState {
  record: ProviderRecord;
  models: CloudEntry[];
  /** Whether the last discovery reached the provider. */
  available: boolean;
  failures: number;
  nextRefresh: number;
}

export interface CloudOptions {
  cacheDir: string;
  env: Record<string, string | undefined>;
  log: { info(m: string): void; warn(m: string): void };
  /** How often a provider's model list is read again (ms); a failing one backs off from 30 s. */
  refreshMs?: number;
  now?: () => number;
}

/** What /v1/install names a pool member by: its base URL and, optionally, its own key. */
export interface MemberInput {
  base_url: string;
  api_key?: string;
}

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const MAX_MEMBERS = 32;
/** Names that are model-id prefixes of their own. */
// `admin` would read its key from LEMONADE_ADMIN_API_KEY.
const RESERVED = new Set(["user", "extra", "builtin", "admin"]);
const DISCOVERY_TIMEOUT_MS = 10_000;

export const envKeyName = (provider: string) => `LEMONADE_${provider.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_API_KEY`;

const notInstalled = (provider: string) =>
  ApiError.of(E.providerNotFound, `Cloud provider '${clip(provider)}' is not installed: POST /v1/install with backend "cloud" first`);

/** Every base URL a provider's requests may go to: its pool's members, or its one server. */
export const urlsOf = (record: ProviderRecord): string[] => record.members ?? [record.base_url];

const isHttp = (record: ProviderRecord) => urlsOf(record).some((u) => u.startsWith("http://"));

const warningsOf = (list: string[]): Warnings => (list.length ? { warnings: list, warning: list.join(" | ") } : {});

/** What Lemonade warns of for a provider over plain HTTP, and for a key that travels there. */
const httpWarnings = (record: ProviderRecord, keyAvailable: boolean): string[] =>
  isHttp(record)
    ? [
        "Base URL uses http://; traffic to this provider is not encrypted.",
        ...(keyAvailable ? ["An API key is configured for this http:// provider; Lemonade will send it as a Bearer token over plaintext HTTP."] : []),
      ]
    : [];

/** A header name as HTTP allows it (RFC 7230's token), as Lemonade checks it. */
function checkedHeaderName(name: string): string {
  if (!name) throw ApiError.of(E.invalidArgument, "Auth header name must not be empty", "auth_header_name");
  if (name.length > 128) throw ApiError.of(E.invalidArgument, "Auth header name must be 128 characters or fewer", "auth_header_name");
  if (!/^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/.test(name)) {
    throw ApiError.of(E.invalidArgument, "Auth header name must be a valid HTTP header name (letters, digits, and !#$%&'*+-.^_`|~)", "auth_header_name");
  }
  return name;
}

/** A header value prefix with no control characters but a tab (a CR or LF would end the header). */
function checkedHeaderPrefix(prefix: string): string {
  if (prefix.length > 128) throw ApiError.of(E.invalidArgument, "Auth header prefix must be 128 characters or fewer", "auth_header_prefix");
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(prefix)) {
    throw ApiError.of(E.invalidArgument, "Auth header prefix must not contain control characters (including carriage return or line feed)", "auth_header_prefix");
  }
  return prefix;
}

/** A config.json entry's header settings; one that fails the checks is left out (the wire's
 * default then), as Lemonade reads a hand-edited file, rather than sent malformed. */
function headerFields(raw: any): Pick<ProviderRecord, "auth_header_name" | "auth_header_prefix"> {
  const valid = (check: (v: string) => string, v: unknown) => {
    if (typeof v !== "string") return undefined;
    try {
      return check(v);
    } catch {
      return undefined;
    }
  };
  const name = valid(checkedHeaderName, raw?.auth_header_name);
  const prefix = valid(checkedHeaderPrefix, raw?.auth_header_prefix);
  return { ...(name !== undefined ? { auth_header_name: name } : {}), ...(prefix !== undefined ? { auth_header_prefix: prefix } : {}) };
}

/** Lemonade's missing-credentials error; inside a stream it words it shorter. */
export const noKey = (provider: string, streamed = false) => {
  const env = envKeyName(provider);
  return ApiError.of(
    E.cloudNoKey,
    streamed
      ? `No API key for cloud provider '${provider}'. Set ${env} or POST /v1/cloud/auth.`
      : `No API key for cloud provider '${provider}'. Set the ${env} env var or POST /v1/cloud/auth with {"provider":"${provider}","api_key":"..."}.`,
  ).with({ fields: { provider } });
};

const insecureRefused = (provider: string) =>
  ApiError.of(
    E.insecureHttp,
    `Cloud provider '${clip(provider)}' uses http://. Set allow_insecure_http=true to explicitly opt in before storing or using an API key over plaintext HTTP.`,
    "allow_insecure_http",
  );

/** A base URL as saved: http(s), with no credentials in it (a key travels as a header), no
 * trailing slash. */
function checkedUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw ApiError.of(E.invalidArgument, `Invalid base_url '${clip(baseUrl)}': give an http(s) URL such as https://api.example.com/v1`, "base_url");
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password) {
    throw ApiError.of(E.invalidArgument, "Invalid base_url: it must be http(s) and carry no credentials (send the key as api_key)", "base_url");
  }
  return baseUrl.replace(/\/+$/, "");
}

const positive = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : undefined);

/** A price as providers give it (a number, or a string of one); undefined for none or zero. */
const mega = (perToken: number | undefined) => (perToken === undefined ? undefined : perToken * 1e6);
const price = (v: unknown) => positive(typeof v === "string" ? Number(v) : v);

/** The capabilities a provider's `/models` entry reports, in Lemonade's label words, as Lemonade
 * reads them from each provider's own fields; from the id only when the entry reports none. */
function capabilityLabels(raw: any): string[] {
  const yes = (key: string) => raw[key] === true;
  const has = (list: unknown, item: string) => Array.isArray(list) && list.includes(item);
  const params = raw.supported_parameters;
  const caps = raw.capabilities;
  let vision =
    yes("supports_image_input") || yes("supports_vision") || yes("vision") || has(raw.modalities, "image") || has(raw.input_modalities, "image") || has(raw.architecture?.input_modalities, "image");
  let tools =
    yes("supports_tools") || yes("function_calling") || yes("supports_function_calling") || has(params, "tools") || has(params, "tool_choice") || ["tools", "function_calling", "tool_calling"].some((c) => has(caps, c));
  let reasoning = yes("reasoning") || yes("supports_reasoning") || has(params, "reasoning") || has(params, "include_reasoning");
  const reported = ["supports_image_input", "supports_vision", "vision", "supports_tools", "function_calling", "architecture", "capabilities", "supported_parameters", "modalities", "input_modalities"].some((k) => k in raw);
  if (!reported) {
    const id = String(raw.id).toLowerCase();
    const any = (...parts: string[]) => parts.some((part) => id.includes(part));
    vision ||= any("gpt-4o", "gpt-4.1", "gpt-5", "-vl", "vision", "llava", "pixtral");
    tools ||= any("gpt-4", "gpt-5", "o1", "o3", "o4");
    reasoning ||= any("o1", "o3", "o4", "reason", "-thinking");
  }
  return [...(vision ? ["vision"] : []), ...(tools ? ["tool-calling"] : []), ...(reasoning ? ["reasoning"] : [])];
}

/** A model's listed id, as Lemonade names it: `<provider>.<upstream id>`, with an
 * `accounts/<account>/models/` wrapper cut to `<account>/` and a leading `<provider>/` dropped
 * (`accounts/fireworks/models/kimi-k2p5` -> `fireworks.kimi-k2p5`, `openai/gpt-4o` -> `openrouter.openai/gpt-4o`). */
export function publicName(provider: string, upstreamId: string): string {
  const wrapped = /^accounts\/([^/]+)\/models\/(.*)$/s.exec(upstreamId);
  const cleaned = wrapped ? `${wrapped[1]}/${wrapped[2]}` : upstreamId;
  return `${provider}.${cleaned.startsWith(`${provider}/`) ? cleaned.slice(provider.length + 1) : cleaned}`;
}

/** What an id says a model without metadata makes, as Lemonade guesses it (OpenAI lists bare ids). */
function typeFromId(id: string): "image" | "tts" | "transcription" | "reranking" | "embedding" | "llm" {
  const any = (...parts: string[]) => parts.some((part) => id.includes(part));
  if (any("flux", "stable-diffusion", "sdxl", "sd-", "dall-e", "gpt-image", "chatgpt-image", "sora")) return "image";
  if (any("tts")) return "tts";
  if (any("whisper", "transcribe", "realtime", "audio")) return "transcription";
  if (any("rerank")) return "reranking";
  if (any("embed", "bge-", "nomic-", "moderation")) return "embedding";
  return "llm";
}

/** Whether a provider's entry is a chat model, as Lemonade decides: the output kind Fireworks
 * reports vetoes, then its `supports_chat`, a `capabilities` list, OpenRouter's modality, Together's
 * `type`, else the id. */
function isChatModel(raw: any): boolean {
  const kind = raw.kind;
  if (typeof kind === "string" && (kind === "FLUMINA_BASE_MODEL" || ["IMAGE", "AUDIO", "VIDEO", "EMBED"].some((k) => kind.includes(k)))) return false;
  if (typeof raw.supports_chat === "boolean") return raw.supports_chat;
  if (Array.isArray(raw.capabilities)) return raw.capabilities.some((c: unknown) => c === "chat" || c === "chat.completions" || c === "completion");
  if (typeof raw.architecture?.modality === "string") return raw.architecture.modality.includes("->text");
  if (typeof raw.type === "string") {
    if (["chat", "language", "code"].includes(raw.type)) return true;
    if (["image", "embedding", "rerank", "moderation", "audio"].includes(raw.type)) return false;
  }
  return typeFromId(raw.id) === "llm";
}

/** One entry of an OpenAI-style `/models` answer, with what Lemonade and some providers add: the
 * chat models Lemonade lists, and (beyond it) the embedding and reranking models another Lemonade
 * labels so. */
function entryOf(raw: any): CloudEntry | null {
  // Another Lemonade's own cloud models are its providers' business: taking them would chain
  // servers (and loop, for a server that is its own provider).
  if (raw?.recipe === "cloud") return null;
  if (typeof raw?.id !== "string" || !raw.id || raw.id.length > 256 || /[\u0000-\u001f]/.test(raw.id)) return null;
  const given = Array.isArray(raw.labels) ? raw.labels.filter((l: unknown): l is string => typeof l === "string") : [];
  const servedBeyondChat = given.some((l: string) => ["embeddings", "embedding", "reranking"].includes(l));
  if (!servedBeyondChat && !isChatModel(raw)) return null;
  const labels = [...new Set([...given, ...capabilityLabels(raw)])];
  return {
    upstreamId: raw.id,
    labels,
    maxOutputTokens: positive(raw.max_output_tokens ?? raw.max_completion_tokens),
    contextLength: positive(raw.context_length ?? raw.context_window ?? raw.max_model_len),
    // OpenRouter prices per token (`prompt`, `completion`), Together per million (`input`, `output`).
    costInputPerMillion: positive(raw.cost_input_per_million) ?? price(raw.pricing?.input) ?? mega(price(raw.pricing?.prompt)),
    costOutputPerMillion: positive(raw.cost_output_per_million) ?? price(raw.pricing?.output) ?? mega(price(raw.pricing?.completion)),
  };
}

export class CloudProviders {
  private readonly providers = new Map<string, ProviderState>();
  private readonly runtimeKeys = new Map<string, string>();
  /** Per provider, the keys its pool's members were installed with (by base URL). */
  private readonly memberKeys = new Map<string, Map<string, string>>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly now: () => number;
  private readonly refreshMs: number;

  constructor(private readonly opts: CloudOptions) {
    this.now = opts.now ?? Date.now;
    this.refreshMs = opts.refreshMs ?? 10 * 60_000;
    for (const record of this.readRecords()) {
      this.providers.set(record.provider, { record, models: [], available: false, failures: 0, nextRefresh: 0 });
    }
  }

  private get configPath(): string {
    return join(this.opts.cacheDir, "config.json");
  }

  /** config.json's providers; entries that are not `{provider|name, base_url}` are skipped. */
  private readRecords(): ProviderRecord[] {
    const file = readJsonFile<Record<string, unknown>>(this.configPath, {});
    const list = Array.isArray(file?.cloud_providers) ? file.cloud_providers : [];
    const out: ProviderRecord[] = [];
    for (const raw of list as any[]) {
      const provider = raw?.provider ?? raw?.name;
      const members = Array.isArray(raw?.members) && raw.members.length > 1 && raw.members.every((m: unknown) => typeof m === "string") ? (raw.members as string[]) : undefined;
      if (typeof provider === "string" && NAME.test(provider) && typeof raw?.base_url === "string") {
        out.push({
          provider,
          base_url: members?.[0] ?? raw.base_url,
          ...(members ? { members } : {}),
          ...(raw.wire === "anthropic" ? { wire: "anthropic" as const } : {}),
          ...(raw.allow_insecure_http === true ? { allow_insecure_http: true } : {}),
          ...headerFields(raw),
        });
      }
      else this.opts.log.warn(`Skipping a config.json cloud_providers entry that is not {"name", "base_url"}`);
    }
    return out;
  }

  /** Writes the provider list into config.json (atomically), leaving every other key as it was. */
  private save(): void {
    const file = readJsonFile<Record<string, unknown>>(this.configPath, {});
    const next = typeof file === "object" && file !== null && !Array.isArray(file) ? { ...file } : {};
    // As Lemonade writes them (`name`, the opt-in always, a header setting only when one was
    // given), so either server reads the other's config.json; `members` and `wire` are ours.
    next.cloud_providers = [...this.providers.values()].map(({ record: { provider, base_url, allow_insecure_http, auth_header_name, auth_header_prefix, members, wire } }) => ({
      name: provider,
      base_url,
      allow_insecure_http: allow_insecure_http === true,
      ...(auth_header_name !== undefined ? { auth_header_name } : {}),
      ...(auth_header_prefix !== undefined ? { auth_header_prefix } : {}),
      ...(members ? { members } : {}),
      ...(wire ? { wire } : {}),
    }));
    writeJsonFileAtomic(this.configPath, next);
  }

  names(): string[] {
    return [...this.providers.keys()];
  }

  has(provider: string): boolean {
    return this.providers.has(provider);
  }

  /** The key requests to a provider's server carry: the environment's, else the member's own,
   * else the one set at runtime for the provider. */
  private key(provider: string, url: string): string | undefined {
    return this.opts.env[envKeyName(provider)] || this.memberKeys.get(provider)?.get(url) || this.runtimeKeys.get(provider);
  }

  authState(provider: string): AuthState {
    return { env_var_set: !!this.opts.env[envKeyName(provider)], runtime_key_set: this.runtimeKeys.has(provider) || (this.memberKeys.get(provider)?.size ?? 0) > 0 };
  }

  /** A pool's member base URLs; undefined for a provider of one server (or none installed). */
  members(provider: string): string[] | undefined {
    return this.providers.get(provider)?.record.members;
  }

  /** Every provider, for `lemonade cloud list` and system-info. */
  describe() {
    return [...this.providers.values()].map((p) => ({
      provider: p.record.provider,
      base_url: p.record.base_url,
      ...(p.record.members ? { members: p.record.members } : {}),
      wire: p.record.wire ?? "openai",
      available: p.available,
      models: p.models.length,
      auth_state: this.authState(p.record.provider),
    }));
  }

  /** The providers as /v1/system-info lists them: a key's variable name, never its value. */
  systemInfo() {
    return [...this.providers.values()].map((p) => {
      const auth = this.authState(p.record.provider);
      return {
        name: p.record.provider,
        base_url: p.record.base_url,
        ...(p.record.members ? { members: p.record.members } : {}),
        allow_insecure_http: p.record.allow_insecure_http === true,
        ...this.authHeader(p.record),
        env_var: envKeyName(p.record.provider),
        ...auth,
        models_discovered: p.models.length,
        ...warningsOf(httpWarnings(p.record, auth.env_var_set || auth.runtime_key_set)),
      };
    });
  }

  /** The header a provider's key travels in: its own setting, else its wire's. */
  private authHeader(record: ProviderRecord): AuthHeader {
    const anthropic = record.wire === "anthropic";
    return {
      auth_header_name: record.auth_header_name ?? (anthropic ? "x-api-key" : "Authorization"),
      auth_header_prefix: record.auth_header_prefix ?? (anthropic ? "" : "Bearer "),
    };
  }

  /** Adds or updates a provider, then reads its models: one server's base URL, or a pool's
   * members (each with its own key, or none). `allowInsecureHttp` and the auth header's name and
   * prefix, when not given, keep what the provider had. */
  async install(
    provider: string,
    server: string | MemberInput[],
    opts: { apiKey?: string; wire?: string; allowInsecureHttp?: boolean; authHeaderName?: string; authHeaderPrefix?: string } = {},
  ) {
    const { apiKey, wire } = opts;
    if (!NAME.test(provider) || RESERVED.has(provider)) {
      throw ApiError.of(E.invalidArgument, `Invalid provider '${clip(provider)}': use lower-case letters, digits, '-' and '_' (not user, extra, builtin or admin)`, "provider");
    }
    const inputs = typeof server === "string" ? [{ base_url: server }] : server;
    if (typeof server !== "string" && (inputs.length < 2 || inputs.length > MAX_MEMBERS)) {
      throw ApiError.of(E.invalidArgument, `A pool has 2 to ${MAX_MEMBERS} members; for one server give base_url`, "members");
    }
    const urls = inputs.map((m) => checkedUrl(m.base_url));
    if (new Set(urls).size !== urls.length) throw ApiError.of(E.invalidArgument, "A pool names each member once", "members");
    if (wire !== undefined && wire !== "openai" && wire !== "anthropic") {
      throw ApiError.of(E.invalidArgument, `Invalid wire '${clip(wire)}': use openai or anthropic`, "wire");
    }
    // Anthropic itself speaks its own API unless told otherwise.
    const anthropic = (wire ?? (provider === "anthropic" ? "anthropic" : "openai")) === "anthropic";
    const previous = this.providers.get(provider);
    const headerName = opts.authHeaderName !== undefined ? checkedHeaderName(opts.authHeaderName) : previous?.record.auth_header_name;
    const headerPrefix = opts.authHeaderPrefix !== undefined ? checkedHeaderPrefix(opts.authHeaderPrefix) : previous?.record.auth_header_prefix;
    const insecure = opts.allowInsecureHttp ?? previous?.record.allow_insecure_http ?? false;
    const keyed = apiKey || inputs.some((m) => m.api_key) || this.authState(provider).env_var_set;
    if (urls.some((u) => u.startsWith("http://")) && !insecure && keyed) throw insecureRefused(provider);
    const record: ProviderRecord = {
      provider,
      base_url: urls[0]!,
      ...(urls.length > 1 ? { members: urls } : {}),
      ...(anthropic ? { wire: "anthropic" as const } : {}),
      ...(insecure ? { allow_insecure_http: true } : {}),
      ...(headerName !== undefined ? { auth_header_name: headerName } : {}),
      ...(headerPrefix !== undefined ? { auth_header_prefix: headerPrefix } : {}),
    };
    this.providers.set(provider, { record, models: previous?.models ?? [], available: false, failures: 0, nextRefresh: 0 });
    this.save();
    let ignoredKey = false;
    const envSet = this.authState(provider).env_var_set;
    // A member's key belongs to that member: reinstalling the pool replaces them all.
    this.memberKeys.delete(provider);
    if (apiKey || inputs.some((m) => m.api_key)) {
      if (envSet) ignoredKey = true;
      else {
        if (apiKey) this.runtimeKeys.set(provider, apiKey);
        const own = new Map(inputs.flatMap((m, i) => (m.api_key ? [[urls[i]!, m.api_key] as const] : [])));
        if (own.size) this.memberKeys.set(provider, own);
      }
    }
    this.opts.log.info(`Installed cloud provider ${provider}`);
    const models_discovered = await this.refresh(provider);
    const auth_state = this.authState(provider);
    const warnings = [
      ...httpWarnings(record, auth_state.env_var_set || auth_state.runtime_key_set),
      ...(ignoredKey ? [`${envKeyName(provider)} is set; supplied api_key was ignored.`] : []),
    ];
    return {
      base_url: record.base_url,
      ...(record.members ? { members: record.members } : {}),
      allow_insecure_http: insecure,
      ...this.authHeader(record),
      models_discovered,
      auth_state,
      wire: record.wire ?? "openai",
      ...warningsOf(warnings),
    };
  }

  /** Removes a provider and its models; 404 when it was never installed. */
  uninstall(provider: string): number {
    const state = this.providers.get(provider);
    if (!state) throw notInstalled(provider);
    this.providers.delete(provider);
    this.runtimeKeys.delete(provider);
    this.memberKeys.delete(provider);
    this.save();
    changed();
    this.opts.log.info(`Removed cloud provider ${provider} and its ${state.models.length} model(s)`);
    return state.models.length;
  }

  /** Stores a key in memory and reads the models again; the environment's key wins (409). */
  async setKey(provider: string, apiKey: string, allowInsecureHttp?: boolean) {
    const state = this.providers.get(provider);
    if (!state) throw notInstalled(provider);
    if (isHttp(state.record)) {
      if (!allowInsecureHttp && !state.record.allow_insecure_http) throw insecureRefused(provider);
      if (allowInsecureHttp && !state.record.allow_insecure_http) {
        state.record = { ...state.record, allow_insecure_http: true };
        this.save();
      }
    }
    const env = envKeyName(provider);
    if (this.opts.env[env]) {
      throw ApiError.of(E.authConflict, `${env} is set in the lemond process; the env var takes precedence and the supplied API key was not stored.`).with({ fields: { env_var: env } });
    }
    this.runtimeKeys.set(provider, apiKey);
    const models_discovered = await this.refresh(provider);
    return { provider, allow_insecure_http: state.record.allow_insecure_http === true, auth_state: this.authState(provider), models_discovered, ...warningsOf(httpWarnings(state.record, true)) };
  }

  /** Forgets the in-memory keys (the provider's and its members'); without one from the
   * environment the models are read again, and a provider that needs a key then lists none.
   * A provider that is not installed has no key to forget, which Lemonade answers as such. */
  async clearKey(provider: string) {
    const clearedMembers = this.memberKeys.delete(provider);
    const cleared = this.runtimeKeys.delete(provider) || clearedMembers;
    if (cleared && !this.authState(provider).env_var_set) await this.refresh(provider);
    return { provider, cleared_runtime_key: cleared, auth_state: this.authState(provider) };
  }

  /** Reads a provider's `GET /models`; returns how many it lists. A provider that cannot be
   * reached keeps its last list, marked unavailable; one that refuses the key lists none. Without a
   * key (or with one that may not travel to its `http://` URL) it is not asked, and lists none. A
   * pool's members are replicas: the first member that answers lists the pool's models. */
  async refresh(provider: string): Promise<number> {
    const state = this.providers.get(provider);
    if (!state) return 0;
    const askable = urlsOf(state.record).filter((u) => this.usableKey(state.record, u));
    if (!askable.length) {
      const why = urlsOf(state.record).some((u) => this.key(provider, u)) ? "its http:// base URL needs allow_insecure_http for the key" : `no key (set ${envKeyName(provider)} or POST /v1/cloud/auth)`;
      if (state.models.length) changed();
      state.models = [];
      state.available = true;
      state.nextRefresh = this.now() + this.refreshMs;
      this.opts.log.info(`Skipping cloud discovery for ${provider}: ${why}`);
      return 0;
    }
    try {
      const res = await this.firstAnswer(state.record, askable);
      if (res.status === 401 || res.status === 403) {
        await res.body?.cancel();
        state.models = [];
        state.available = true;
        this.opts.log.warn(`Cloud provider ${provider} refused its key (HTTP ${res.status})`);
      } else {
        if (!res.ok) {
          await res.body?.cancel();
          throw new Error(`HTTP ${res.status}`);
        }
        const body: any = await res.json();
        const list = Array.isArray(body?.data) ? body.data : Array.isArray(body?.models) ? body.models : [];
        state.models = list.map(entryOf).filter((e: CloudEntry | null): e is CloudEntry => e !== null);
        state.available = true;
      }
      state.failures = 0;
      state.nextRefresh = this.now() + this.refreshMs;
    } catch (err) {
      state.available = false;
      state.failures++;
      state.nextRefresh = this.now() + Math.min(this.refreshMs, 30_000 * 2 ** Math.min(state.failures - 1, 10));
      this.opts.log.warn(`Cloud provider ${provider} could not be reached to list its models (${(err as Error).name === "TimeoutError" ? "timed out" : (err as Error).message}); keeping its last list`);
    }
    changed();
    return state.models.length;
  }

  /** The `GET /models` answer of the first of the servers that gives one below 500; throws the
   * last failure when none does. */
  private async firstAnswer(record: ProviderRecord, urls: string[]): Promise<Response> {
    let failure: Error = new Error("no server to ask");
    for (const url of urls) {
      try {
        const res = await fetch(`${url}/models`, { headers: this.headersOf(record, url), signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS) });
        if (res.status < 500 || url === urls.at(-1)) return res;
        await res.body?.cancel();
        failure = new Error(`HTTP ${res.status}`);
      } catch (err) {
        failure = err as Error;
      }
    }
    throw failure;
  }

  /** Refreshes the providers that are due, on a timer that never keeps the process alive. */
  startRefreshing(everyMs = 30_000): void {
    this.timer ??= setInterval(() => {
      for (const [name, state] of this.providers) if (state.nextRefresh <= this.now()) void this.refresh(name);
    }, everyMs);
    this.timer.unref?.();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The last catalogModels(): what it was made from, and the list. */
  private listed?: { from: (readonly [ProviderRecord, CloudEntry[], boolean])[]; models: readonly CatalogModel[] };

  /** Every discovered model as the catalog lists it: named as Lemonade names it (`publicName`),
   * recipe `cloud`, labelled `cloud` and suggested, as Lemonade lists them. Labels the provider
   * reports (another Lemonade does) keep their deployment mode; others are chat models. */
  catalogModels(): readonly CatalogModel[] {
    // The same array while no provider's record, models or reachability changed: the catalog keeps
    // what it derives from its list (Catalog.all) until one of its parts is another array.
    const from = [...this.providers.values()].map((p) => [p.record, p.models, p.available] as const);
    const last = this.listed;
    if (last && last.from.length === from.length && from.every((f, i) => f.every((part, j) => part === last.from[i]![j]))) return last.models;
    const out: CatalogModel[] = [];
    for (const p of this.providers.values()) {
      const ids = new Set<string>();
      for (const e of p.models) {
        const id = publicName(p.record.provider, e.upstreamId);
        // Two upstream ids that clean to one name: the first is listed.
        if (ids.has(id)) continue;
        ids.add(id);
        let classified;
        try {
          classified = classify(id, "cloud", e.labels);
        } catch {
          classified = classify(id, "cloud", []);
        }
        out.push({
          id,
          recipe: "cloud",
          type: classified.type,
          labels: ["cloud", ...classified.labels.filter((l) => l !== "cloud")],
          checkpoints: {},
          suggested: true,
          source: "cloud",
          registryOptions: {},
          cloud: { provider: p.record.provider, available: p.available, wire: p.record.wire ?? "openai", ...e },
        });
      }
    }
    this.listed = { from, models: Object.freeze(out) };
    return this.listed.models;
  }

  /** The key requests to one of a provider's servers may carry: none to an `http://` URL the user
   * did not open. */
  private usableKey(record: ProviderRecord, url: string): string | undefined {
    return url.startsWith("http://") && !record.allow_insecure_http ? undefined : this.key(record.provider, url);
  }

  /** The headers every request to one of a provider's servers carries: its key, as its wire sends one. */
  private headersOf(record: ProviderRecord, url: string): Record<string, string> {
    const key = this.usableKey(record, url);
    const { auth_header_name, auth_header_prefix } = this.authHeader(record);
    const auth = key ? { [auth_header_name.toLowerCase()]: `${auth_header_prefix}${key}` } : {};
    return record.wire === "anthropic" ? { "anthropic-version": ANTHROPIC_VERSION, ...auth } : auth;
  }

  /** Whether an installed provider has a server no key at all is held for (the missing-credentials case). */
  lacksKey(provider: string): boolean {
    const state = this.providers.get(provider);
    return state !== undefined && urlsOf(state.record).some((url) => !this.key(provider, url));
  }

  /** Where a request for a provider's model may go (one server, or a pool's members), with the
   * headers each takes; a server with no key it may send answers Lemonade's missing-credentials error. */
  target(provider: string): { servers: { baseUrl: string; headers: Record<string, string> }[]; wire: Wire } {
    const state = this.providers.get(provider);
    if (!state) throw notInstalled(provider);
    const urls = urlsOf(state.record);
    for (const url of urls) {
      if (this.usableKey(state.record, url)) continue;
      if (this.key(provider, url)) throw insecureRefused(provider);
      throw noKey(provider);
    }
    return { servers: urls.map((baseUrl) => ({ baseUrl, headers: this.headersOf(state.record, baseUrl) })), wire: state.record.wire ?? "openai" };
  }
}
