// Engines outliving a server that was killed outright (SIGKILL gives no chance to stop them):
// each server records its children in `<cache>/engines.json`; the next server to start there
// stops the ones whose server is gone.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import { isAlive, type SpawnRecord } from "./process.ts";

/** One engine a server started. */
interface EngineRecord {
  server: number;
  pid: number;
  binary: string;
}

/** The executable a live process runs, from /proc (Linux); null elsewhere or when gone. */
function commandOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? null;
  } catch {
    return null;
  }
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

  add(pid: number, binary: string): void {
    writeJsonFileAtomic(this.path, [...this.read().filter((r) => r.pid !== pid), { server: process.pid, pid, binary }]);
  }

  remove(pid: number): void {
    writeJsonFileAtomic(this.path, this.read().filter((r) => r.pid !== pid));
  }

  /** Stops engines left by servers that no longer run; returns their pids. Only a process still
   * running the recorded binary is touched, so a recycled pid is left alone. */
  reapOrphans(): number[] {
    const rows = this.read();
    const reaped: number[] = [];
    const kept = rows.filter((r) => {
      if (isAlive(r.server)) return true;
      if (isAlive(r.pid) && commandOf(r.pid) === r.binary) {
        process.kill(r.pid, "SIGKILL");
        reaped.push(r.pid);
      }
      return false;
    });
    if (kept.length !== rows.length) writeJsonFileAtomic(this.path, kept);
    return reaped;
  }
}
