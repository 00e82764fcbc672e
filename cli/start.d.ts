// The types of cli/start.js (npm start's launcher), for the tests that import it.

/** Where npm start's bundle lives: LEMONADE_START_DIR, else .cache/start in the checkout at `root`. */
export function bundleDir(env: Record<string, string | undefined>, root: string): string;

/** `stale`: why the bundle in `dir` must not run for the checkout at `root` under the Bun
 * `bunRevision`, or null, with `bundle` the file to run. */
export function checkBundle(dir: string, root: string, bunRevision: string): { stale: string } | { stale: null; bundle: string };
