// Memory handed back once the server goes quiet, in two steps. JavaScriptCore collects as memory
// is allocated, so the garbage of a burst stays resident while nothing runs: a full collection
// once requests stopped for QUIET_MS returns it and keeps the compiled code. The machine code and
// bytecode compiled for the burst stay too; Bun.shrink() asks the VM, when next idle, to drop all
// compiled code (recompiled from source when next called), collect fully and return malloc's free
// pages. The drop is worth 3-4 MB after 10,000 requests (npm start's bundle, two runs each, read
// 5 s after: 6.9-7.2 MB over idle with collections alone, 3.7-3.8 with it), but the next request
// recompiles what it runs: a chat's first token came 7.5 ms later after a 5 s pause that dropped
// the code than after one that did not (bench proxy's pause pairs, 15 each: added TTFT p50 9.2 ms
// against 1.6, the same as back to back). So the code is dropped only once the server has been quiet for DROP_CODE_MS,
// which the pauses of a conversation (reading an answer, writing the next turn) mostly stay
// under, and also once after start-up, whose code mostly never runs again (npm start: idle 1.7 MB
// lower).
export const QUIET_MS = 2000;
export const DROP_CODE_MS = 30_000;

/** What a quiet server does next: collect its garbage, or also drop its compiled code. */
export type IdleStep = "collect" | "drop-code";

/** Decides, at each check QUIET_MS apart, from the request count, what to hand back: a full
 * collection at the first check that saw no request since the last one, the compiled code once
 * DROP_CODE_MS passed without one (each once per quiet spell), and the code at the first quiet
 * check after start-up. */
export class IdlePolicy {
  private quietChecks = 0;
  private collected = false;
  private dropped = false;
  private afterStart = true;

  constructor(private seen: number) {}

  check(requests: number): IdleStep | null {
    if (requests !== this.seen) {
      this.seen = requests;
      this.quietChecks = 0;
      this.collected = this.dropped = false;
      return null;
    }
    this.quietChecks++;
    if (this.afterStart) {
      this.afterStart = false;
      this.collected = this.dropped = true;
      return "drop-code";
    }
    if (!this.dropped && this.quietChecks * QUIET_MS >= DROP_CODE_MS) {
      this.collected = this.dropped = true;
      return "drop-code";
    }
    if (!this.collected) {
      this.collected = true;
      return "collect";
    }
    return null;
  }
}

/** Drops compiled code and garbage; where Bun no longer has shrink(), a full collection. */
export function shrinkNow(): void {
  if (typeof Bun.shrink === "function") Bun.shrink();
  else Bun.gc(true);
}

/** Watches a request count and hands memory back as IdlePolicy says. */
export function collectWhenIdle(requests: () => number): () => void {
  const policy = new IdlePolicy(requests());
  const timer = setInterval(() => {
    const step = policy.check(requests());
    if (step === "drop-code") shrinkNow();
    else if (step === "collect") Bun.gc(true);
  }, QUIET_MS);
  timer.unref();
  return () => clearInterval(timer);
}
