// Where chat (and every other engine request) is proxied: claim the model from the scheduler,
// forward the request to its engine, and pass the answer back. Streams pass through byte for
// byte; the proxy only watches for the end of the stream (to release the model and read the
// engine's timings) and for an engine that dies mid-stream (to send the route's error event
// instead of hanging). How a stream ends is the protocol's rule (protocols/*), handed in.
import { ApiError } from "../lib/api-error.ts";
import type { Catalog, CatalogModel } from "../models/catalog.ts";
import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";
import { extractTimings, type GenerationStats } from "../observability/stats.ts";
import type { Lease, Scheduler } from "./scheduler.ts";

/** How one client protocol's event stream ends. */
export interface StreamRule {
  /** Called with the last chunks of an engine stream that closed: `""` when it ended whole, the
   * text that completes it when the engine leaves its last line out, or null when it stopped short. */
  ending(tail: string): string | null;
  /** The event a stream that breaks off ends with, in the protocol's shape. */
  errorEvent(message: string, status: number): string;
}

/** Refuses a model a route cannot serve (checked before anything loads). */
export type ModelCheck = (model: CatalogModel) => ApiError | null;

export interface ProxyRequest {
  /** The model the client named. */
  model: string;
  /** Engine path, e.g. `/v1/chat/completions`. */
  path: string;
  /** Body to send on to the engine. */
  body: Record<string, unknown>;
  /** The stream rule, when the answer is an event stream to pass through. */
  stream?: StreamRule;
  check: ModelCheck;
  /** Options for the load, when this request triggers one (e.g. `ctx_size`). */
  loadOptions?: Record<string, unknown>;
  /** The client's request, whose abort cancels the engine request. */
  signal: AbortSignal;
  /** Metrics label: the route, e.g. `chat_completions`. */
  endpoint: string;
  /** Whether the answer carries generation timings for /v1/stats. */
  generation: boolean;
}

export interface RecentRequest {
  method: "GET" | "POST";
  path: string;
  body?: Record<string, unknown>;
  signal: AbortSignal;
  endpoint: string;
  /** Which models the route can reach. */
  check: ModelCheck;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Chunks kept to read the final timings from: they arrive in the last event or two. */
const TAIL_CHUNKS = 4;

/** fetch() to an engine, retried once when a kept-alive connection turns out to be closed: the
 * engine (cpp-httplib) may drop an idle pooled connection just as it is reused, and then the
 * request never reached it, so sending it again is safe. */
export async function engineFetch(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const closed = /ECONNRESET|socket connection was closed|ConnectionClosed/i.test(String((err as Error)?.message ?? err));
    if (!closed || init.signal?.aborted) throw err;
    return fetch(url, { ...init, keepalive: false });
  }
}

export interface ProxyDeps {
  scheduler: Scheduler<CatalogModel>;
  catalog: Catalog;
  metrics: Metrics;
  stats: GenerationStats;
  logger: Logger;
}

export class EngineProxy {
  constructor(private readonly deps: ProxyDeps) {}

  /** The model a request names: a loaded one by its id without a catalog scan (every request's
   * hot path), else the catalog's answer; refused when the route cannot serve it. */
  model(name: string, check: ModelCheck): CatalogModel {
    const model = this.deps.scheduler.ready(name) ?? this.deps.catalog.get(name);
    const refusal = check(model);
    if (refusal) throw refusal;
    return model;
  }

  /** Claims the model a request names (loading it when needed). */
  acquire(name: string, check: ModelCheck, opts: { options?: Record<string, unknown>; signal?: AbortSignal } = {}): Promise<Lease<CatalogModel>> {
    return this.deps.scheduler.acquire(this.model(name, check), opts);
  }

  async toModel(req: ProxyRequest): Promise<Response> {
    const lease = await this.acquire(req.model, req.check, { options: req.loadOptions, signal: req.signal });
    return this.forward(lease, req, "POST");
  }

  /** Forwards to the most recently used model (slots, tokenize: they name no model). */
  async toRecent(req: RecentRequest): Promise<Response> {
    const { scheduler } = this.deps;
    const id = scheduler.mostRecent;
    if (!id) throw new ApiError(400, "no_model_loaded", "No model is loaded: load a llama.cpp model first");
    const model = scheduler.list().find((s) => s.model.id === id)?.model;
    if (!model) throw new ApiError(404, "", `Model ${id} was unloaded while the request waited for it`);
    const refusal = req.check(model);
    if (refusal) throw refusal;
    const lease = await scheduler.acquire(model, { signal: req.signal });
    return this.forward(lease, { ...req, model: id, body: req.body ?? {}, generation: false }, req.method);
  }

  private async forward(
    lease: Lease<CatalogModel>,
    req: Omit<ProxyRequest, "loadOptions" | "check">,
    method: "GET" | "POST",
  ): Promise<Response> {
    const { metrics, stats, logger } = this.deps;
    const modelId = lease.slot.model.id;
    const started = performance.now();
    const upstreamAbort = new AbortController();
    const onClientAbort = () => upstreamAbort.abort();
    req.signal.addEventListener("abort", onClientAbort, { once: true });
    let status = 0;
    const finish = (tail?: string) => {
      req.signal.removeEventListener("abort", onClientAbort);
      lease.release();
      const labels = { model: modelId, endpoint: req.endpoint };
      metrics.modelRequests.inc({ ...labels, status: String(status) });
      metrics.modelRequestDuration.observe(labels, (performance.now() - started) / 1000);
      if (req.generation && tail && status >= 200 && status < 300) {
        const found = extractTimings(tail);
        if (found) {
          const rec = stats.record(found.timings, found.usage);
          if (rec.output_tokens) metrics.generatedTokens.inc({ model: modelId }, rec.output_tokens);
          if (rec.prompt_tokens) metrics.promptTokens.inc({ model: modelId }, rec.prompt_tokens);
          if (rec.time_to_first_token !== null) metrics.timeToFirstToken.observe({ model: modelId }, rec.time_to_first_token);
        }
      }
    };

    let upstream: Response;
    try {
      upstream = await engineFetch(lease.url + req.path, {
        method,
        headers: { "content-type": "application/json" },
        body: method === "POST" ? JSON.stringify(req.body) : undefined,
        signal: upstreamAbort.signal,
      });
    } catch (err) {
      status = 502;
      finish();
      if (req.signal.aborted) throw new ApiError(499, "client_closed", "The client closed the request");
      throw new ApiError(502, "backend_error", `The ${modelId} engine did not answer: ${(err as Error).message}`);
    }
    status = upstream.status;

    const rule = req.stream;
    if (!rule || !upstream.ok || !upstream.body) {
      let text: string;
      try {
        text = await upstream.text();
      } catch (err) {
        status = 502;
        finish();
        throw new ApiError(502, "backend_error", `The ${modelId} engine stopped answering: ${(err as Error).message}`);
      }
      finish(text);
      if (upstream.ok) text = rewriteModel(text, req.model);
      return new Response(text, {
        status: upstream.status,
        headers: { "content-type": upstream.headers.get("content-type") ?? "application/json" },
      });
    }

    const reader = upstream.body.getReader();
    const tail: Uint8Array[] = [];
    let first = true;
    let closed = false;
    const tailText = () => tail.map((c) => decoder.decode(c)).join("");
    const close = (text = tailText()) => {
      if (closed) return;
      closed = true;
      finish(text);
    };
    // A "direct" stream writes each chunk straight to the client socket as it arrives, with no
    // queue in between: the least work per token Bun offers.
    const body = new ReadableStream({
      type: "direct",
      async pull(controller: { write(c: Uint8Array | string): void; flush(): void; close(): void }) {
        let text: string | undefined;
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            if (first) {
              first = false;
              lease.streaming();
            }
            tail.push(value);
            if (tail.length > TAIL_CHUNKS) tail.shift();
            controller.write(value);
            controller.flush();
          }
          text = tailText();
          const ending = rule.ending(text);
          if (ending === null) {
            status = 502;
            controller.write(encoder.encode(rule.errorEvent(`The ${modelId} engine closed the stream early`, 502)));
          } else if (ending) controller.write(encoder.encode(ending));
        } catch (err) {
          status = 502;
          if (!req.signal.aborted && !closed) {
            logger.warn("Proxy", `Stream from ${modelId} failed: ${(err as Error).message}`);
            try {
              controller.write(encoder.encode(rule.errorEvent(`The ${modelId} engine stopped answering: ${(err as Error).message}`, 502)));
            } catch {
              // The client is gone too.
            }
          }
        }
        close(text);
        try {
          controller.close();
        } catch {
          // Already closed by a client that went away.
        }
      },
      cancel() {
        upstreamAbort.abort();
        close();
      },
    } as unknown as UnderlyingDefaultSource<Uint8Array>);
    return new Response(body, {
      status: upstream.status,
      headers: {
        "content-type": upstream.headers.get("content-type") ?? "text/event-stream",
        "cache-control": "no-cache",
      },
    });
  }
}

/** Non-streaming answers report the model by the name the client used. */
function rewriteModel(text: string, model: string): string {
  if (!text.includes('"model"')) return text;
  try {
    const json = JSON.parse(text);
    if (json && typeof json === "object" && !Array.isArray(json) && "model" in json) {
      json.model = model;
      return JSON.stringify(json);
    }
  } catch {
    // Not JSON: pass it on as the engine sent it.
  }
  return text;
}
