// The exclusive gate a running job with model-touching steps holds (docs/dev/job-system.md,
// "Exclusivity and queuing"): while it is held, every load, unload and model request waits at the
// scheduler, except the holder's own. Who the caller is travels with its async context
// (AsyncLocalStorage), as Lemonade keys its gate by the worker thread.
import { AsyncLocalStorage } from "node:async_hooks";
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";

export class ExclusiveGate {
  private holderId: string | null = null;
  private opened = Promise.withResolvers<void>();
  private readonly caller = new AsyncLocalStorage<string>();

  constructor() {
    this.opened.resolve();
  }

  /** The job holding the gate; null when it is open. */
  get holder(): string | null {
    return this.holderId;
  }

  /** Runs `fn` as `holder`: what it calls passes the gate while that holder holds it. */
  as<T>(holder: string, fn: () => T): T {
    return this.caller.run(holder, fn);
  }

  /** Settles once the caller may touch models: at once when the gate is open or the caller holds it. */
  async pass(signal?: AbortSignal): Promise<void> {
    while (this.holderId !== null && this.caller.getStore() !== this.holderId) {
      if (signal?.aborted) throw ApiError.of(E.clientClosed, "The client closed the request while it waited behind an exclusive job");
      const aborted = signal ? new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true })) : null;
      await (aborted ? Promise.race([this.opened.promise, aborted]) : this.opened.promise);
    }
  }

  /** Closes the gate for everyone but `holder`. */
  close(holder: string): void {
    if (this.holderId === null) this.opened = Promise.withResolvers<void>();
    this.holderId = holder;
  }

  /** Opens it: whatever waited goes on. */
  open(): void {
    this.holderId = null;
    this.opened.resolve();
  }
}
