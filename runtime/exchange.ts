// One request's exchange with its engine, on a claimed model: the transport sends it (runtime/
// transport.ts), a whole answer is rewritten here or a stream handed to the pump (runtime/
// stream-pump.ts), and it ends in one place, end(), which lets go of the engine and does the
// accounting (runtime/accounting.ts). An engine error answer is normalised (runtime/engine-error.ts),
// never passed on raw.
import { ApiError } from "../lib/api-error.ts";
import type { CatalogModel } from "../models/catalog.ts";
import { account, type AccountingDeps } from "./accounting.ts";
import { engineError } from "./engine-error.ts";
import type { Lease } from "./scheduler.ts";
import { pump, type StreamRule, type StreamSource } from "./stream-pump.ts";
import { Transport, type Route, type TransportDeps } from "./transport.ts";
import type { Reshape } from "./request.ts";
import { isJson, type Json } from "../lib/json.ts";
import type { InferenceSpan } from "../observability/telemetry.ts";
import { modelIdentity } from "../observability/stats.ts";

export interface ExchangeDeps extends TransportDeps, AccountingDeps {
  /** Silence (ms) in a stream after which a keep-alive is written. */
  pingMs: number;
}

export interface ExchangeRequest {
  /** The model the client named: a whole answer reports it by this name. */
  model: string;
  path: string;
  method: "GET" | "POST";
  body: Json;
  form?: FormData;
  signal: AbortSignal;
  endpoint: string;
  generation: boolean;
  /** The answer is bytes (audio) passed on as they are, not JSON to rewrite. */
  raw?: boolean;
  reshape?: Reshape;
  span?: InferenceSpan;
}

/** Where an exchange is: sending (or reading a whole answer); a stream response made whose body
 * nobody has started reading (a client that leaves now ends it); streaming; ended. */
type Phase = "open" | "unread" | "streaming" | "ended";

export class Exchange {
  private phase: Phase = "open";
  private readonly started: number;
  private readonly transport: Transport;
  /** The engine's first answer, when a stream's headers waited for it. */
  private held: Response | undefined;
  private readonly onClientAbort = () => {
    this.transport.abort("client");
    if (this.phase === "unread") this.end(499);
  };

  /** Joins the engine's queue: a full one refuses the request here, before any response starts. */
  constructor(
    private readonly deps: ExchangeDeps,
    lease: Lease<CatalogModel>,
    private readonly req: ExchangeRequest,
    route: Route,
  ) {
    this.transport = new Transport(deps, lease, req, route);
    this.started = deps.clock.now();
    req.signal.addEventListener("abort", this.onClientAbort, { once: true });
  }

  /** The whole answer at once, the model named as the client named it (bytes, for `raw`, as they are). */
  unary(): Promise<Response> {
    return this.guard(async () => {
      for (;;) {
        const res = await this.transport.send();
        const raw = this.req.raw && res.ok;
        let body: string | ArrayBuffer;
        const stopWatch = this.transport.watch();
        try {
          body = raw ? await res.arrayBuffer() : await res.text();
        } catch {
          await this.transport.engineGone();
          continue;
        } finally {
          stopWatch();
        }
        if (typeof body !== "string") {
          this.end(res.status);
          return new Response(body, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "application/octet-stream" } });
        }
        if (!res.ok) throw engineError(res.status, body, this.transport.modelName);
        this.end(res.status, body);
        return new Response(rewriteAnswer(body, this.req.model, this.req.reshape), {
          status: res.status,
          headers: { "content-type": res.headers.get("content-type") ?? "application/json" },
        });
      }
    });
  }

  /** An event stream through the pump. `holdHeaders`: wait for the engine's answer first, so that
   * an engine error keeps its HTTP status (for protocols with no stream error event, such as Ollama's). */
  async stream(rule: StreamRule, holdHeaders: boolean): Promise<Response> {
    if (holdHeaders) this.held = await this.guard(() => this.opened());
    this.phase = "unread";
    return pump(rule, this.source(), this.deps);
  }

  /** Runs a step; a failure ends the exchange with the error's status and is thrown on. */
  private async guard<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      this.end(err instanceof ApiError ? err.status : 500, undefined, (err as Error).message);
      throw err;
    }
  }

  /** The engine's answer, which must be a success to be streamed. */
  private async opened(): Promise<Response> {
    const res = await this.transport.send();
    if (res.ok) return res;
    const text = await res.text().catch(() => "");
    throw engineError(res.status, text, this.transport.modelName);
  }

  private source(): StreamSource {
    const t = this.transport;
    return {
      get modelName() {
        return t.modelName;
      },
      get clientGone() {
        return t.clientGone;
      },
      open: () => {
        const held = this.held;
        this.held = undefined;
        return held ? Promise.resolve(held) : this.opened();
      },
      replay: () => t.engineGone(),
      stoppedShort: () => t.stoppedShort(),
      watch: () => t.watch(),
      heard: (first, chunk) => {
        this.req.span?.chunk(chunk);
        t.heard();
        if (first) t.lease.streaming();
      },
      abandon: () => t.abort(),
      reading: () => {
        if (this.phase === "unread") this.phase = "streaming";
      },
      cancelled: () => t.abort("client"),
      end: (status, tail, error) => this.end(status, tail, error),
      warn: (message) => this.deps.logger.warn("Proxy", message),
    };
  }

  /** The one way an exchange ends: the engine let go of and the request recorded (its span
   * ended: a whole answer is `tail`), once. */
  private end(status: number, tail?: string, error?: string): void {
    if (this.phase === "ended") return;
    this.phase = "ended";
    this.req.signal.removeEventListener("abort", this.onClientAbort);
    this.transport.close();
    const { instance } = this.transport.lease;
    account(this.deps, {
      modelId: instance.model.id,
      identity: modelIdentity(instance.model),
      endpoint: this.req.endpoint,
      provider: instance.model.cloud?.provider,
      status,
      seconds: (this.deps.clock.now() - this.started) / 1000,
      generation: this.req.generation,
      tail,
    });
    const { span } = this.req;
    if (!span) return;
    if (status >= 200 && status < 300) span.succeed(tail);
    else span.fail(error ?? (status === 499 ? "The client closed the request" : `The request ended with status ${status}`));
  }
}

/** Non-streaming answers report the model by the name the client used, reshaped as the route asks. */
function rewriteAnswer(text: string, model: string, reshape?: Reshape): string {
  if (!reshape && !text.includes('"model"')) return text;
  try {
    const json: unknown = JSON.parse(text);
    if (isJson(json)) {
      if ("model" in json) json.model = model;
      return JSON.stringify(reshape ? reshape(json) : json);
    }
  } catch {
    // Not JSON: pass it on as the engine sent it.
  }
  return text;
}
