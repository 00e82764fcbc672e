// The time a component reads and the timers it sets, passed in so that tests drive idle eviction,
// keep-alives, health checks and deadlines by moving a fake clock instead of waiting.

export interface Clock {
  /** ms since the epoch. */
  now(): number;
  /** Calls `fn` once, `ms` from now; returns what cancels it. */
  after(ms: number, fn: () => void): () => void;
  /** Calls `fn` every `ms` until the returned function is called; keeps no process alive. */
  every(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
  every(ms, fn) {
    const timer = setInterval(fn, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};
