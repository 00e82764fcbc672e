// What every benchmark shares: the work folder with the tiny test model, a server in its own
// process (as in use, so the client's work is not counted as the server's), streams timed from the
// client's side, request rates with keep-alive clients, and a process's resident memory.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { defaultCacheDir } from "../../config/config.ts";
import { LLAMACPP } from "../../engines/llamacpp.ts";
import { cachedBinary } from "../../engines/source-build.ts";
import { freePort } from "../../engines/process.ts";
import { engineFetch } from "../../runtime/transport.ts";
import { makeTestModels, TEST_MODELS } from "../make-test-models.ts";

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
export const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
export const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

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
  post(path: string, body: unknown): Promise<Response>;
  /** The engine URL of a loaded model, from /v1/health. */
  engineUrl(model: string): Promise<string>;
  stop(): Promise<void>;
}

/** `lemonade serve` in its own process, the FAKE engine first on its PATH. */
export async function spawnServer(w: Work, env: Record<string, string> = {}): Promise<ServerProcess> {
  const fakeDir = join(import.meta.dir, "..", "fake-engine");
  const port = freePort();
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "cli", "main.ts"), "serve", "--port", String(port)], {
    env: {
      ...process.env,
      PATH: `${fakeDir}:${dirname(process.execPath)}:${process.env.PATH}`,
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
  for (let i = 0; i < 200 && !(await fetch(`${base}/live`).then((r) => r.ok, () => false)); i++) await Bun.sleep(50);
  const post = (path: string, body: unknown) => fetch(`${base}${path}`, { method: "POST", body: JSON.stringify(body) });
  return {
    base,
    pid: child.pid,
    post,
    async engineUrl(model) {
      const health = await (await fetch(`${base}/v1/health`)).json();
      return health.all_models_loaded.find((m: { model_name: string }) => m.model_name === model).backend_url;
    },
    async stop() {
      child.kill("SIGTERM");
      await child.exited;
    },
  };
}

/** Loads a model through the server; throws with the server's answer when it fails. */
export async function load(server: ServerProcess, body: Record<string, unknown>): Promise<void> {
  const res = await server.post("/v1/load", body);
  if (!res.ok) throw new Error(`load failed: ${await res.text()}`);
}

export interface StreamTiming {
  ttftMs: number;
  totalMs: number;
  events: number;
  tokensPerSecond: number;
}

/** One streamed chat completion, timed from the client: first content event, last, and how many. */
export async function timeStream(url: string, model: string, maxTokens: number): Promise<StreamTiming> {
  const body = JSON.stringify({
    model,
    messages: [{ role: "user", content: "Tell me a story." }],
    max_tokens: maxTokens,
    ignore_eos: true,
    seed: 1,
    stream: true,
  });
  const t0 = performance.now();
  // The same retry the server uses: llama-server may close a pooled connection as it is reused.
  const res = await engineFetch(url, { method: "POST", body, headers: { "content-type": "application/json" } });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let first = 0;
  let last = 0;
  let events = 0;
  let rest = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    // Events can straddle reads: count only whole ones, carrying the partial rest over.
    const parts = (rest + decoder.decode(value, { stream: true })).split("\n\n");
    rest = parts.pop()!;
    const n = parts.filter((e) => e.includes('"content":"')).length;
    if (n > 0) {
      last = performance.now();
      if (!first) first = last;
      events += n;
    }
  }
  const totalMs = performance.now() - t0;
  return { ttftMs: first - t0, totalMs, events, tokensPerSecond: ((events - 1) * 1000) / (last - first) };
}

/** Requests per second `clients` keep-alive clients get from `url` in `seconds`. */
export async function rate(url: string, seconds: number, clients = 8): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let count = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const res = await fetch(url);
        if (!res.ok) throw new Error(`${url} answered ${res.status}`);
        await res.arrayBuffer();
        count++;
      }
    }),
  );
  return count / seconds;
}

/** A process's resident memory in MB (Linux /proc). */
export function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN);
  return kb / 1024;
}

export { TEST_MODELS };
