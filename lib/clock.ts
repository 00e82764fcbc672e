// Time as a part reads it, so that a test can hand it a fake clock and move time by hand.

export interface Clock {
  /** ms since the epoch. */
  now(): number;
  /** Calls `fn` every `ms` until the returned function is called; keeps no process alive. */
  every(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  every(ms, fn) {
    const timer = setInterval(fn, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};
