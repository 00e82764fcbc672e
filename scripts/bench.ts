// Benchmarks that compare the server against the engine reached directly, in one run.
//   bun run bench load [runs]   POST /v1/load -> ready, next to llama-server alone -> healthy
import { join } from "node:path";
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { startServer } from "../cli/serve.ts";
import { defaultCacheDir } from "../server/config.ts";
import { cachedBinary, LLAMACPP } from "../engines/recipes.ts";
import { llamaArgv } from "../engines/llamacpp.ts";
import { freePort } from "../engines/process.ts";
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

const [what, arg] = process.argv.slice(2);
switch (what) {
  case "load":
    await benchLoad(Number(arg ?? 7));
    break;
  default:
    console.error("usage: bun run bench load [runs]");
    process.exit(2);
}
