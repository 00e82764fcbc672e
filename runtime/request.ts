// What a route asks the proxy for: the request as the engine gets it, how its answer comes back,
// and which models may serve it.
import type { ApiError } from "../lib/api-error.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { StreamRule } from "./stream-pump.ts";
import type { InferenceSpan } from "../observability/telemetry.ts";
import type { Json } from "../lib/json.ts";
import type { ChatCompletionRequest, CompletionRequest, ResponsesRequest } from "../spec/openai.ts";

/** Refuses a model a route cannot serve (checked before anything loads); a refusal names the
 * model by `named` (the id /v1/models lists it by). */
export type ModelCheck = (model: CatalogModel, named: (model: CatalogModel) => string) => ApiError | null;

/** Turns an engine's whole JSON answer into the one the client gets. */
export type Reshape = (answer: Json) => Json;

export interface ProxyRequest {
  /** The model the client named. */
  model: string;
  /** Engine path, e.g. `/v1/chat/completions`. */
  path: string;
  /** Body to send on to the engine, as JSON. */
  body: Json;
  /** A multipart body to send instead (image edits), as it is. */
  form?: FormData;
  /** The stream rule, when the answer is an event stream. */
  stream?: StreamRule;
  /** With a stream: wait for the engine's answer before sending headers, so that an engine error
   * keeps its HTTP status (routes whose protocol has no stream error event, such as Ollama's). */
  holdHeaders?: boolean;
  check: ModelCheck;
  /** The answer is bytes (audio) passed on as they are, not JSON to rewrite. */
  raw?: boolean;
  /** What to send for a whole (non-streamed) JSON answer, when not the engine's answer itself. */
  reshape?: Reshape;
  /** Options for the load, when this request triggers one (e.g. `ctx_size`). */
  loadOptions?: Record<string, unknown>;
  /** The client's request, whose abort cancels the engine request. */
  signal: AbortSignal;
  /** Metrics label: the route, e.g. `chat_completions`. */
  endpoint: string;
  /** Whether the answer carries generation timings for /v1/stats. */
  generation: boolean;
  /** The request runs a collection's routing (a router's classifier), not the client's: its
   * model is held in the routing-helper pool (multi-model guide). */
  helper?: boolean;
  /** The client's body as it came, on the routes a collection may serve (chat, completions,
   * responses): a router decides on it, an omni collection plans on it (chat only). */
  client?: ChatCompletionRequest | CompletionRequest | ResponsesRequest;
  /** The request's trace span, while telemetry is on: ended with the exchange, or failed with
   * the load or refusal that stopped it first. */
  span?: InferenceSpan;
}

export interface RecentRequest {
  method: "GET" | "POST";
  path: string;
  body?: Json;
  signal: AbortSignal;
  endpoint: string;
  /** Which models the route can reach. */
  check: ModelCheck;
}
