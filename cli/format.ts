// Terminal output: tables, colour only on a terminal (and never with NO_COLOR), progress bars
// on a terminal and plain lines when piped.
import { readSse } from "../lib/sse.ts";

const useColour = (stream: NodeJS.WriteStream) => stream.isTTY === true && !process.env.NO_COLOR;

function paint(code: number, text: string, stream: NodeJS.WriteStream = process.stdout): string {
  return useColour(stream) ? `\x1b[${code}m${text}\x1b[0m` : text;
}

export const green = (t: string) => paint(32, t);
export const yellow = (t: string) => paint(33, t);
export const red = (t: string, stream: NodeJS.WriteStream = process.stderr) => paint(31, t, stream);
export const bold = (t: string) => paint(1, t);
export const dim = (t: string) => paint(2, t);

/** Visible width of a cell, ignoring colour codes. */
const width = (s: string) => s.replace(/\x1b\[\d+m/g, "").length;

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i] ?? ""))));
  const line = (cells: string[]) => cells.map((c, i) => c + " ".repeat(widths[i]! - width(c))).join("  ").trimEnd();
  return [bold(line(headers)), ...rows.map(line)].join("\n");
}

export function bytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(0)} kB`;
  return `${n} B`;
}

/** Progress for one label: a redrawn bar on a terminal, a line per 10% step when piped. */
export class ProgressReporter {
  private lastStep = -1;
  private readonly tty = process.stderr.isTTY === true;

  update(label: string, done: number, total: number): void {
    const pct = total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 0;
    if (this.tty) {
      const cols = 30;
      const filled = Math.round((pct / 100) * cols);
      process.stderr.write(`\r${label} [${"#".repeat(filled)}${"-".repeat(cols - filled)}] ${String(pct).padStart(3)}% ${bytes(done)}/${bytes(total)}\x1b[K`);
      return;
    }
    const step = Math.floor(pct / 10);
    if (step !== this.lastStep) {
      this.lastStep = step;
      process.stderr.write(`${label}: ${pct}% (${bytes(done)} of ${bytes(total)})\n`);
    }
  }

  /** Starts a new line for the next label. */
  next(): void {
    if (this.tty) process.stderr.write("\n");
    this.lastStep = -1;
  }
}

/** A Server-Sent Events body's events with their JSON data (`[DONE]` passed as is). */
export async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: any }> {
  for await (const { event, data } of readSse(body)) yield { event, data: data === "[DONE]" ? data : JSON.parse(data) };
}
