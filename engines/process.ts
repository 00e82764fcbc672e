// Supervises one engine child process: spawn with an explicit argv (never a shell), capture its
// output line by line, wait for it to answer health checks (failing fast if it exits first), and
// stop it with SIGTERM then SIGKILL. Every live child is killed when the server process exits,
// and reported to a SpawnRecord so the next server can stop what a killed one left behind.
import type { Subprocess } from "bun";
import type { Json } from "../lib/json.ts";
import { readLines } from "../lib/lines.ts";
import { EngineStartError, type LaunchPlan, type RunningEngine } from "./engine.ts";

export type LineSink = (line: string, stream: "stdout" | "stderr") => void;

/** Where spawned engines are written down (engines/orphans.ts keeps them in engines.json):
 * before the spawn (by a token the child carries in its environment), then with its pid. */
export interface SpawnRecord {
  intend(token: string, binary: string): void;
  started(token: string, pid: number): void;
  remove(token: string): void;
}

/** The environment variable an engine child carries its record's token in. */
export const ENGINE_TOKEN_VAR = "LEMONADE_ENGINE_TOKEN";

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

/** Starts the plan's engine on a free loopback port and waits until its health path answers. */
export async function startEngine(plan: LaunchPlan, onLine: LineSink, record?: SpawnRecord): Promise<RunningEngine> {
  const attached = await plan.attach?.();
  const port = freePort();
  let engine: EngineProcess;
  try {
    engine = new EngineProcess({ argv: [...plan.argv(port), ...(attached?.args ?? [])], env: plan.env, onLine, record }, `http://127.0.0.1:${port}`, plan.healthPath, plan.slots, plan.backend);
  } catch (err) {
    attached?.close();
    throw err;
  }
  if (attached) {
    engine.detail = () => attached.detail();
    void engine.exited.then(() => attached.close());
  }
  try {
    await engine.waitReady(plan.readyTimeoutMs);
  } catch (err) {
    await engine.stop(1000);
    throw err;
  }
  attached?.ready?.();
  return engine;
}

export interface SpawnOptions {
  argv: string[];
  env?: Record<string, string>;
  onLine: LineSink;
  record?: SpawnRecord;
}

/** A line in which an engine reports why it stops: llama.cpp, whisper.cpp and sd.cpp print
 * `error: ...`, Python engines `...Error: ...`, a C++ engine an uncaught exception's `terminate called ...`. */
const ENGINE_ERROR_LINE = /(^|\s|\]|:)(error|fatal)\b|Error:|unknown argument|invalid (argument|parameter)|terminate called/i;

export class EngineProcess implements RunningEngine {
  readonly child: Subprocess<"ignore", "pipe", "pipe">;
  readonly exited: Promise<number>;
  readonly argv: string[];
  detail?: () => Json;
  private stopping = false;
  private readonly recent: string[] = [];
  /** The first line that reads as the engine's own error (the cause; later ones are its
   * consequences): engines print it just before a long usage text (sd-server's runs past a
   * hundred lines), which would push it out of `recent`. */
  private errorLine: string | undefined;
  private readonly pumps: Promise<void>[];
  /** Settles at the next line of output: engines print as they become ready, so a readiness
   * poll wakes on output instead of sleeping through it. */
  private nextLine = Promise.withResolvers<void>();

  constructor(
    opts: SpawnOptions,
    readonly url: string,
    private readonly healthPath: string,
    readonly slots = 1,
    readonly backend?: string,
  ) {
    this.argv = opts.argv;
    const token = crypto.randomUUID();
    opts.record?.intend(token, opts.argv[0]!);
    try {
      this.child = Bun.spawn(opts.argv, {
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { ...process.env, ...opts.env, [ENGINE_TOKEN_VAR]: token },
      });
    } catch (err) {
      opts.record?.remove(token);
      throw err;
    }
    live.add(this.child);
    opts.record?.started(token, this.child.pid);
    const sink: LineSink = (line, stream) => {
      this.nextLine.resolve();
      this.nextLine = Promise.withResolvers<void>();
      this.recent.push(line);
      if (this.recent.length > 20) this.recent.shift();
      if (this.errorLine === undefined && ENGINE_ERROR_LINE.test(line)) this.errorLine = line.trim();
      opts.onLine(line, stream);
    };
    this.pumps = [this.pump(this.child.stdout, "stdout", sink), this.pump(this.child.stderr, "stderr", sink)];
    this.exited = this.child.exited.then((code) => {
      live.delete(this.child);
      opts.record?.remove(token);
      return code;
    });
  }

  get pid(): number {
    return this.child.pid;
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  get lastLines(): string {
    return this.recent.slice(-8).join("\n");
  }

  /** Why the engine failed, in its own words: its error line first, then its last lines. */
  get failure(): string {
    const tail = this.lastLines;
    return this.errorLine && !tail.includes(this.errorLine) ? `${this.errorLine}\n${tail}` : tail;
  }

  private async pump(stream: ReadableStream<Uint8Array>, name: "stdout" | "stderr", sink: LineSink) {
    for await (const line of readLines(stream)) if (line.trim()) sink(line, name);
  }

  async health(timeoutMs = 1000): Promise<boolean> {
    try {
      // `Connection: close`: a kept-alive poll connection would hold one of the engine's few HTTP
      // threads idle for its keep-alive timeout, stalling the first real requests.
      const res = await fetch(this.url + this.healthPath, { signal: AbortSignal.timeout(timeoutMs), headers: { connection: "close" } });
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false;
    }
  }

  /** Polls the health path until it answers 200. Fails as soon as the process exits, or after `timeoutMs`. */
  async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exitCode: number | null = null;
    void this.exited.then((c) => (exitCode = c));
    let delay = 5;
    while (Date.now() < deadline) {
      if (exitCode !== null) {
        // The output the engine printed as it exited is read to its end first.
        await Promise.race([Promise.all(this.pumps), Bun.sleep(1000)]);
        throw new EngineStartError(`engine exited with code ${exitCode} before it was ready:\n${this.failure}`);
      }
      if (await this.health()) return;
      // Short first polls: a small model is ready in well under a second.
      await Promise.race([Bun.sleep(delay), this.exited, this.nextLine.promise]);
      delay = Math.min(delay * 2, 50);
    }
    throw new EngineStartError(`engine was not ready after ${Math.round(timeoutMs / 1000)} s:\n${this.failure}`);
  }

  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
