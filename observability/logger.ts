// The server's log: formatted lines to the console, plus a ring buffer of recent entries and live
// subscribers for the /logs/stream WebSocket. Sequence numbers let a client resume without gaps.

import { wallClock } from "../lib/local-time.ts";
import { RANK, type Severity } from "../lib/log-level.ts";

export type { Severity };

export interface LogEntry {
  seq: number;
  timestamp: string;
  severity: Severity;
  tag: string;
  line: string;
}

export type LogListener = (entry: LogEntry) => void;

export const LOG_RETENTION = 5000;

function formatTimestamp(d: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  const w = wallClock(d);
  return `${w.year}-${p(w.month)}-${p(w.day)} ${p(w.hours)}:${p(w.minutes)}:${p(w.seconds)}.${p(w.milliseconds, 3)}`;
}

export class Logger {
  private readonly entries: LogEntry[] = [];
  private readonly listeners = new Set<LogListener>();
  private seq = 0;

  constructor(
    private level: Severity = "Info",
    // console.log/error, not process.stdout/stderr.write: those load Bun's node:stream code on
    // first use, about 3 MB that stays resident (bench memory); console's writes are as
    // synchronous, and one string argument is written as it is.
    private readonly echo: (line: string, severity: Severity) => void = (line, severity) => (RANK[severity] >= RANK.Warning ? console.error : console.log)(line),
  ) {}

  /** Changes the level lines are kept and echoed from (POST /internal/set `log_level`). */
  setLevel(level: Severity): void {
    this.level = level;
  }

  log(severity: Severity, tag: string, message: string): void {
    if (RANK[severity] < RANK[this.level]) return;
    const timestamp = formatTimestamp(new Date());
    const entry: LogEntry = { seq: ++this.seq, timestamp, severity, tag, line: `${timestamp} [${severity}] (${tag}) ${message}` };
    this.entries.push(entry);
    if (this.entries.length > LOG_RETENTION) this.entries.shift();
    this.echo(entry.line, severity);
    for (const listener of this.listeners) listener(entry);
  }

  debug = (tag: string, message: string) => this.log("Debug", tag, message);
  info = (tag: string, message: string) => this.log("Info", tag, message);
  warn = (tag: string, message: string) => this.log("Warning", tag, message);
  error = (tag: string, message: string) => this.log("Error", tag, message);

  /** Retained entries after `afterSeq` (all of them when null). */
  snapshot(afterSeq: number | null = null): LogEntry[] {
    return afterSeq === null ? [...this.entries] : this.entries.filter((e) => e.seq > afterSeq);
  }

  subscribe(listener: LogListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
