// The CLI's questions: numbered menus, a typed line, a hidden key. A menu or a typed line reads
// standard input whatever it is, as Lemonade's CLI reads it: a terminal, or the answers piped in
// (`printf '1\n' | lemonade run`); input that has ended is refused at once. A few questions have a
// documented answer off a terminal instead (their callers check `interactive`).
import type { Interface } from "node:readline";
import { CliError } from "./client.ts";

/** Whether a person can answer: standard input is a terminal. */
export const interactive = () => process.stdin.isTTY === true;

// One reader for all of a command's questions: a reader per question would drop the characters
// typed ahead of the next one.
let reader: Interface | undefined;
let lines: AsyncIterator<string> | undefined;

/** The next line of standard input; null when input ends (Ctrl-D). */
async function nextLine(): Promise<string | null> {
  // node:readline is loaded on the first question: `lemonade serve` asks none (bench memory).
  reader ??= (await import("node:readline")).createInterface({ input: process.stdin, terminal: false });
  lines ??= reader[Symbol.asyncIterator]();
  const next = await lines.next();
  return next.done ? null : String(next.value);
}

/** Writes `question` and returns the line typed, trimmed; null when input ends (Ctrl-D). */
export async function askLine(question: string): Promise<string | null> {
  process.stdout.write(question);
  return (await nextLine())?.trim() ?? null;
}

/** The rest of piped input, line by line, after the answers the questions took: read by the same
 * reader, which holds what was piped beyond them. */
export async function* remainingLines(): AsyncGenerator<string> {
  for (let line = await nextLine(); line !== null; line = await nextLine()) yield line;
}

/** Lets go of standard input (the next program, an agent, reads it). */
export function endQuestions(): void {
  reader?.close();
  reader = undefined;
  lines = undefined;
}

/** A number typed at "Enter number: "; errors as Lemonade's CLI words them. */
export async function askNumber(): Promise<number> {
  const answer = await askLine("Enter number: ");
  if (answer === null) throw new CliError("Failed to read selection.");
  if (!/^\d+$/.test(answer)) throw new CliError("Invalid selection.");
  return Number(answer);
}

/** A numbered menu: `zero` is option 0 when given; returns the chosen index into `options`, or
 * -1 for option 0. */
export async function chooseOne(title: string, options: string[], zero?: string): Promise<number> {
  process.stdout.write(`${title}\n${zero ? `  0) ${zero}\n` : ""}${options.map((o, i) => `  ${i + 1}) ${o}\n`).join("")}`);
  const n = await askNumber();
  if (zero && n === 0) return -1;
  if (n < 1 || n > options.length) throw new CliError("Selection out of range.");
  return n - 1;
}

/** A line typed with the terminal's echo off (an API key), Ctrl-C leaving. */
export async function askSecret(question: string): Promise<string> {
  process.stdout.write(question);
  const stdin = process.stdin;
  stdin.setRawMode(true);
  stdin.resume();
  let typed = "";
  try {
    return await new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        for (const ch of chunk.toString("utf8")) {
          if (ch === "\r" || ch === "\n" || ch === "\x04") return resolve(typed);
          if (ch === "\x03") return reject(new CliError("Interrupted.", 130));
          if (ch === "\x7f" || ch === "\b") typed = typed.slice(0, -1);
          else typed += ch;
        }
      };
      stdin.on("data", onData);
      stdin.once("end", () => resolve(typed));
    });
  } finally {
    stdin.removeAllListeners("data");
    stdin.setRawMode(false);
    stdin.pause();
    // The Enter typed was not echoed: move to the next line.
    process.stdout.write("\n");
  }
}
