// What every benchmark shares: the work folder with the tiny test model, a server in its own
// process (as in use, so the client's work is not counted as the server's), streams timed from the
// client's side, request rates with keep-alive clients, and a process's resident memory.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DROP_CODE_MS, QUIET_MS } from "../../app/idle-gc.ts";
import { SERVER_RUNTIME_ENV } from "../../cli/runtime-env.ts";
import { defaultCacheDir } from "../../config/config.ts";
import { LLAMACPP } from "../../engines/llamacpp.ts";
import { cachedBinary } from "../../engines/source-build.ts";
import { freePort } from "../../engines/process.ts";
import { timeChatStream, type StreamTiming } from "../../lib/bench.ts";
import { engineFetch } from "../../runtime/transport.ts";
import { fakeEnginePath } from "../fake-engine/path.ts";
import { makeTestModels, TEST_MODELS } from "../make-test-models.ts";

export { fmt, median, pairedRatio, percentile, rate, type Figure, type StreamTiming } from "../../lib/bench.ts";

export interface Work {
  binary: string;
  work: string;
  extra: string;
  cacheDir: string;
  modelPath: string;
  cleanup(): void;
}

/** A scratch folder: an extra-models folder with the tiny chat model, a cache that shares the built engines. */
export function setup(): Work {
  const binary = cachedBinary(defaultCacheDir(), LLAMACPP);
  if (!binary) throw new Error("llama-server is not built: run `bun scripts/build-engines.ts llamacpp`");
  const models = makeTestModels(join(import.meta.dir, "..", "..", ".cache", "test-models"));
  const work = mkdtempSync(join(tmpdir(), "lemonade-bench-"));
  const extra = join(work, "extra");
  const cacheDir = join(work, "cache");
  Bun.spawnSync(["mkdir", "-p", extra, cacheDir]);
  copyFileSync(join(models, TEST_MODELS.chat), join(extra, TEST_MODELS.chat));
  symlinkSync(join(defaultCacheDir(), "bin"), join(cacheDir, "bin"));
  return { binary, work, extra, cacheDir, modelPath: join(extra, TEST_MODELS.chat), cleanup: () => rmSync(work, { recursive: true, force: true }) };
}

export interface ServerProcess {
  base: string;
  pid: number;
  /** From spawn to the first /live that answers. */
  startMs: number;
  post(path: string, body: unknown): Promise<Response>;
  /** The engine URL of a loaded model, from /v1/health. */
  engineUrl(model: string): Promise<string>;
  stop(): Promise<void>;
}

/** `lemonade serve` in its own process (from the sources, or `command`: npm start's launcher, the
 * single executable), the FAKE engine first on its PATH; settles once /live answers. Run by Bun,
 * it gets the runtime settings npm start's script sets; the single executable sets its own. */
export async function spawnServer(w: Work, env: Record<string, string> = {}, command = [process.execPath, join(import.meta.dir, "..", "..", "cli", "main.ts")]): Promise<ServerProcess> {
  const port = freePort();
  const t0 = performance.now();
  const child = Bun.spawn([...command, "serve", "--port", String(port)], {
    env: {
      ...process.env,
      ...(command[0] === process.execPath ? SERVER_RUNTIME_ENV : {}),
      PATH: fakeEnginePath(join(w.work, "bin")),
      LEMONADE_CACHE_DIR: w.cacheDir,
      LEMONADE_EXTRA_MODELS_DIR: w.extra,
      LEMONADE_MAX_LOADED_MODELS: "-1",
      LEMONADE_LOG_LEVEL: "warning",
      ...env,
    },
    stdout: "ignore",
    stderr: "inherit",
  });
  const base = `http://127.0.0.1:${port}`;
  // Polled often: the time to the first answer is bench start's figure.
  await untilUp(`${base}/live`, { tries: 4000, stepMs: 2 });
  const startMs = performance.now() - t0;
  const post = (path: string, body: unknown) => fetch(`${base}${path}`, { method: "POST", body: JSON.stringify(body) });
  return {
    base,
    pid: child.pid,
    startMs,
    post,
    async engineUrl(model) {
      // Health names it by its listed id, whatever name the bench gave.
      const listed = (await (await fetch(`${base}/v1/models/${encodeURIComponent(model)}`)).json()).id;
      const health = await (await fetch(`${base}/v1/health`)).json();
      return health.all_models_loaded.find((m: { model_name: string }) => m.model_name === listed).backend_url;
    },
    async stop() {
      child.kill("SIGTERM");
      await child.exited;
    },
  };
}

/** How long after its last request a server has handed back all it will (app/idle-gc.ts): it
 * checks every QUIET_MS whether requests stopped and drops its compiled code once DROP_CODE_MS
 * passed without one, at most one check later; the drop itself takes a moment more. */
export const SETTLED_MS = DROP_CODE_MS + 2 * QUIET_MS + 1000;

/** Returns once `url` answers 200, or after `tries` attempts `stepMs` apart. */
export async function untilUp(url: string, { tries = 200, stepMs = 25 } = {}): Promise<void> {
  for (let i = 0; i < tries && !(await fetch(url).then((r) => r.ok, () => false)); i++) await Bun.sleep(stepMs);
}

/** Milliseconds from sending a request to the end of its answer's body; throws on an error status. */
export async function timedFetch(url: string, init?: RequestInit): Promise<number> {
  const started = performance.now();
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  return performance.now() - started;
}

/** Loads a model through the server; throws with the server's answer when it fails. */
export async function load(server: ServerProcess, body: Record<string, unknown>): Promise<void> {
  const res = await server.post("/v1/load", body);
  if (!res.ok) throw new Error(`load failed: ${await res.text()}`);
}

/** One streamed chat completion, timed from the client (lib/bench.ts), with the retry the server
 * itself uses: llama-server may close a pooled connection as it is reused. */
export function timeStream(url: string, model: string, maxTokens: number): Promise<StreamTiming> {
  const body = { model, messages: [{ role: "user", content: "Tell me a story." }], max_tokens: maxTokens, ignore_eos: true, seed: 1 };
  return timeChatStream(url, body, { send: engineFetch as typeof fetch });
}

/** A process's resident memory in MB (Linux /proc). */
export function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN);
  return kb / 1024;
}

/** The part of a process's resident memory that is its own (JS heap, malloc, JIT code) rather
 * than pages of the files it maps (Bun's executable), in MB (Linux /proc). */
export function anonymousMb(pid: number): number {
  const kb = Number(/Anonymous:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? NaN);
  return kb / 1024;
}

/** A process's resident memory by kind, in MB (Linux /proc smaps): pages of the files it maps (Bun's
 * executable, a bundle's), the JIT's machine code (JavaScriptCore's one executable anonymous
 * region) and the rest of its own memory (JS heap, malloc, bytecode). */
export function residentKinds(pid: number): { files: number; jitCode: number; heapAndMalloc: number } {
  const out = { files: 0, jitCode: 0, heapAndMalloc: 0 };
  let kind: keyof typeof out = "heapAndMalloc";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const range = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (range) kind = range[2]!.startsWith("/") ? "files" : range[1]!.includes("x") ? "jitCode" : "heapAndMalloc";
    else if (line.startsWith("Rss:")) out[kind] += Number(/(\d+)/.exec(line)![1]) / 1024;
  }
  return out;
}

export { TEST_MODELS };
