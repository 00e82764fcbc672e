// How one request reaches its engine: the fetch, its place in the engine's queue, the hang
// watchdog, the deadline, and the replay policy: an engine found dead (the request could not reach
// it, or it broke off before sending a byte, or it failed its health checks while silent) is
// stopped, the model loaded again and the request sent once more; only when that fails too does
// the client get a retryable 503. A pool's member found dead (or answering 502, 503, 504) is
// marked down and the request goes to the next member instead. Every failure here is thrown as
// the ApiError the client gets.
import { E } from "../spec/errors.ts";
import { ApiError } from "../lib/api-error.ts";
import type { Clock } from "../lib/clock.ts";
import type { Json } from "../lib/json.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { Logger } from "../observability/logger.ts";
import { engineUnavailable } from "./engine-error.ts";
import type { Ticket } from "./engine-queue.ts";
import type { Lease } from "./scheduler.ts";

/** fetch() to an engine, retried once when a kept-alive connection turns out to be closed: the
 * engine (cpp-httplib) may drop an idle pooled connection just as it is reused, and then the
 * request never reached it, so sending it again is safe. */
export async function engineFetch(url: string, init: RequestInit, send: typeof fetch = fetch): Promise<Response> {
  try {
    return await send(url, init);
  } catch (err) {
    const closed = /ECONNRESET|socket connection was closed|ConnectionClosed/i.test(String((err as Error)?.message ?? err));
    if (!closed || init.signal?.aborted) throw err;
    return send(url, { ...init, keepalive: false });
  }
}

/** How a request goes again once its engine was found dead. */
export interface Replay {
  /** Claims an engine again: the model loaded again, or a pool's next member. A retryable
   * ApiError it throws (a pool with no member left) is the client's answer as it is. */
  claim(): Promise<Lease<CatalogModel>>;
  /** How many times one request may be sent again. */
  times: number;
  /** What the log line says is done about it. */
  how: string;
  /** Answers that count as the engine gone (a pool member's 502, 503, 504); without it only a
   * request that fails, breaks off or hangs does. */
  failsOver?: (status: number) => boolean;
}

/** How an exchange reaches its engine. */
export interface Route {
  /** The URL for an engine path on the lease's engine. */
  url(lease: Lease<CatalogModel>, path: string): string;
  /** Headers every request to the lease's engine carries (a provider's key). */
  headers(lease: Lease<CatalogModel>): Record<string, string>;
  /** null: no replay (a provider may already have received, and billed, the request). */
  replay: Replay | null;
  /** The whole exchange's deadline, in ms. */
  timeoutMs?: number;
  /** The model's place in its engine's queue; null for requests that take no slot (slots, tokenize). */
  join: ((lease: Lease<CatalogModel>, signal: AbortSignal) => Ticket) | null;
}

export interface TransportDeps {
  logger: Logger;
  clock: Clock;
  /** Silence (ms) after which a waiting request checks its engine's health; after three failed
   * checks in a row the engine counts as hung. 0 turns the check off. */
  hangCheckMs: number;
  /** The HTTP client (tests pass an in-process engine). */
  fetch: typeof fetch;
  /** How log lines and error messages name a model: the id the API lists it by. */
  name(model: CatalogModel): string;
}

/** What the transport sends. */
export interface Outgoing {
  path: string;
  body: Json;
  form?: FormData;
  method: "GET" | "POST";
  /** The client's request, whose abort cancels the engine request. */
  signal: AbortSignal;
}

/** Why the engine request was aborted, strongest first: a client that left outranks a passed
 * deadline, which outranks a hung engine. */
type AbortCause = "client" | "deadline" | "hung";
const RANK: Record<AbortCause, number> = { client: 3, deadline: 2, hung: 1 };

const NO_TICKET: Ticket = { ready: Promise.resolve(), leave: () => {} };

export const clientClosed = () => ApiError.of(E.clientClosed, "The client closed the request");

export class Transport {
  /** Aborts the engine request (renewed for a replay). */
  private upstream = new AbortController();
  private cause: AbortCause | null = null;
  /** Times the request was sent again. */
  private replays = 0;
  private ticket: Ticket;
  private readonly stopDeadline: () => void;

  /** Joins the engine's queue; a full queue (or a client already gone) throws here, before any
   * response starts. */
  constructor(
    private readonly deps: TransportDeps,
    public lease: Lease<CatalogModel>,
    private readonly out: Outgoing,
    private readonly route: Route,
  ) {
    if (out.signal.aborted) throw clientClosed();
    this.ticket = this.join();
    this.stopDeadline = route.timeoutMs ? deps.clock.after(route.timeoutMs, () => this.abort("deadline")) : () => {};
  }

  /** The model as log lines and error messages name it (the id the API lists it by). */
  get modelName(): string {
    return this.deps.name(this.lease.instance.model);
  }

  /** The client is gone: its request aborted, or its stream cancelled. */
  get clientGone(): boolean {
    return this.out.signal.aborted || this.cause === "client";
  }

  /** Stops the engine request, remembering the strongest reason given (none: the exchange is
   * done with it). */
  abort(cause?: AbortCause): void {
    if (cause && (!this.cause || RANK[cause] > RANK[this.cause])) this.cause = cause;
    this.upstream.abort();
  }

  /** Sends the request; an engine that cannot be reached is replaced and the request sent again. */
  async send(): Promise<Response> {
    for (;;) {
      await this.ticket.ready;
      const stopWatch = this.watch();
      let res: Response;
      try {
        const { form, method } = this.out;
        const headers = this.route.headers(this.lease);
        res = await engineFetch(this.route.url(this.lease, this.out.path), {
          method,
          // A form sets its own multipart Content-Type, boundary included.
          headers: form ? headers : { "content-type": "application/json", ...headers },
          body: method !== "POST" ? undefined : form ?? JSON.stringify(this.out.body),
          signal: this.upstream.signal,
        }, this.deps.fetch);
      } catch (err) {
        await this.engineGone(this.cause ? undefined : `could not be reached (${(err as Error)?.message ?? err})`);
        continue;
      } finally {
        stopWatch();
      }
      if (!this.route.replay?.failsOver?.(res.status)) return res;
      await res.body?.cancel().catch(() => {});
      await this.engineGone(`answered HTTP ${res.status}`);
    }
  }

  /** The engine did not answer (`detail`: how, when known): unless the client left, the deadline
   * passed or the replays are used up, claim an engine again and let the caller send once more;
   * else throw the error the client gets. */
  async engineGone(detail?: string): Promise<void> {
    if (this.clientGone) throw clientClosed();
    if (this.cause === "deadline") throw this.timeoutError();
    const id = this.modelName;
    const why = this.cause === "hung" ? "stopped answering its health checks" : "could not be reached";
    const { replay } = this.route;
    if (!replay) throw engineUnavailable(id, why);
    this.ticket.leave();
    this.ticket = NO_TICKET;
    await this.lease.fail(detail ?? why);
    this.cause = null;
    this.upstream = new AbortController();
    if (this.clientGone) throw clientClosed();
    if (this.replays >= replay.times) throw engineUnavailable(id, `${why} twice`);
    this.replays++;
    this.deps.logger.warn("Proxy", `The ${this.modelName} engine ${detail ?? why}; ${replay.how}`);
    try {
      this.lease = await replay.claim();
    } catch (err) {
      if (err instanceof ApiError && (err.status === 499 || err.extras.retryable)) throw err;
      throw engineUnavailable(id, `${why}, and loading it again failed`);
    }
    this.ticket = this.join();
    // The client left while the model loaded again: nothing is to be sent.
    if (this.clientGone) throw clientClosed();
  }

  /** The error for a stream that stopped short after some of it was sent. */
  stoppedShort(): ApiError {
    if (this.cause === "deadline") return this.timeoutError();
    return ApiError.of(E.backendStopped, `The ${this.modelName} engine closed the stream early`);
  }

  /** Engine output arrived: the engine is alive. */
  heard(): void {
    this.lease.instance.lastOutput = this.deps.clock.now();
  }

  /** While the engine is silent, checks its health every `hangCheckMs`; three failures in a row
   * mean it is hung, and the engine request is aborted so the exchange treats it as gone. */
  watch(): () => void {
    const { clock, hangCheckMs: every } = this.deps;
    if (!every) return () => {};
    const instance = this.lease.instance;
    // The request this watch guards: a replay gets its own controller, and a check still running
    // when this watch stops must not touch it.
    const upstream = this.upstream;
    let misses = 0;
    let stopped = false;
    let cancel = () => {};
    const check = async () => {
      if (clock.now() - instance.lastOutput >= every) {
        const ok = await instance.engine.health(every);
        if (stopped) return;
        misses = ok ? 0 : misses + 1;
        if (misses >= 3) {
          if (upstream === this.upstream) this.abort("hung");
          return;
        }
      }
      cancel = clock.after(every, check);
    };
    cancel = clock.after(every, check);
    return () => {
      stopped = true;
      cancel();
    };
  }

  /** Lets go of the engine: the deadline, the queue slot and the lease; idempotent. */
  close(): void {
    this.stopDeadline();
    this.ticket.leave();
    this.lease.release();
  }

  private join(): Ticket {
    return this.route.join ? this.route.join(this.lease, this.out.signal) : NO_TICKET;
  }

  private timeoutError(): ApiError {
    return ApiError.of(E.backendTimeout, `${this.modelName} did not answer within ${Math.round(this.route.timeoutMs! / 1000)} s (global_timeout)`);
  }
}
