// Durable JSON state files (config.json, aliases.json, user_models.json, recipe_options.json).
// Writes go to a temp file in the same directory, are fsynced, then renamed over the target, so a
// crash mid-write leaves either the old file or the new one, never a torn one. A file that exists
// but does not parse is reported, never silently replaced.
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, writeSync, rmSync } from "node:fs";
import { dirname, basename, join } from "node:path";
import { changed } from "./generation.ts";

export class CorruptStateFileError extends Error {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`${path} is not valid JSON (${reason}). Fix or move it aside; it was left untouched.`);
    this.name = "CorruptStateFileError";
  }
}

/** Reads a JSON state file; `fallback` when it does not exist, CorruptStateFileError when unreadable. */
export function readJsonFile<V>(path: string, fallback: V): V {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return fallback;
    throw err;
  }
  try {
    return JSON.parse(text) as V;
  } catch (err) {
    throw new CorruptStateFileError(path, (err as Error).message);
  }
}

let tempCounter = 0;

/** Removes the temp files of atomic writes a killed process left in `dir` (`.<name>.<pid>.<n>.tmp`
 * whose pid no longer runs); returns their names. */
export function removeStaleTemps(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = /^\..+\.(\d+)\.\d+\.tmp$/.exec(name);
    if (!m || Number(m[1]) === process.pid || running(Number(m[1]))) continue;
    rmSync(join(dir, name), { force: true });
    removed.push(name);
  }
  return removed;
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Atomically replaces `path` with `value` as pretty-printed JSON (`compact`: on one line, for a
 * cache no one reads by hand). A state file's write counts as a change to what views are built
 * from; a cache's (`quiet`) does not. */
export function writeJsonFileAtomic(path: string, value: unknown, { compact = false, quiet = false } = {}): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
  const temp = join(dir, `.${basename(path)}.${process.pid}.${++tempCounter}.tmp`);
  const fd = openSync(temp, "w", 0o600);
  try {
    writeSync(fd, (compact ? JSON.stringify(value) : JSON.stringify(value, null, 2)) + "\n");
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(temp, path);
  if (!quiet) changed();
}
