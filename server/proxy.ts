// Forwards one inference request to the engine serving its model. Streams pass through byte for
// byte; the proxy only watches for the end of the stream (to release the model) and for an engine
// that dies mid-stream (to send the documented error event instead of hanging).
import type { ServerContext } from "./context.ts";
import type { Lease } from "./router.ts";
import type { ModelType } from "../models/catalog.ts";
import { ApiError } from "./errors.ts";

export interface ProxyRequest {
  /** The model the client named. */
  model: string;
  /** Engine path, e.g. `/v1/chat/completions`. */
  path: string;
  /** Body to send on to the engine. */
  body: Record<string, unknown>;
  stream: boolean;
  /** The model type the route serves; another type is a 400. */
  type: ModelType;
  /** Options for the load, when this request triggers one (e.g. `ctx_size`). */
  loadOptions?: Record<string, unknown>;
  /** The client's request, whose abort cancels the engine request. */
  signal: AbortSignal;
}

const encoder = new TextEncoder();
const DONE_MARK = "[DONE]";

function errorEvent(message: string, statusCode: number): Uint8Array {
  return encoder.encode(`data: ${JSON.stringify({ error: { message, type: "backend_error", status_code: statusCode } })}\n\n`);
}

async function acquireFor(ctx: ServerContext, req: ProxyRequest): Promise<Lease> {
  const model = ctx.catalog.get(req.model);
  if (model.type !== req.type) {
    const what = req.type === "llm" ? "an LLM" : `a ${req.type} model`;
    throw new ApiError(400, "", `Model ${model.id} is not ${what} (its type is ${model.type})`, "model");
  }
  return ctx.router.acquire(model.id, { options: req.loadOptions });
}

export async function proxyToEngine(ctx: ServerContext, req: ProxyRequest): Promise<Response> {
  const lease = await acquireFor(ctx, req);
  const upstreamAbort = new AbortController();
  const onClientAbort = () => upstreamAbort.abort();
  req.signal.addEventListener("abort", onClientAbort, { once: true });
  const finish = () => {
    req.signal.removeEventListener("abort", onClientAbort);
    lease.release();
  };
  let upstream: Response;
  try {
    upstream = await fetch(lease.url + req.path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(req.body),
      signal: upstreamAbort.signal,
    });
  } catch (err) {
    finish();
    if (req.signal.aborted) throw new ApiError(499, "client_closed", "The client closed the request");
    throw new ApiError(502, "backend_error", `The ${lease.slot.model.id} engine did not answer: ${(err as Error).message}`);
  }

  if (!req.stream || !upstream.ok || !upstream.body) {
    let text: string;
    try {
      text = await upstream.text();
    } catch (err) {
      finish();
      throw new ApiError(502, "backend_error", `The ${lease.slot.model.id} engine stopped answering: ${(err as Error).message}`);
    }
    finish();
    if (upstream.ok) text = rewriteModel(text, req.model);
    return new Response(text, {
      status: upstream.status,
      headers: { "content-type": upstream.headers.get("content-type") ?? "application/json" },
    });
  }

  const reader = upstream.body.getReader();
  const modelId = lease.slot.model.id;
  let first = true;
  let tail = "";
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    finish();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            // An engine that closes without `[DONE]` died mid-answer: say so rather than end quietly.
            if (!tail.includes(DONE_MARK)) controller.enqueue(errorEvent(`The ${modelId} engine closed the stream early`, 502));
            close();
            controller.close();
            return;
          }
          if (first) {
            first = false;
            lease.streaming();
          }
          // Only the last bytes matter for spotting the end marker; decoding them is cheap.
          tail = String.fromCharCode(...value.subarray(Math.max(0, value.length - 16)));
          controller.enqueue(value);
        } catch (err) {
          if (!req.signal.aborted) {
            ctx.logger.warn("Proxy", `Stream from ${modelId} failed: ${(err as Error).message}`);
            controller.enqueue(errorEvent(`The ${modelId} engine stopped answering: ${(err as Error).message}`, 502));
          }
          close();
          controller.close();
        }
      },
      cancel() {
        upstreamAbort.abort();
        close();
      },
    },
    { highWaterMark: 0 },
  );
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
  try {
    const json = JSON.parse(text);
    if (json && typeof json === "object" && "model" in json) {
      json.model = model;
      return JSON.stringify(json);
    }
  } catch {
    // Not JSON: pass it on as the engine sent it.
  }
  return text;
}
