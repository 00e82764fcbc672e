// Lookups shared within one listing build. A listing asks the same questions of the disk for
// every model it lists (is this backend installed, which one does `auto` pick, where are this
// checkpoint's files): a few thousand file-system calls for the full catalog. A build runs
// synchronously, so nothing can change between its first answer and its last from this server's
// side; each answer is worked out once per build, and nothing outlives it.

let scope: Map<unknown, Map<unknown, unknown>> | null = null;

/** Runs `build` with lookups shared (see memoInBuild); nested builds share the outer one's. */
export function withinBuild<T>(build: () => T): T {
  if (scope) return build();
  scope = new Map();
  try {
    return build();
  } finally {
    scope = null;
  }
}

/** Whether a build is running: a lookup that pays off only across a build's many questions
 * (listing a folder once to answer for each of its entries) is skipped outside one. */
export function building(): boolean {
  return scope !== null;
}

/** `compute()`'s answer for `key` in `table`, worked out once per build; outside a build, each
 * call computes afresh. `table` names the question (a function or a constant of its module). */
export function memoInBuild<V>(table: unknown, key: unknown, compute: () => V): V {
  if (!scope) return compute();
  let answers = scope.get(table);
  if (!answers) scope.set(table, (answers = new Map()));
  if (answers.has(key)) return answers.get(key) as V;
  const value = compute();
  answers.set(key, value);
  return value;
}
