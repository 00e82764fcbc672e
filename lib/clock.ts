// The time a component reads and the timers it sets, passed in so that tests drive keep-alives,
// health checks and deadlines by moving a fake clock instead of waiting.

export interface Clock {
  /** Milliseconds on a monotonic scale (performance.now()'s for the system clock). */
  now(): number;
  /** Calls `fn` once, `ms` from now; returns what cancels it. */
  after(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};
