// Supervises one engine child process: spawn with an explicit argv (never a shell), capture its
// output line by line, wait for it to answer health checks (failing fast if it exits first), and
// stop it with SIGTERM then SIGKILL. Every live child is killed when the server process exits,
// and recorded in the registry so the next server can stop what a killed one left behind.
import type { Subprocess } from "bun";
import type { EngineRegistry } from "./orphans.ts";

export type LineSink = (line: string, stream: "stdout" | "stderr") => void;

const live = new Set<Subprocess>();
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

/** Whether a process with this pid is running (signal 0 probes without touching it). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A free loopback port, from the kernel. */
export function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

export class EngineStartError extends Error {}

/** A request an engine cannot be configured for (bad backend, reserved flag, not installed). */
export class EngineConfigError extends Error {}

/** Refuses user flags the server sets itself (`option` names the setting they came from). */
export function checkReservedArgs(option: string, reserved: string[], args: string[]): void {
  for (const a of args) {
    const flag = a.split("=")[0]!;
    if (reserved.includes(flag)) {
      throw new EngineConfigError(`${option} may not contain ${flag}: the server sets it (reserved: ${reserved.join(" ")})`);
    }
  }
}

export interface RunningEngine {
  process: EngineProcess;
  /** Base URL of the engine's HTTP server, e.g. `http://127.0.0.1:40123`. */
  url: string;
  argv: string[];
}

/** Starts an engine on a free loopback port and waits until `healthPath` answers. */
export async function startEngine(
  argvFor: (port: number) => string[],
  healthPath: string,
  onLine: LineSink,
  readyTimeoutMs: number,
  registry?: EngineRegistry,
): Promise<RunningEngine> {
  const port = freePort();
  const argv = argvFor(port);
  const proc = new EngineProcess({ argv, onLine, registry });
  const url = `http://127.0.0.1:${port}`;
  try {
    await proc.waitReady(`${url}${healthPath}`, readyTimeoutMs);
  } catch (err) {
    await proc.stop(1000);
    throw err;
  }
  return { process: proc, url, argv };
}

/** The lines of a byte stream as they arrive (the last one even without a newline); ends
 * quietly when the pipe closes under a dying process. */
export async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = "";
  try {
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
      const lines = (rest + decoder.decode(chunk, { stream: true })).split("\n");
      rest = lines.pop()!;
      yield* lines;
    }
  } catch {
    // The pipe closes when the child dies; nothing more to read.
  }
  if (rest) yield rest;
}

export interface SpawnOptions {
  argv: string[];
  env?: Record<string, string>;
  onLine: LineSink;
  registry?: EngineRegistry;
}

export class EngineProcess {
  readonly child: Subprocess<"ignore", "pipe", "pipe">;
  readonly exited: Promise<number>;
  private stopping = false;
  private readonly recent: string[] = [];
  /** Settles at the next line of output: engines print as they become ready, so a readiness
   * poll wakes on output instead of sleeping through it. */
  private nextLine = Promise.withResolvers<void>();

  constructor(opts: SpawnOptions) {
    this.child = Bun.spawn(opts.argv, {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, ...opts.env },
    });
    live.add(this.child);
    opts.registry?.add(this.child.pid, opts.argv[0]!);
    const sink: LineSink = (line, stream) => {
      this.nextLine.resolve();
      this.nextLine = Promise.withResolvers<void>();
      this.recent.push(line);
      if (this.recent.length > 20) this.recent.shift();
      opts.onLine(line, stream);
    };
    void this.pump(this.child.stdout, "stdout", sink);
    void this.pump(this.child.stderr, "stderr", sink);
    this.exited = this.child.exited.then((code) => {
      live.delete(this.child);
      opts.registry?.remove(this.child.pid);
      return code;
    });
  }

  get pid(): number {
    return this.child.pid;
  }

  /** Whether the process was asked to stop (an exit after this is no crash). */
  get isStopping(): boolean {
    return this.stopping;
  }

  /** The last lines the engine printed, for error messages. */
  get lastLines(): string {
    return this.recent.slice(-8).join("\n");
  }

  private async pump(stream: ReadableStream<Uint8Array>, name: "stdout" | "stderr", sink: LineSink) {
    for await (const line of readLines(stream)) if (line.trim()) sink(line, name);
  }

  /** Polls `url` until it answers 200. Fails as soon as the process exits, or after `timeoutMs`. */
  async waitReady(url: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exitCode: number | null = null;
    void this.exited.then((c) => (exitCode = c));
    let delay = 5;
    while (Date.now() < deadline) {
      if (exitCode !== null) {
        throw new EngineStartError(`engine exited with code ${exitCode} before it was ready:\n${this.lastLines}`);
      }
      try {
        // `Connection: close`: a kept-alive poll connection would hold one of the engine's few HTTP
        // threads idle for its keep-alive timeout, stalling the first real requests.
        const res = await fetch(url, { signal: AbortSignal.timeout(1000), headers: { connection: "close" } });
        if (res.ok) return;
        await res.body?.cancel();
      } catch {
        // Not listening yet.
      }
      // Short first polls: a small model is ready in well under a second.
      await Promise.race([Bun.sleep(delay), this.exited, this.nextLine.promise]);
      delay = Math.min(delay * 2, 50);
    }
    throw new EngineStartError(`engine was not ready after ${Math.round(timeoutMs / 1000)} s:\n${this.lastLines}`);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
