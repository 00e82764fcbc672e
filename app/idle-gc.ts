// Memory handed back once the server goes quiet: JavaScriptCore collects as memory is allocated,
// so the garbage of a burst stays resident while nothing runs, and so does the machine code and
// bytecode compiled for it. Bun.shrink() asks the VM, when next idle, to drop all compiled code
// (recompiled from source when next called), collect fully and return malloc's free pages; a bare
// full collection keeps the code. Also once after start-up, whose code mostly never runs again
// (bench memory, npm start: idle 1.7 MB lower, and the JIT code a load leaves is dropped).
export const QUIET_MS = 2000;

/** Drops compiled code and garbage; where Bun no longer has shrink(), a full collection. */
export function shrinkNow(): void {
  if (typeof Bun.shrink === "function") Bun.shrink();
  else Bun.gc(true);
}

/** Watches a request count; after start-up and after each burst, once it stopped moving for
 * QUIET_MS, shrinks once. */
export function collectWhenIdle(requests: () => number): () => void {
  let seen = requests();
  let dirty = true;
  const timer = setInterval(() => {
    const now = requests();
    if (now !== seen) {
      seen = now;
      dirty = true;
    } else if (dirty) {
      dirty = false;
      shrinkNow();
    }
  }, QUIET_MS);
  timer.unref();
  return () => clearInterval(timer);
}
