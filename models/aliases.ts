// Model aliases: stable names (`production-llm`) bound to catalog models, persisted in aliases.json
// in the cache directory so they survive restarts.
import { join } from "node:path";
import { ApiError } from "../lib/api-error.ts";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import { byCodeUnits } from "../lib/order.ts";
import { E } from "../spec/errors.ts";

/** An alias whose target leads back to it: a 409, in Lemonade's words. */
export class AliasCycleError extends ApiError {
  constructor(alias: string, target: string) {
    super(E.aliasConflict, `Circular alias dependency detected: ${alias} -> ${target}`, "alias");
  }
}

export class AliasStore {
  private readonly path: string;
  private readonly map: Map<string, string>;

  constructor(cacheDir: string) {
    this.path = join(cacheDir, "aliases.json");
    const raw = readJsonFile<Record<string, unknown>>(this.path, {});
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw new Error(`${this.path} must hold a JSON object of alias -> model name`);
    }
    this.map = new Map(Object.entries(raw).filter((e): e is [string, string] => typeof e[1] === "string"));
  }

  list(): { alias: string; target: string }[] {
    return [...this.map].map(([alias, target]) => ({ alias, target })).sort((a, b) => byCodeUnits(a.alias, b.alias));
  }

  /** The model an alias names, following aliases of aliases to the end; the name itself when it
   * is no alias. (Cycles cannot be saved; a hand-edited one stops where it would repeat.) */
  resolve(name: string): string {
    const seen = new Set<string>();
    let current = name;
    while (this.map.has(current) && !seen.has(current)) {
      seen.add(current);
      current = this.map.get(current)!;
    }
    return current;
  }

  /** Binds an alias; refused (AliasCycleError) when the target leads back to it. */
  set(alias: string, target: string): void {
    // Walk from the target through the other aliases: reaching this alias again is a cycle.
    const seen = new Set<string>();
    for (let at: string | undefined = target; at !== undefined && !seen.has(at); at = this.map.get(at)) {
      if (at === alias) throw new AliasCycleError(alias, target);
      seen.add(at);
    }
    const next = new Map(this.map).set(alias, target);
    this.persist(next);
    this.map.set(alias, target);
  }

  has(alias: string): boolean {
    return this.map.has(alias);
  }

  /** Removes an alias; false when there was none. */
  remove(alias: string): boolean {
    if (!this.map.has(alias)) return false;
    const next = new Map(this.map);
    next.delete(alias);
    this.persist(next);
    this.map.delete(alias);
    return true;
  }

  // Disk first: if the write fails the in-memory view stays what is on disk.
  private persist(next: Map<string, string>): void {
    writeJsonFileAtomic(this.path, Object.fromEntries(next));
  }
}
