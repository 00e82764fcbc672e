// Benchmarks that compare the server against the engine reached directly, in one run.
//   bun run bench load [runs]   POST /v1/load -> ready, next to llama-server alone -> healthy
//   bun run bench proxy [runs]  streaming through the server vs. the engine directly: tokens/s
//                               ratio and added TTFT on llama-server, per-chunk overhead on a
//                               FAKE engine (scripts/fake-engine) that streams as fast as it can
import { dirname, join } from "node:path";
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { startServer } from "../app/server.ts";
import { defaultCacheDir } from "../config/config.ts";
import { LLAMACPP } from "../engines/llamacpp.ts";
import { cachedBinary } from "../engines/source-build.ts";
import { llamaArgv } from "../engines/llamacpp.ts";
import { freePort } from "../engines/process.ts";
import { engineFetch } from "../runtime/proxy.ts";
import { makeTestModels, TEST_MODELS } from "./make-test-models.ts";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

function setup() {
  const binary = cachedBinary(defaultCacheDir(), LLAMACPP);
  if (!binary) throw new Error("llama-server is not built: run `bun scripts/build-engines.ts llamacpp`");
  const models = makeTestModels(join(import.meta.dir, "..", ".cache", "test-models"));
  const work = mkdtempSync(join(tmpdir(), "lemonade-bench-"));
  const extra = join(work, "extra");
  Bun.spawnSync(["mkdir", "-p", extra, join(work, "cache")]);
  copyFileSync(join(models, TEST_MODELS.chat), join(extra, TEST_MODELS.chat));
  symlinkSync(join(defaultCacheDir(), "bin"), join(work, "cache", "bin"));
  return { binary, work, extra, modelPath: join(extra, TEST_MODELS.chat) };
}

/** llama-server started by hand, polled every millisecond until /health answers 200. */
async function directLoad(binary: string, modelPath: string): Promise<number> {
  const port = freePort();
  const t0 = performance.now();
  const child = Bun.spawn(llamaArgv(binary, port, { modelPath, mode: "llm", ctxSize: 4096, userArgs: [] }), {
    stdout: "ignore",
    stderr: "ignore",
  });
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`, { headers: { connection: "close" } });
      if (res.ok) break;
    } catch {}
    await Bun.sleep(1);
  }
  const ms = performance.now() - t0;
  child.kill();
  await child.exited;
  return ms;
}

async function benchLoad(runs: number) {
  const { binary, work, extra, modelPath } = setup();
  const server = await startServer(
    { host: "127.0.0.1", port: 0, cacheDir: join(work, "cache") },
    { ...process.env, LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_LOG_LEVEL: "warning" },
  );
  const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  const direct: number[] = [];
  const viaServer: number[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      // Interleaved, so drift in the machine's load hits both sides alike.
      direct.push(await directLoad(binary, modelPath));
      const t0 = performance.now();
      const res = await post("/v1/load", { model_name: "extra.tiny-chat" });
      if (!res.ok) throw new Error(`load failed: ${await res.text()}`);
      viaServer.push(performance.now() - t0);
      await post("/v1/unload", {});
    }
  } finally {
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const d = median(direct);
  const s = median(viaServer);
  console.log(`bench load: ${runs} interleaved runs on ${TEST_MODELS.chat}`);
  console.log(`  llama-server alone, spawn -> /health 200   median ${fmt(d)}  (min ${fmt(Math.min(...direct))})`);
  console.log(`  POST /v1/load -> response                   median ${fmt(s)}  (min ${fmt(Math.min(...viaServer))})`);
  console.log(`  ratio server/direct ${(s / d).toFixed(3)}  (added ${fmt(s - d)})`);
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

interface StreamTiming {
  ttftMs: number;
  totalMs: number;
  events: number;
  tokensPerSecond: number;
}

/** Sends one streaming chat request and times it as a client sees it. */
async function timeStream(url: string, model: string, maxTokens: number): Promise<StreamTiming> {
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

async function benchProxy(runs: number) {
  const { work, extra } = setup();
  copyFileSync(join(extra, TEST_MODELS.chat), join(extra, "fake-engine.gguf"));
  // The server runs in its own process, as in use, so the client's work is not counted as its.
  const fakeDir = join(import.meta.dir, "fake-engine");
  const port = freePort();
  const server = Bun.spawn([process.execPath, join(import.meta.dir, "..", "cli", "main.ts"), "serve", "--port", String(port)], {
    env: {
      ...process.env,
      PATH: `${fakeDir}:${dirname(process.execPath)}:${process.env.PATH}`,
      LEMONADE_CACHE_DIR: join(work, "cache"),
      LEMONADE_EXTRA_MODELS_DIR: extra,
      LEMONADE_MAX_LOADED_MODELS: "-1",
      LEMONADE_LOG_LEVEL: "warning",
    },
    stdout: "ignore",
    stderr: "inherit",
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; i < 200 && !(await fetch(`${base}/live`).then((r) => r.ok, () => false)); i++) await Bun.sleep(50);
    const post = (path: string, body: unknown) => fetch(`${base}${path}`, { method: "POST", body: JSON.stringify(body) });
    for (const body of [
      // One engine thread leaves the second core to the proxy and this client: on a 2-core
      // machine a 2-thread engine would be slowed by any process beside it, which measures the
      // machine, not the proxy. Direct and proxied requests hit this same engine.
      { model_name: "extra.tiny-chat", llamacpp_args: "--threads 1" },
      { model_name: "extra.fake-engine", llamacpp_backend: "system" },
    ]) {
      const res = await post("/v1/load", body);
      if (!res.ok) throw new Error(`load failed: ${await res.text()}`);
    }
    const health = await (await fetch(`${base}/v1/health`)).json();
    const engineOf = (name: string) => health.all_models_loaded.find((m: any) => m.model_name === name).backend_url;
    const realDirect = `${engineOf("extra.tiny-chat")}/chat/completions`;
    const fakeDirect = `${engineOf("extra.fake-engine")}/chat/completions`;
    const viaServer = `${base}/v1/chat/completions`;

    const tokens = 128;
    const chunks = 20000;
    // Warm both paths (connection pools, JIT) before measuring.
    await timeStream(realDirect, "x", 8);
    await timeStream(viaServer, "extra.tiny-chat", 8);
    await timeStream(fakeDirect, "x", 1000);
    await timeStream(viaServer, "extra.fake-engine", 1000);

    const real = { direct: [] as StreamTiming[], proxied: [] as StreamTiming[] };
    const fake = { direct: [] as StreamTiming[], proxied: [] as StreamTiming[] };
    for (let i = 0; i < runs; i++) {
      // Interleaved, alternating which goes first, so drift hits both sides alike.
      const order = i % 2 === 0 ? ["direct", "proxied"] : ["proxied", "direct"];
      for (const side of order) {
        if (side === "direct") real.direct.push(await timeStream(realDirect, "x", tokens));
        else real.proxied.push(await timeStream(viaServer, "extra.tiny-chat", tokens));
      }
      for (const side of order) {
        const t = await timeStream(side === "direct" ? fakeDirect : viaServer, side === "direct" ? "x" : "extra.fake-engine", chunks);
        if (t.events !== chunks) throw new Error(`fake engine stream lost events: ${t.events}/${chunks}`);
        (side === "direct" ? fake.direct : fake.proxied).push(t);
      }
    }
    // Time to first token from many short requests, interleaved in pairs: the added latency is
    // a fraction of a millisecond, so it needs more samples than the long streams give.
    const ttft = { direct: [] as number[], proxied: [] as number[] };
    for (let i = 0; i < runs * 5; i++) {
      const order = i % 2 === 0 ? ["direct", "proxied"] : ["proxied", "direct"];
      for (const side of order) {
        const t = await timeStream(side === "direct" ? realDirect : viaServer, side === "direct" ? "x" : "extra.tiny-chat", 2);
        (side === "direct" ? ttft.direct : ttft.proxied).push(t.ttftMs);
      }
    }
    const tpsDirect = median(real.direct.map((t) => t.tokensPerSecond));
    const tpsProxied = median(real.proxied.map((t) => t.tokensPerSecond));
    const added = ttft.proxied.map((t, i) => t - ttft.direct[i]!);
    const fakeTotal = (xs: StreamTiming[]) => median(xs.map((t) => t.totalMs));
    const perChunkUs = ((fakeTotal(fake.proxied) - fakeTotal(fake.direct)) * 1000) / chunks;
    const fakeAdded = fake.proxied.map((t, i) => t.ttftMs - fake.direct[i]!.ttftMs);
    console.log(`bench proxy: ${runs} interleaved runs`);
    console.log(`  llama-server (--threads 1), ${TEST_MODELS.chat}, ${tokens} tokens streamed:`);
    console.log(`    tokens/s direct ${tpsDirect.toFixed(1)}, through server ${tpsProxied.toFixed(1)}, ratio ${(tpsProxied / tpsDirect).toFixed(3)}  (goal >= 0.99)`);
    console.log(`  llama-server, ${ttft.direct.length} paired short requests:`);
    console.log(`    TTFT direct p50 ${fmt(percentile(ttft.direct, 0.5))}, through server p50 ${fmt(percentile(ttft.proxied, 0.5))}`);
    console.log(`    added TTFT p50 ${fmt(percentile(added, 0.5))}, p95 ${fmt(percentile(added, 0.95))}  (goal p50 < 1 ms)`);
    console.log(`  FAKE engine, ${chunks} chunks as fast as it can:`);
    console.log(`    direct ${fmt(fakeTotal(fake.direct))}, through server ${fmt(fakeTotal(fake.proxied))}`);
    console.log(`    per-chunk overhead ${perChunkUs.toFixed(2)} us  (goal < 20 us)`);
    console.log(`    added time to first chunk p50 ${fmt(percentile(fakeAdded, 0.5))}, p95 ${fmt(percentile(fakeAdded, 0.95))}`);
  } finally {
    server.kill("SIGTERM");
    await server.exited;
    rmSync(work, { recursive: true, force: true });
  }
}

const [what, arg] = process.argv.slice(2);
switch (what) {
  case "load":
    await benchLoad(Number(arg ?? 7));
    break;
  case "proxy":
    await benchProxy(Number(arg ?? 20));
    break;
  default:
    console.error("usage: bun run bench load|proxy [runs]");
    process.exit(2);
}
