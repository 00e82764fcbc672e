// The endpoint-definition helper. One `endpoint({...})` object per route is the single source of
// truth: http/bind.ts binds it to Elysia (validation, error style, metrics label), http/openapi.ts
// derives the OpenAPI document from it, and scripts/gen-docs.ts renders its markdown block. This
// module imports nothing of ours.
import type { TSchema } from "@sinclair/typebox";
import { E, type ErrorRow } from "./errors.ts";
import type { LLAMACPP } from "./recipes.ts";

export type HttpMethod = "GET" | "POST" | "DELETE" | "HEAD" | "WS";

/** Where a route is mounted: every versioned prefix, or the root only. */
export type Mount = "versioned" | "root";

/** The error body shape a route answers with. `lemonade_model`: Lemonade's answer naming the model a
 * route could not find, run or load (`/v1/load`, `/v1/models/{id}`). */
export type ErrorStyle = "openai" | "ollama" | "anthropic" | "lemonade" | "lemonade_model";

/** Who may call a route. `api`: LEMONADE_API_KEY when set; `admin`: LEMONADE_ADMIN_API_KEY when set;
 * `metrics`: either key, required only when LEMONADE_API_KEY is set; `telemetry`: anyone may
 * connect, a key presented must be accepted (the spans channel authenticates later, by message);
 * `open`: nobody is refused. */
export type Access = "api" | "admin" | "metrics" | "telemetry" | "open";

/** llama.cpp's page is named after its recipe. */
export type DocPage = "openai" | "ollama" | "lemonade" | "anthropic" | "mcp" | typeof LLAMACPP;

export type Availability = "fully_available" | "partially_available" | "not_available";

/** The status badge of one parameter, as the docs' Status column shows it. */
export type ParamStatus = "available" | "partial" | "not_available";

export const VERSION_PREFIXES = ["/v1", "/api/v1", "/v0", "/api/v0"] as const;

export interface Example {
  /** Request body sent by the example, rendered as curl and PowerShell. */
  body?: unknown;
  /** Query string appended to the path in the example, without the `?`. */
  query?: string;
  /** Concrete path, when the route has path parameters. */
  path?: string;
  /** Status line of the example response. */
  status?: string;
  /** The response body, verbatim (JSON or text). */
  response?: string;
  responseLang?: "json" | "text";
}

/** How a route answers a request that asks to stream. */
export interface StreamDef {
  /** `text/event-stream`: each `data:` line is one event; `application/x-ndjson`: each line is one. */
  contentType: "text/event-stream" | "application/x-ndjson";
  /** One event's JSON. */
  event: TSchema;
}

export interface EndpointDef {
  /** The GENERATED block id in the docs, e.g. `openai.chat_completions`. */
  id: string;
  method: HttpMethod;
  /** Path without prefix, in Elysia syntax for parameters (`/models/:id`). */
  path: string;
  mount: Mount;
  /** Other paths (same mount) that answer the same way, e.g. `/reranking` beside `/rerank`. */
  aliasPaths?: string[];
  page: DocPage;
  errorStyle: ErrorStyle;
  access: Access;
  summary: string;
  /** The summary table's extra column: modality on the OpenAI page. */
  modality?: string;
  availability: Availability;
  /** Prose (markdown) shown under the heading. */
  description: string;
  /** Extra prose shown after the parameters table. */
  notes?: string;
  body?: TSchema;
  /** The handler reads the body itself (its errors are not the schema's 400s, as for JSON-RPC). */
  rawBody?: boolean;
  query?: TSchema;
  params?: TSchema;
  /** The success response body; documented as "Response format" and used by tests to check answers. */
  response?: TSchema;
  /** The answer to a request that streams, beside the JSON one. */
  stream?: StreamDef;
  /** Response content type, when not JSON. */
  contentType?: string;
  /** `HEAD` is answered too, with an empty body. */
  head?: boolean;
  errors?: ErrorRow[];
  example?: Example;
  /** The `endpoint` label of the route's model-request metrics, when not the id's own name. */
  metricsLabel?: string;
  /** Body fields accepted in place of another (`model` for `model_name`), moved before validation. */
  bodyAliases?: Record<string, string>;
  /** The route's own wording for a body field present with the wrong type, as the server it
   * mirrors words it: given the field's path (`["metadata", "task"]`); undefined keeps the generic one. */
  invalidFieldMessage?: (path: string[]) => string | undefined;
}

/** Every definition made, numbered in the order its module declares it. */
const declared = new Map<EndpointDef, number>();

export function endpoint<const D extends EndpointDef>(def: D): D {
  declared.set(def, declared.size);
  return def;
}

/** The definitions a spec module exports, in the order it declares them: spec/index.ts builds
 * its list from these, so a definition cannot be exported yet missing from it. */
export function definitionsOf(module: Record<string, unknown>): EndpointDef[] {
  const defs = new Set(Object.values(module).filter((value): value is EndpointDef => declared.has(value as EndpointDef)));
  return [...defs].sort((a, b) => declared.get(a)! - declared.get(b)!);
}

/** The `endpoint` label a route's model requests are counted under: `chat_completions` for
 * `openai.chat_completions`, `ollama_chat` for `ollama.chat`. */
export function metricsLabel(def: Pick<EndpointDef, "id" | "page" | "metricsLabel">): string {
  if (def.metricsLabel) return def.metricsLabel;
  const name = def.id.slice(def.id.indexOf(".") + 1);
  return def.page === "ollama" ? `ollama_${name}` : name;
}

/** The paths a definition is served at. */
export function mountedPaths(def: Pick<EndpointDef, "path" | "mount" | "aliasPaths">): string[] {
  const paths = [def.path, ...(def.aliasPaths ?? [])];
  return def.mount === "versioned" ? paths.flatMap((path) => VERSION_PREFIXES.map((p) => p + path)) : paths;
}

/** The path as the docs print it: `/v1/models/{id}`. */
export function docPath(def: Pick<EndpointDef, "path" | "mount">): string {
  const path = def.mount === "versioned" ? `/v1${def.path}` : def.path;
  return path.replace(/:([A-Za-z_]+)/g, "{$1}");
}

/** The error rows a route can answer: schema failures wherever it takes input, then its own rows,
 * in status order. Both the docs' Errors table and the OpenAPI responses use this list. */
export function documentedErrors(def: EndpointDef): ErrorRow[] {
  const rows: ErrorRow[] = [];
  if (def.body && !def.rawBody && def.method !== "WS") rows.push(E.invalidJson);
  if ((def.body && !def.rawBody) || def.query || def.params) rows.push(E.missingArgument, E.invalidArgument);
  for (const row of def.errors ?? []) if (!rows.includes(row)) rows.push(row);
  return rows.sort((a, b) => a.status - b.status);
}
