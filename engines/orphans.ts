// Engines outliving a server that was killed outright (SIGKILL gives no chance to stop them):
// each server records its children in `<cache>/engines.json`, and the next server to start there
// stops the ones whose server is gone. The record is written before the spawn, with a token the
// child carries in its environment, so a server killed between spawn and pid still left a trace
// the next one can find the engine by.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import { ENGINE_TOKEN_VAR, isAlive, type SpawnRecord } from "./process.ts";

/** One engine a server started (or was about to). */
interface EngineRecord {
  server: number;
  binary: string;
  /** Null until the spawn returned. */
  pid: number | null;
  /** In the engine's environment as LEMONADE_ENGINE_TOKEN (absent in records of older servers). */
  token?: string;
}

/** The executable a live process runs, from /proc (Linux); null elsewhere or when gone. */
function commandOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? null;
  } catch {
    return null;
  }
}

/** Live processes by the engine token in their environment (Linux /proc; others' are unreadable). */
function processesByToken(): Map<string, number> {
  const found = new Map<string, number>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  const prefix = `${ENGINE_TOKEN_VAR}=`;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      for (const v of readFileSync(`/proc/${entry}/environ`, "utf8").split("\0")) {
        if (v.startsWith(prefix)) found.set(v.slice(prefix.length), Number(entry));
      }
    } catch {
      // Gone, or another user's.
    }
  }
  return found;
}

export class EngineRegistry implements SpawnRecord {
  private readonly path: string;

  constructor(cacheDir: string) {
    this.path = join(cacheDir, "engines.json");
  }

  private read(): EngineRecord[] {
    const rows = readJsonFile<EngineRecord[]>(this.path, []);
    return Array.isArray(rows) ? rows : [];
  }

  intend(token: string, binary: string): void {
    writeJsonFileAtomic(this.path, [...this.read().filter((r) => r.token !== token), { server: process.pid, pid: null, binary, token }]);
  }

  started(token: string, pid: number): void {
    writeJsonFileAtomic(
      this.path,
      this.read().map((r) => (r.token === token ? { ...r, pid } : r)),
    );
  }

  remove(token: string): void {
    writeJsonFileAtomic(this.path, this.read().filter((r) => r.token !== token));
  }

  /** Stops engines left by servers that no longer run; returns their pids. A process is only
   * touched when it carries the record's token (or, for a tokenless record, runs the recorded
   * binary), so a recycled pid is left alone. */
  reapOrphans(): number[] {
    const rows = this.read();
    const dead = rows.filter((r) => !isAlive(r.server));
    if (!dead.length) return [];
    const byToken = dead.some((r) => r.token) ? processesByToken() : new Map<string, number>();
    const reaped: number[] = [];
    for (const r of dead) {
      const pid = r.token ? byToken.get(r.token) : r.pid !== null && isAlive(r.pid) && commandOf(r.pid) === r.binary ? r.pid : undefined;
      if (pid === undefined) continue;
      process.kill(pid, "SIGKILL");
      reaped.push(pid);
    }
    writeJsonFileAtomic(this.path, rows.filter((r) => isAlive(r.server)));
    return reaped;
  }
}
