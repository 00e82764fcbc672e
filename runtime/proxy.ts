// Where chat (and every other engine request) is proxied: claim the model from the scheduler,
// forward the request to its engine, and pass the answer back.
//
// Rules it keeps:
// - an engine error answer is normalised (engines/engine-error.ts), never passed on raw;
// - an engine found dead (the request could not reach it, or it broke off before sending a byte,
//   or it failed its health checks while silent) is stopped, the model loaded again and the
//   request sent once more; only when that fails too does the client get a retryable 503;
// - a stream's headers (with an SSE comment) go out as soon as the model is claimed, a keep-alive
//   (the protocol's `ping`) after every second without output, and a failure after that is exactly one error
//   event in the protocol's shape;
// - streams pass through byte for byte unless the protocol translates them (StreamRule.translate).
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import { engineError, engineUnavailable } from "./engine-error.ts";
import { minimumTokens, promptBytes } from "../models/prompt-bound.ts";
import type { Catalog, CatalogModel } from "../models/catalog.ts";
import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";
import { extractTimings, type GenerationStats } from "../observability/stats.ts";
import { EngineQueue, type Ticket } from "./engine-queue.ts";
import type { Lease, Scheduler, Slot } from "./scheduler.ts";
import type { CloudProviders } from "../models/cloud.ts";
import { upstreamUrl } from "../engines/cloud.ts";
import { CloudLeases } from "./cloud-lease.ts";

/** How one client protocol's event stream looks. */
export interface StreamRule {
  /** Called with the last chunks of an engine stream that closed: `""` when it ended whole, the
   * text that completes it when the engine leaves its last line out, or null when it stopped short. */
  ending(tail: string): string | null;
  /** The one event a stream that fails after its headers were sent ends with. */
  errorEvent(err: ApiError): string;
  /** The keep-alive written after each second without output. */
  ping: string;
  /** For a protocol whose events are not the engine's own: a translator for one stream. */
  translate?: () => StreamTranslator;
}

/** Turns one engine event stream into the client's, event by event. */
export interface StreamTranslator {
  /** One engine event's `data` → the text to send for it (`""` for nothing). */
  event(data: string): string;
  /** Once the engine's stream has closed: what ends the client's, or null when it stopped short. */
  end(): string | null;
}

/** Refuses a model a route cannot serve (checked before anything loads). */
export type ModelCheck = (model: CatalogModel) => ApiError | null;

export interface ProxyRequest {
  /** The model the client named. */
  model: string;
  /** Engine path, e.g. `/v1/chat/completions`. */
  path: string;
  /** Body to send on to the engine, as JSON. */
  body: Record<string, unknown>;
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
  reshape?: (answer: Record<string, any>) => Record<string, any>;
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

/** Chunks kept to read the final timings from: they arrive in the last event or two. */
const TAIL_CHUNKS = 4;
const PING_MS = 1000;
/** Written as soon as a stream is accepted: Bun sends a response's headers with its first bytes,
 * and an SSE comment is one every client skips. */
const OPENING = ": ping\n\n";
const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" };

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
  /** Silence (ms) after which a waiting request checks its engine's health; after three failed
   * checks in a row the engine counts as hung. 0 turns the check off. */
  hangCheckMs?: number;
  /** Requests that may wait for one engine's slots; more are refused with 503. Read at each request. */
  maxQueue?: () => number;
  /** Cloud providers: their models are forwarded to the provider, never loaded. */
  cloud?: CloudProviders;
  /** config.json `global_timeout`: the most seconds a cloud request may take. */
  cloudTimeoutS?: () => number;
  /** The context a local model runs with (or a load with these options would), for recipes that
   * take one: a prompt that cannot fit it is refused before the engine sees it. */
  contextSize?: (model: CatalogModel, loadOptions?: Record<string, unknown>) => number | undefined;
}

/** How an exchange reaches its engine. */
interface Route {
  /** The URL for an engine path on the lease's engine. */
  url(lease: Lease<CatalogModel>, path: string): string;
  /** Headers every request carries (a provider's key). */
  headers: Record<string, string>;
  /** Claims the model again after its engine was found dead; null: no replay (a provider may
   * already have received, and billed, the request). */
  reclaim: (() => Promise<Lease<CatalogModel>>) | null;
  /** The whole exchange's deadline, in ms. */
  timeoutMs?: number;
}

/** No queue: for requests that take no slot (slots, tokenize). */
const UNQUEUED: Ticket = { ready: Promise.resolve(), leave: () => {} };

const clientClosed = () => ApiError.of(E.clientClosed, "The client closed the request");

export class EngineProxy {
  private readonly queues = new WeakMap<Slot<CatalogModel>, EngineQueue>();
  private readonly cloudLeases = new CloudLeases();
  /** Each model's longest token, read from its GGUF once (the catalog makes a new object when a
   * model changes). */
  private readonly longestTokens = new WeakMap<CatalogModel, number | undefined>();

  constructor(private readonly deps: ProxyDeps) {}

  /** The queue in front of a loaded model's engine. */
  queueOf(slot: Slot<CatalogModel>): EngineQueue {
    let queue = this.queues.get(slot);
    if (!queue) {
      queue = new EngineQueue(slot.engine.slots, this.deps.maxQueue ?? (() => 512));
      this.queues.set(slot, queue);
    }
    return queue;
  }

  /** Requests waiting for a loaded model's engine. */
  queued(slot: Slot<CatalogModel>): number {
    return this.queues.get(slot)?.depth ?? 0;
  }

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
    const model = this.model(req.model, req.check);
    if (model.cloud) return this.toCloud(model, req);
    this.checkFits(model, req);
    const opts = { options: req.loadOptions, signal: req.signal };
    const lease = await this.deps.scheduler.acquire(model, opts);
    return this.forward(this.exchange(lease, req, "POST", true, this.localRoute(model, opts)), req);
  }

  /** Refuses a prompt longer than the context in any tokenisation (models/prompt-bound.ts). */
  private checkFits(model: CatalogModel, req: ProxyRequest): void {
    const context = this.deps.contextSize?.(model, req.loadOptions);
    if (!context) return;
    if (!this.longestTokens.has(model)) this.longestTokens.set(model, this.deps.catalog.longestTokenBytes(model));
    const longest = this.longestTokens.get(model);
    if (!longest) return;
    const bytes = promptBytes(req.body);
    const tokens = minimumTokens(bytes, longest);
    if (tokens > context) {
      throw ApiError.of(E.contextLengthExceeded, `The prompt is at least ${tokens} tokens (${bytes} bytes; no token of ${model.id} is longer than ${longest}), more than its context of ${context}`);
    }
  }

  /** A cloud model's request goes to its provider, the model named by the provider's own id. */
  private toCloud(model: CatalogModel, req: ProxyRequest): Promise<Response> {
    const { cloud, cloudTimeoutS } = this.deps;
    if (!cloud) throw ApiError.of(E.modelNotFound, `Model not found: ${model.id}`);
    const { baseUrl, headers, wire } = cloud.target(model.cloud!.provider);
    const messages = req.path.startsWith("/v1/messages");
    if ((wire === "anthropic") !== messages) {
      throw ApiError.of(E.cloudWireMismatch, wire === "anthropic"
        ? `Model ${model.id} is served by an Anthropic-API provider: use POST /v1/messages`
        : `Model ${model.id}'s provider speaks the OpenAI API, which counts no tokens for /v1/messages`, "model");
    }
    const lease = this.cloudLeases.lease(model, baseUrl);
    const route: Route = { url: (l, path) => upstreamUrl(l.url, path), headers, reclaim: null, timeoutMs: (cloudTimeoutS?.() ?? 600) * 1000 };
    const upstream = { ...req, body: { ...req.body, model: model.cloud!.upstreamId } };
    return this.forward(this.exchange(lease, upstream, "POST", true, route), upstream);
  }

  private localRoute(model: CatalogModel, opts: { options?: Record<string, unknown>; signal?: AbortSignal }): Route {
    return { url: (lease, path) => lease.url + path, headers: {}, reclaim: () => this.deps.scheduler.acquire(model, opts) };
  }

  /** An exchange on a claimed model; a full queue refuses it here, before any response starts. */
  private exchange(lease: Lease<CatalogModel>, req: Omit<ProxyRequest, "check">, method: "GET" | "POST", queued: boolean, route: Route): Exchange {
    try {
      return new Exchange(this.deps, lease, req, method, queued ? (slot) => this.queueOf(slot) : null, route);
    } catch (err) {
      lease.release();
      throw err;
    }
  }

  /** Forwards to the most recently used model (slots, tokenize: they name no model). */
  async toRecent(req: RecentRequest): Promise<Response> {
    const { scheduler } = this.deps;
    const id = scheduler.mostRecent;
    if (!id) throw ApiError.of(E.noModelLoaded, "No model is loaded: load a llama.cpp model first");
    const model = scheduler.list().find((s) => s.model.id === id)?.model;
    if (!model) throw ApiError.of(E.unloadedWhileWaiting, `Model ${id} was unloaded while the request waited for it`);
    const refusal = req.check(model);
    if (refusal) throw refusal;
    const opts = { signal: req.signal };
    const lease = await scheduler.acquire(model, opts);
    const full = { ...req, model: id, body: req.body ?? {}, generation: false };
    return this.forward(this.exchange(lease, full, req.method, false, this.localRoute(model, opts)), full);
  }

  private async forward(ex: Exchange, req: Omit<ProxyRequest, "check">): Promise<Response> {
    const rule = req.stream;
    if (!rule) return ex.unary();
    if (req.holdHeaders) {
      const first = await ex.send();
      if (!first.ok) {
        const err = await ex.engineError(first);
        ex.finish();
        throw err;
      }
      return ex.stream(rule, first);
    }
    return ex.stream(rule);
  }
}

/** One request's exchange with its engine: the lease it holds (replaced when the model is
 * loaded again), the engine request's abort, the hang check, and the metrics once it ends. */
class Exchange {
  /** Aborts the engine request (renewed for a replay). */
  private upstream = new AbortController();
  private readonly started = performance.now();
  private status = 0;
  private replayed = false;
  private finished = false;
  private hung = false;
  /** The route's deadline passed (the engine request was aborted for it). */
  private timedOut = false;
  private deadline: ReturnType<typeof setTimeout> | undefined;
  /** The client's stream was cancelled (Bun may do so without aborting the request's signal). */
  private cancelled = false;
  /** This request's place in the engine's queue. */
  private ticket: Ticket;
  /** A stream response whose body nobody has started reading (it ends in finish() if the client leaves). */
  private unread = false;
  private readonly onClientAbort = () => {
    this.upstream.abort();
    if (this.unread) {
      this.status = 499;
      this.finish();
    }
  };

  constructor(
    private readonly deps: ProxyDeps,
    private lease: Lease<CatalogModel>,
    private readonly req: Omit<ProxyRequest, "check">,
    private readonly method: "GET" | "POST",
    private readonly queueOf: ((slot: Slot<CatalogModel>) => EngineQueue) | null,
    private readonly route: Route,
  ) {
    if (req.signal.aborted) throw clientClosed();
    this.ticket = this.join();
    req.signal.addEventListener("abort", this.onClientAbort, { once: true });
    if (route.timeoutMs) {
      this.deadline = setTimeout(() => {
        this.timedOut = true;
        this.upstream.abort();
      }, route.timeoutMs);
    }
  }

  private timeoutError(): ApiError {
    return ApiError.of(E.backendTimeout, `${this.modelId} did not answer within ${Math.round(this.route.timeoutMs! / 1000)} s (global_timeout)`);
  }

  /** The client is gone: its request aborted, or its stream cancelled. */
  private get clientGone(): boolean {
    return this.req.signal.aborted || this.cancelled;
  }

  private join(): Ticket {
    return this.queueOf ? this.queueOf(this.lease.slot).join(this.lease.slot.model.id, this.req.signal) : UNQUEUED;
  }

  private get modelId(): string {
    return this.lease.slot.model.id;
  }

  /** Sends the request; an engine that cannot be reached is replaced and the request sent again. */
  async send(): Promise<Response> {
    for (;;) {
      try {
        await this.ticket.ready;
      } catch (err) {
        this.status = 499;
        this.finish();
        throw err;
      }
      const stopWatch = this.watch();
      try {
        const { form } = this.req;
        const res = await engineFetch(this.route.url(this.lease, this.req.path), {
          method: this.method,
          // A form sets its own multipart Content-Type, boundary included.
          headers: form ? this.route.headers : { "content-type": "application/json", ...this.route.headers },
          body: this.method !== "POST" ? undefined : form ?? JSON.stringify(this.req.body),
          signal: this.upstream.signal,
        });
        this.status = res.status;
        return res;
      } catch {
        await this.engineGone();
      } finally {
        stopWatch();
      }
    }
  }

  /** The engine did not answer: unless the client left or this was the replay, load the model
   * again and let the caller send once more; else throw the error the client gets. */
  async engineGone(): Promise<void> {
    if (this.clientGone) {
      this.status = 499;
      this.finish();
      throw clientClosed();
    }
    const id = this.modelId;
    if (this.timedOut) {
      this.status = 504;
      this.finish();
      throw this.timeoutError();
    }
    const why = this.hung ? "stopped answering its health checks" : "could not be reached";
    if (!this.route.reclaim) {
      this.status = 503;
      this.finish();
      throw engineUnavailable(id, why);
    }
    this.ticket.leave();
    await this.lease.fail();
    this.hung = false;
    this.upstream = new AbortController();
    if (this.clientGone) {
      this.status = 499;
      this.finish();
      throw clientClosed();
    }
    if (this.replayed) {
      this.status = 503;
      this.finish();
      throw engineUnavailable(id, `${why} twice`);
    }
    this.replayed = true;
    this.deps.logger.warn("Proxy", `The ${id} engine ${why}; loading it again to send the request once more`);
    try {
      this.lease = await this.route.reclaim();
    } catch (err) {
      this.ticket = UNQUEUED;
      this.status = 503;
      this.finish();
      throw err instanceof ApiError && err.status === 499 ? err : engineUnavailable(id, `${why}, and loading it again failed`);
    }
    try {
      this.ticket = this.join();
    } catch (err) {
      this.ticket = UNQUEUED;
      this.status = 503;
      this.finish();
      throw err;
    }
    // The client left while the model loaded again: nothing is to be sent.
    if (this.clientGone) {
      this.status = 499;
      this.finish();
      throw clientClosed();
    }
  }

  /** The whole answer at once, the model named as the client named it (bytes, for `raw`, as they are). */
  async unary(): Promise<Response> {
    for (;;) {
      const res = await this.send();
      const raw = this.req.raw && res.ok;
      let body: string | ArrayBuffer;
      const stopWatch = this.watch();
      try {
        body = raw ? await res.arrayBuffer() : await res.text();
      } catch {
        await this.engineGone();
        continue;
      } finally {
        stopWatch();
      }
      if (typeof body !== "string") {
        this.finish();
        return new Response(body, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "application/octet-stream" } });
      }
      if (!res.ok) {
        this.finish();
        throw engineError(res.status, body, this.modelId);
      }
      this.finish(body);
      return new Response(rewriteAnswer(body, this.req.model, this.req.reshape), {
        status: res.status,
        headers: { "content-type": res.headers.get("content-type") ?? "application/json" },
      });
    }
  }

  async engineError(res: Response): Promise<ApiError> {
    const text = await res.text().catch(() => "");
    return engineError(res.status, text, this.modelId);
  }

  /** An event stream: headers now, keep-alives while the engine is silent, the engine's events
   * as they come (or the protocol's translation of them), and one error event if it fails. */
  stream(rule: StreamRule, first?: Response): Response {
    const ex = this;
    let lastWrite = performance.now();
    let atBoundary = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let sink: { write(c: Uint8Array | string): void; flush(): void; close(): void } | undefined;
    const write = (chunk: Uint8Array | string) => {
      sink!.write(chunk);
      sink!.flush();
    };
    // The keep-alive goes only between events: never inside one the engine has half sent.
    const tick = () => {
      const now = performance.now();
      if (now - lastWrite >= PING_MS - 1 && atBoundary && !ex.finished) {
        lastWrite = now;
        try {
          write(rule.ping);
        } catch {
          return;
        }
      }
      timer = setTimeout(tick, Math.max(1, lastWrite + PING_MS - now));
    };
    ex.unread = true;
    const body = new ReadableStream({
      type: "direct",
      async pull(controller: { write(c: Uint8Array | string): void; flush(): void; close(): void }) {
        ex.unread = false;
        sink = controller;
        let tail: string | undefined;
        try {
          write(OPENING);
          timer = setTimeout(tick, PING_MS);
          let res = first ?? (await ex.send());
          for (;;) {
            if (!res.ok) throw await ex.engineError(res);
            const out = await ex.pipe(res, rule, (chunk, boundary) => {
              lastWrite = performance.now();
              atBoundary = boundary;
              write(chunk);
            });
            if (out.sent || !out.broken) {
              tail = out.tail;
              if (out.broken && ex.timedOut) throw ex.timeoutError();
              if (out.broken) throw ApiError.of(E.backendStopped, `The ${ex.modelId} engine closed the stream early`);
              break;
            }
            // Broke off before its first byte: the engine is gone, so the request may go again.
            await ex.engineGone();
            res = await ex.send();
          }
        } catch (err) {
          if (!ex.clientGone) {
            const apiErr = err instanceof ApiError ? err : ApiError.of(E.backendStopped, `The ${ex.modelId} engine stopped answering`);
            ex.status = apiErr.status;
            ex.deps.logger.warn("Proxy", `Stream from ${ex.modelId} failed: ${apiErr.message}`);
            try {
              write(rule.errorEvent(apiErr));
            } catch {
              // The client is gone too.
            }
          }
        }
        clearTimeout(timer);
        ex.finish(tail);
        try {
          controller.close();
        } catch {
          // Already closed by a client that went away.
        }
      },
      cancel() {
        clearTimeout(timer);
        ex.cancelled = true;
        ex.status = 499;
        ex.upstream.abort();
        ex.finish();
      },
    } as unknown as UnderlyingDefaultSource<Uint8Array>);
    return new Response(body, { status: 200, headers: SSE_HEADERS });
  }

  /** Reads the engine's stream into `write`, passed through or translated. `sent`: whether any
   * of it reached the client; `broken`: whether it stopped short. */
  async pipe(res: Response, rule: StreamRule, write: (chunk: Uint8Array | string, boundary: boolean) => void) {
    const reader = res.body!.getReader();
    const translator = rule.translate?.();
    // One decoder per stream: a decoder keeps a split character's bytes for its next call.
    const decoder = new TextDecoder();
    const tail: Uint8Array[] = [];
    let sent = false;
    let pending = "";
    // Whether the bytes so far end with a newline, for an event end split across chunks.
    let endsNewline = false;
    const stopWatch = this.watch();
    /** The engine request ends here without a clean finish: stop it, so its slot is really free. */
    const abandon = () => {
      reader.cancel().catch(() => {});
      this.upstream.abort();
    };
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch {
          // The engine broke off (or the client left, which aborted the engine request).
          abandon();
          if (this.clientGone) throw clientClosed();
          return { sent, broken: true, tail: undefined };
        }
        if (chunk.done) break;
        const value = chunk.value;
        this.lease.slot.lastOutput = performance.now();
        if (!sent) {
          sent = true;
          this.lease.streaming();
        }
        tail.push(value);
        if (tail.length > TAIL_CHUNKS) tail.shift();
        if (!translator) {
          const n = value.length;
          const boundary = value[n - 1] === 10 && (n > 1 ? value[n - 2] === 10 : endsNewline);
          endsNewline = value[n - 1] === 10;
          write(value, boundary);
          continue;
        }
        const blocks = (pending + decoder.decode(value, { stream: true })).split("\n\n");
        pending = blocks.pop()!;
        let out = "";
        for (const block of blocks) {
          const data = sseData(block);
          if (data !== null) out += translator.event(data);
        }
        if (out) write(out, true);
      }
    } catch (err) {
      // A write to a client that left, or a translator failing on an event: the engine is fine,
      // and its request ends here.
      abandon();
      if (this.clientGone) throw clientClosed();
      throw ApiError.of(E.unexpected, `The ${this.modelId} stream could not be passed on: ${(err as Error).message}`);
    } finally {
      stopWatch();
    }
    if (translator && pending.trim()) {
      // The last event, without its blank line (or with CRLF line ends).
      const data = sseData(pending.replace(/\r/g, ""));
      if (data !== null) write(translator.event(data), true);
    }
    const tailText = tail.map((c) => new TextDecoder().decode(c)).join("");
    const ending = translator ? translator.end() : rule.ending(tailText);
    if (ending === null) {
      abandon();
      return { sent, broken: true, tail: undefined };
    }
    if (ending) write(ending, true);
    return { sent, broken: false, tail: tailText };
  }

  /** While the engine is silent, checks its health every `hangCheckMs`; three failures in a row
   * mean it is hung, and the engine request is aborted so the exchange treats it as gone. */
  private watch(): () => void {
    const every = this.deps.hangCheckMs ?? 10_000;
    if (!every) return () => {};
    const slot = this.lease.slot;
    // The request this watch guards: a replay gets its own controller, and a check still running
    // when this watch stops must not touch it.
    const upstream = this.upstream;
    let misses = 0;
    let checking = false;
    let stopped = false;
    const timer = setInterval(async () => {
      if (checking || performance.now() - slot.lastOutput < every) return;
      checking = true;
      const ok = await slot.engine.health(every);
      checking = false;
      if (stopped) return;
      misses = ok ? 0 : misses + 1;
      if (misses >= 3) {
        clearInterval(timer);
        this.hung = true;
        upstream.abort();
      }
    }, every);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }

  /** Releases the model and records the request, once. */
  finish(tail?: string): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.deadline);
    const { metrics, stats } = this.deps;
    this.req.signal.removeEventListener("abort", this.onClientAbort);
    this.ticket.leave();
    this.lease.release();
    const modelId = this.modelId;
    const labels = { model: modelId, endpoint: this.req.endpoint };
    metrics.modelRequests.inc({ ...labels, status: String(this.status) });
    const cloud = this.lease.slot.model.cloud;
    if (cloud) metrics.cloudRequests.inc({ provider: cloud.provider, model: modelId, status: String(this.status) });
    metrics.modelRequestDuration.observe(labels, (performance.now() - this.started) / 1000);
    if (this.req.generation && tail && this.status >= 200 && this.status < 300) {
      const found = extractTimings(tail);
      if (found) {
        const rec = stats.record(found.timings, found.usage);
        if (rec.output_tokens) metrics.generatedTokens.inc({ model: modelId }, rec.output_tokens);
        if (rec.prompt_tokens) metrics.promptTokens.inc({ model: modelId }, rec.prompt_tokens);
        if (rec.cache_tokens) metrics.cacheTokens.inc({ model: modelId }, rec.cache_tokens);
        if (rec.time_to_first_token !== null) metrics.timeToFirstToken.observe({ model: modelId }, rec.time_to_first_token);
      }
    }
  }
}

/** The data of one SSE block (its `data:` lines joined), or null for a comment-only block. */
function sseData(block: string): string | null {
  let data: string | null = null;
  for (const line of block.split("\n")) {
    if (line.startsWith("data:")) {
      const part = line.slice(line[5] === " " ? 6 : 5);
      data = data === null ? part : `${data}\n${part}`;
    }
  }
  return data;
}

/** Non-streaming answers report the model by the name the client used, reshaped as the route asks. */
function rewriteAnswer(text: string, model: string, reshape?: (answer: Record<string, any>) => Record<string, any>): string {
  if (!reshape && !text.includes('"model"')) return text;
  try {
    const json = JSON.parse(text);
    if (json && typeof json === "object" && !Array.isArray(json)) {
      if ("model" in json) json.model = model;
      return JSON.stringify(reshape ? reshape(json) : json);
    }
  } catch {
    // Not JSON: pass it on as the engine sent it.
  }
  return text;
}
