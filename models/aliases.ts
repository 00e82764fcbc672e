// Model aliases: stable names (`production-llm`) bound to catalog models, persisted in aliases.json
// in the cache directory so they survive restarts.
import { join } from "node:path";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";

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
    return [...this.map].map(([alias, target]) => ({ alias, target })).sort((a, b) => a.alias.localeCompare(b.alias));
  }

  /** The model an alias names, or the name itself when it is no alias. */
  resolve(name: string): string {
    return this.map.get(name) ?? name;
  }

  set(alias: string, target: string): void {
    const next = new Map(this.map).set(alias, target);
    this.persist(next);
    this.map.set(alias, target);
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
