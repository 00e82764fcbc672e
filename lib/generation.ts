// A counter of changes to anything a cached view (the model listings) is built from: state files
// written, models loaded or unloaded, downloads finished or removed, the extra-models folder
// changed. One per process, shared by every server in it: a change anywhere only costs a rebuild.

let value = 0;

/** Something a cached view depends on changed. */
export function changed(): void {
  value++;
}

/** The current count; a cached view built at another count is stale. */
export function generation(): number {
  return value;
}
