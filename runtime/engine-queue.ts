// The requests one engine is serving, and those waiting for it: as many go to the engine at once
// as it has slots (more would only queue inside it, out of sight); the rest wait here in arrival
// order, up to a bound, beyond which a request is refused with 503 `server_busy` and Retry-After
// (Ollama's OLLAMA_MAX_QUEUE, 512 by default). Joining is synchronous, so a full queue is
// refused before a stream's headers go out; waiting happens after.
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";

export interface Ticket {
  /** Settles once the request may go to the engine (rejects if its client leaves first). */
  ready: Promise<void>;
  /** Frees the slot, or leaves the line; idempotent. */
  leave(): void;
}

interface Waiter {
  go(): void;
  ticket: Ticket;
}

export class EngineQueue {
  private active = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    private readonly slots: number,
    private readonly maxQueue: () => number,
    /** How a refusal names the model (the id /v1/models lists it by), asked only on a refusal. */
    private readonly modelName: () => string,
  ) {}

  /** Requests waiting for a slot. */
  get depth(): number {
    return this.waiting.length;
  }

  /** Slots serving a request now. */
  get inUse(): number {
    return this.active;
  }

  join(signal?: AbortSignal): Ticket {
    if (signal?.aborted) throw ApiError.of(E.clientClosed, "The client closed the request");
    if (this.active < this.slots && this.waiting.length === 0) {
      this.active++;
      return this.ticket(Promise.resolve(), () => true);
    }
    if (this.waiting.length >= this.maxQueue()) {
      throw ApiError.of(E.serverBusy, `${this.modelName()} has ${this.waiting.length} requests waiting already; try again shortly`).with({
        retryable: true,
        retryAfterS: 1,
      });
    }
    const granted = Promise.withResolvers<void>();
    let isGranted = false;
    const ticket = this.ticket(granted.promise, () => isGranted);
    const waiter: Waiter = {
      go: () => {
        isGranted = true;
        granted.resolve();
      },
      ticket,
    };
    this.waiting.push(waiter);
    // A client that leaves while waiting leaves the line; once granted, the slot is freed by the
    // request's end, when the engine has let go of it too.
    signal?.addEventListener(
      "abort",
      () => {
        if (isGranted) return;
        granted.reject(ApiError.of(E.clientClosed, "The client closed the request while it waited for the engine"));
        ticket.leave();
      },
      { once: true },
    );
    // A ticket nobody awaits (its request failed before sending) must not raise an unhandled rejection.
    granted.promise.catch(() => {});
    return ticket;
  }

  private ticket(ready: Promise<void>, granted: () => boolean): Ticket {
    let left = false;
    const ticket: Ticket = {
      ready,
      leave: () => {
        if (left) return;
        left = true;
        if (!granted()) {
          const at = this.waiting.findIndex((w) => w.ticket === ticket);
          if (at >= 0) this.waiting.splice(at, 1);
          return;
        }
        // The slot passes straight to the next waiter, so no later arrival can overtake it.
        const next = this.waiting.shift();
        if (next) next.go();
        else this.active--;
      },
    };
    return ticket;
  }
}
