// What `lemonade cleanup-cache` frees: partial downloads nobody is writing, engine builds and
// sources of versions no recipe uses any more, scratch folders of builds whose process is gone,
// and Hugging Face blobs no snapshot links to. It plans first (for --dry-run) and removes only
// what it planned.
import { existsSync, lstatSync, readdirSync, readlinkSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { RECIPES, serverRecipes } from "../engines/recipes.ts";

export interface CleanupItem {
  kind: "partial download" | "stale engine build" | "build leftovers" | "orphaned blob";
  path: string;
  bytes: number;
}

/** A partial written to within this long may belong to a running download. */
const ACTIVE_MS = 60_000;

const list = (dir: string) => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};

function sizeOf(path: string): number {
  const st = lstatSync(path);
  if (!st.isDirectory()) return st.isFile() ? st.size : 0;
  return list(path).reduce((n, name) => n + sizeOf(join(path, name)), 0);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Every symlink target below a folder (snapshot files point into `blobs/`). */
function linkTargets(dir: string, into: Set<string>): void {
  for (const name of list(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (st.isSymbolicLink()) into.add(resolve(dirname(path), readlinkSync(path)));
    else if (st.isDirectory()) linkTargets(path, into);
  }
}

export function planCleanup(cacheDir: string, hfCacheDir: string, now = Date.now()): CleanupItem[] {
  const items: CleanupItem[] = [];
  const add = (kind: CleanupItem["kind"], path: string) => items.push({ kind, path, bytes: sizeOf(path) });

  const current = new Map<string, Set<string>>();
  for (const recipe of serverRecipes(RECIPES)) {
    for (const build of Object.values(recipe.builds ?? {})) {
      const versions = current.get(build.engine.recipe) ?? new Set<string>();
      versions.add(build.engine.version);
      current.set(build.engine.recipe, versions);
    }
  }
  for (const top of ["bin", "src"]) {
    // `bin` may be a link to a shared build folder: what it points at is not this cache's to prune.
    const root = join(cacheDir, top);
    if (!existsSync(root) || lstatSync(root).isSymbolicLink()) continue;
    for (const recipe of list(root)) {
      const versions = current.get(recipe);
      if (!versions) continue;
      for (const version of list(join(root, recipe))) if (!versions.has(version)) add("stale engine build", join(root, recipe, version));
    }
  }
  for (const name of list(join(cacheDir, "build"))) {
    const pid = Number(/-(\d+)-\d+$/.exec(name)?.[1]);
    if (!pid || !alive(pid)) add("build leftovers", join(cacheDir, "build", name));
  }

  for (const repo of list(hfCacheDir).filter((n) => n.startsWith("models--"))) {
    const blobs = join(hfCacheDir, repo, "blobs");
    const linked = new Set<string>();
    linkTargets(join(hfCacheDir, repo, "snapshots"), linked);
    for (const blob of list(blobs)) {
      const path = join(blobs, blob);
      if (blob.endsWith(".incomplete")) {
        if (now - statSync(path).mtimeMs > ACTIVE_MS) add("partial download", path);
      } else if (!linked.has(path)) add("orphaned blob", path);
    }
  }
  return items;
}

/** Removes the planned items; returns the bytes freed. */
export function applyCleanup(items: CleanupItem[]): number {
  let freed = 0;
  for (const item of items) {
    rmSync(item.path, { recursive: true, force: true });
    freed += item.bytes;
  }
  return freed;
}
