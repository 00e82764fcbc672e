// Forwards one request to the engine serving its model. Streams pass through byte for byte; the
// proxy only watches for the end of the stream (to release the model and read the engine's
// timings) and for an engine that dies mid-stream (to send the documented error event instead of
// hanging).
import type { ServerContext } from "./context.ts";
import type { Lease } from "./router.ts";
import type { CatalogModel } from "../models/catalog.ts";
import { ApiError } from "./errors.ts";
import { extractTimings } from "./stats.ts";

export interface ProxyRequest {
  /** The model the client named. */
  model: string;
  /** Engine path, e.g. `/v1/chat/completions`. */
  path: string;
  /** Body to send on to the engine. */
  body: Record<string, unknown>;
  stream: boolean;
  /** Refuses a model this route cannot serve (checked before anything loads). */
  check: (model: CatalogModel) => ApiError | null;
  /** Options for the load, when this request triggers one (e.g. `ctx_size`). */
  loadOptions?: Record<string, unknown>;
  /** The client's request, whose abort cancels the engine request. */
  signal: AbortSignal;
  /** Metrics label: the route, e.g. `chat_completions`. */
  endpoint: string;
  /** Whether the answer carries generation timings for /v1/stats. */
  generation: boolean;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const DONE_MARK = "[DONE]";
/** Chunks kept to read the final timings from: they arrive in the last event or two. */
const TAIL_CHUNKS = 4;

function errorEvent(message: string, statusCode: number): Uint8Array {
  return encoder.encode(`data: ${JSON.stringify({ error: { message, type: "backend_error", status_code: statusCode } })}\n\n`);
}

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

/** Checks that route and model fit, then claims the model (loading it when needed). */
async function acquireFor(ctx: ServerContext, req: ProxyRequest): Promise<Lease> {
  // A loaded model named by its id skips the catalog scan: this is every request's hot path.
  const model = ctx.router.loadedModel(req.model) ?? ctx.catalog.get(req.model);
  const refusal = req.check(model);
  if (refusal) throw refusal;
  return ctx.router.acquire(model.id, { options: req.loadOptions });
}

export async function proxyToEngine(ctx: ServerContext, req: ProxyRequest): Promise<Response> {
  const lease = await acquireFor(ctx, req);
  return forward(ctx, lease, req, "POST");
}

/** Forwards to the most recently used llama.cpp model (slots, tokenize: they name no model). */
export async function proxyToRecent(
  ctx: ServerContext,
  req: Pick<ProxyRequest, "path" | "signal" | "endpoint"> & { method: "GET" | "POST"; body?: Record<string, unknown> },
): Promise<Response> {
  const id = ctx.router.mostRecent;
  if (!id) throw new ApiError(400, "no_model_loaded", "No model is loaded: load a llama.cpp model first");
  const slot = ctx.router.list().find((s) => s.model.id === id);
  if (!slot) throw new ApiError(404, "", `Model ${id} was unloaded while the request waited for it`);
  if (slot.model.recipe !== "llamacpp") throw new ApiError(400, "", `The most recently used model, ${id}, is not a llama.cpp model`);
  const lease = await ctx.router.acquire(id);
  return forward(ctx, lease, { ...req, model: id, body: req.body ?? {}, stream: false, generation: false, check: () => null }, req.method);
}

async function forward(
  ctx: ServerContext,
  lease: Lease,
  req: Omit<ProxyRequest, "loadOptions">,
  method: "GET" | "POST",
): Promise<Response> {
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
    ctx.metrics.modelRequests.inc({ ...labels, status: String(status) });
    ctx.metrics.modelRequestDuration.observe(labels, (performance.now() - started) / 1000);
    if (req.generation && tail && status >= 200 && status < 300) {
      const found = extractTimings(tail);
      if (found) {
        const rec = ctx.stats.record(found.timings, found.usage);
        if (rec.output_tokens) ctx.metrics.generatedTokens.inc({ model: modelId }, rec.output_tokens);
        if (rec.prompt_tokens) ctx.metrics.promptTokens.inc({ model: modelId }, rec.prompt_tokens);
        if (rec.time_to_first_token !== null) ctx.metrics.timeToFirstToken.observe({ model: modelId }, rec.time_to_first_token);
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

  if (!req.stream || !upstream.ok || !upstream.body) {
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
  const close = () => {
    if (closed) return;
    closed = true;
    finish(tail.map((c) => decoder.decode(c)).join(""));
  };
  // A "direct" stream writes each chunk straight to the client socket as it arrives, with no
  // queue in between: the least work per token Bun offers.
  const body = new ReadableStream({
    type: "direct",
    async pull(controller: { write(c: Uint8Array): void; flush(): void; close(): void }) {
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
        const end = decoder.decode(tail.at(-1)?.subarray(-32) ?? new Uint8Array());
        const tailText = end.includes(DONE_MARK) ? "" : tail.map((c) => decoder.decode(c)).join("");
        // A whole stream: OpenAI's ends with [DONE], Anthropic's with message_stop.
        const whole = end.includes(DONE_MARK) || tailText.includes('"type":"message_stop"');
        if (!whole && tailText.includes('"type":"response.completed"')) {
          // llama.cpp ends a Responses stream without the [DONE] the docs promise.
          controller.write(encoder.encode(`data: ${DONE_MARK}\n\n`));
        } else if (!whole) {
          // Any other stream that stops short means the engine died mid-answer.
          status = 502;
          controller.write(errorEvent(`The ${modelId} engine closed the stream early`, 502));
        }
      } catch (err) {
        status = 502;
        if (!req.signal.aborted && !closed) {
          ctx.logger.warn("Proxy", `Stream from ${modelId} failed: ${(err as Error).message}`);
          try {
            controller.write(errorEvent(`The ${modelId} engine stopped answering: ${(err as Error).message}`, 502));
          } catch {
            // The client is gone too.
          }
        }
      }
      close();
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
