// Starting Lemonade Server from an app: spawns `lemonade serve --port 0 --ready-json --parent-pid
// <this process>` and resolves with its address once it answers. A client of the executable only:
// it imports nothing of the server's and uses Node's APIs only, so it runs on Bun as it is and on
// Node.js compiled (`bun build embed/index.ts --target node`; pass `command` there).
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

export interface LemonadeOptions {
  /** The command that starts Lemonade, before `serve`: the single executable (`["/usr/bin/lemonade"]`),
   * or by default this checkout's `bun cli/main.ts`. */
  command?: string[];
  /** Extra `serve` flags (`--extra-models-dir`, `--max-loaded-models`, `--log-level`, ...). */
  args?: string[];
  /** The server's environment (default: this process's). */
  env?: Record<string, string | undefined>;
  /** A key to require (passed in the environment, not on the command line where `ps` shows it),
   * `"generate"` for a fresh random one, or absent for whatever `LEMONADE_API_KEY` the environment has. */
  apiKey?: string | "generate";
  /** How long to wait for the ready line (default 30 s). */
  timeoutMs?: number;
  /** Each line the server logs (stderr), e.g. for the app's own log. */
  onLog?: (line: string) => void;
}

export interface EmbeddedLemonade {
  /** Base URL, e.g. `http://127.0.0.1:40123`; the OpenAI API is at `${url}/v1`. */
  url: string;
  port: number;
  /** The server's process id. */
  pid: number;
  /** The key every API route requires (send `Authorization: Bearer <key>`), or null when none. */
  apiKey: string | null;
  process: ChildProcess;
  /** Stops the server and its engines; resolves once it has exited. */
  stop(): Promise<void>;
}

interface ReadyLine {
  port: number;
  url: string;
  pid: number;
  api_key: string | null;
}

const isReady = (v: unknown): v is ReadyLine => {
  const r = v as ReadyLine;
  return typeof r === "object" && r !== null && typeof r.port === "number" && typeof r.url === "string" && typeof r.pid === "number";
};

function defaultCommand(): string[] {
  const main = fileURLToPath(new URL("../cli/main.ts", import.meta.url));
  // Under Bun, the Bun running this; under Node.js, the `bun` on PATH.
  return [typeof Bun !== "undefined" ? process.execPath : "bun", main];
}

/** Lines of a stream, as they complete. */
function onLines(stream: NodeJS.ReadableStream, each: (line: string) => void): void {
  let buffered = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      each(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
    }
  });
}

/** Starts Lemonade Server for this process: it exits when this process does, however it dies. */
export function startLemonade(options: LemonadeOptions = {}): Promise<EmbeddedLemonade> {
  const [exe, ...pre] = options.command ?? defaultCommand();
  const env = { ...(options.env ?? process.env) };
  const flags = ["serve", "--port", "0", "--ready-json", "--parent-pid", String(process.pid), ...(options.args ?? [])];
  if (options.apiKey === "generate") {
    delete env.LEMONADE_API_KEY;
    flags.push("--generate-api-key");
  } else if (options.apiKey !== undefined) env.LEMONADE_API_KEY = options.apiKey;
  const child = spawn(exe!, [...pre, ...flags], { env, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const tail: string[] = [];
  onLines(child.stderr!, (line) => {
    tail.push(line);
    if (tail.length > 20) tail.shift();
    options.onLog?.(line);
  });
  return new Promise<EmbeddedLemonade>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGTERM");
      reject(new Error(`Lemonade did not report ready within ${options.timeoutMs ?? 30_000} ms\n${tail.join("\n")}`));
    }, options.timeoutMs ?? 30_000);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start Lemonade (${exe}): ${err.message}`));
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`Lemonade exited before it was ready (${signal ?? `code ${code}`})\n${tail.join("\n")}`));
    });
    onLines(child.stdout!, (line) => {
      let ready: unknown;
      try {
        ready = JSON.parse(line);
      } catch {
        return;
      }
      if (!isReady(ready)) return;
      clearTimeout(timer);
      resolve({
        url: ready.url,
        port: ready.port,
        pid: ready.pid,
        apiKey: ready.api_key,
        process: child,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
          await exited;
        },
      });
    });
  });
}
