// Listings served at memory speed: a route's JSON is built once and served as the same bytes
// until something it is built from changes (lib/generation.ts: state files, loads, downloads, the
// extra-models folder). A short lifetime bounds what a change behind the server's back (files
// removed from the Hugging Face cache by hand) can leave stale.
import { withinBuild } from "../lib/build-scope.ts";
import { generation } from "../lib/generation.ts";

const LIFETIME_MS = 2000;

interface Entry {
  generation: number;
  builtAt: number;
  body: string;
}

/** Per server context (tests run several in one process). */
const views = new WeakMap<object, Map<string, Entry>>();

/** The JSON response for `key`, rebuilt by `build` when stale. */
export function cachedJson(ctx: object, key: string, build: () => unknown): Response {
  let entries = views.get(ctx);
  if (!entries) views.set(ctx, (entries = new Map()));
  const now = performance.now();
  let entry = entries.get(key);
  if (!entry || entry.generation !== generation() || now - entry.builtAt > LIFETIME_MS) {
    // Read the count first: a change while building makes the next request build again.
    const at = generation();
    entry = { generation: at, builtAt: now, body: JSON.stringify(withinBuild(build)) };
    entries.set(key, entry);
  }
  return new Response(entry.body, { headers: { "content-type": "application/json;charset=utf-8" } });
}
