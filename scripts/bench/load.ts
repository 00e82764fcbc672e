// bench load: POST /v1/load -> ready, next to llama-server started by hand -> healthy.
import { startServer } from "../../app/server.ts";
import { llamaArgv } from "../../engines/llamacpp.ts";
import { freePort } from "../../engines/process.ts";
import { fmt, median, setup, TEST_MODELS, type Figure } from "./common.ts";

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

export async function benchLoad(runs: number): Promise<Figure[]> {
  const w = setup();
  const { binary, extra, modelPath } = w;
  const server = await startServer(
    { host: "127.0.0.1", port: 0, cacheDir: w.cacheDir },
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
    w.cleanup();
  }
  const d = median(direct);
  const s = median(viaServer);
  console.log(`bench load: ${runs} interleaved runs on ${TEST_MODELS.chat}`);
  console.log(`  llama-server alone, spawn -> /health 200   median ${fmt(d)}  (min ${fmt(Math.min(...direct))})`);
  console.log(`  POST /v1/load -> response                   median ${fmt(s)}  (min ${fmt(Math.min(...viaServer))})`);
  console.log(`  ratio server/direct ${(s / d).toFixed(3)}  (added ${fmt(s - d)})`);
  return [{ name: "POST /v1/load -> ready p50", value: s, unit: "ms", baseline: { name: "llama-server alone -> /health", value: d } }];
}

