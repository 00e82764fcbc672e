// A clock tests move by hand: timers run only when advance() passes their time, in time order,
// with the promise chains they start settled in between, so a test chooses every ordering and
// waits for nothing.
import type { Clock } from "../../lib/clock.ts";

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
  /** Set for a repeating timer: its period. */
  every?: number;
}

/** A few turns of the event loop (no time passes): lets awaited work settle. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
}

export class FakeClock implements Clock {
  private seq = 0;
  private timers: Timer[] = [];

  constructor(private time = 1_000_000) {}

  now(): number {
    return this.time;
  }

  /** Repeating timers set and not cancelled. */
  get repeating(): number {
    return this.timers.filter((t) => t.every !== undefined).length;
  }

  after(ms: number, fn: () => void): () => void {
    return this.add({ at: this.time + ms, seq: this.seq++, fn });
  }

  every(ms: number, fn: () => void): () => void {
    return this.add({ at: this.time + ms, seq: this.seq++, fn, every: ms });
  }

  private add(timer: Timer): () => void {
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time on by `ms`, running each timer due on the way. */
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    for (;;) {
      await settle();
      const due = this.timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.time = due.at;
      if (due.every) due.at += due.every;
      else this.timers = this.timers.filter((t) => t !== due);
      due.fn();
    }
    this.time = until;
    await settle();
  }
}
