// bench swap: alternating requests for two models with max_loaded_models=1, each one forcing a
// swap, timed against the engine's own cold start plus the same request sent to it directly.
import { linkSync } from "node:fs";
import { join } from "node:path";
import { llamaArgv } from "../../engines/llamacpp.ts";
import { freePort } from "../../engines/process.ts";
import { fmt, median, setup, spawnServer, type Figure } from "./common.ts";

const chat = (model: string) => ({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 4 });

/** llama-server started by hand until /health answers, then the same request, then stopped. */
async function coldStart(binary: string, modelPath: string): Promise<number> {
  const port = freePort();
  const t0 = performance.now();
  const child = Bun.spawn(llamaArgv(binary, port, { modelPath, mode: "llm", ctxSize: 4096, userArgs: [] }), { stdout: "ignore", stderr: "ignore" });
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/health`, { headers: { connection: "close" } }).then((r) => r.ok, () => false);
    if (ok) break;
    await Bun.sleep(1);
  }
  const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: "POST", body: JSON.stringify(chat("x")) });
  await res.arrayBuffer();
  const ms = performance.now() - t0;
  child.kill();
  await child.exited;
  return ms;
}

export async function benchSwap(runs: number): Promise<Figure[]> {
  const w = setup();
  linkSync(w.modelPath, join(w.extra, "tiny-chat-b.gguf"));
  const server = await spawnServer(w, { LEMONADE_MAX_LOADED_MODELS: "1" });
  try {
    const models = ["extra.tiny-chat", "extra.tiny-chat-b"];
    const swaps: number[] = [];
    const cold: number[] = [];
    let failed = 0;
    const res = await server.post("/v1/chat/completions", chat(models[0]!));
    await res.arrayBuffer();
    for (let i = 0; i < runs; i++) {
      cold.push(await coldStart(w.binary, w.modelPath));
      const t0 = performance.now();
      const r = await server.post("/v1/chat/completions", chat(models[(i + 1) % 2]!));
      await r.arrayBuffer();
      if (!r.ok) failed++;
      swaps.push(performance.now() - t0);
    }
    const ratio = median(swaps) / median(cold);
    console.log(`bench swap: ${runs} swaps between two models, max_loaded_models=1, a 4-token request each`);
    console.log(`  llama-server cold start + the request, by hand   median ${fmt(median(cold))}`);
    console.log(`  request forcing a swap, through the server       median ${fmt(median(swaps))}`);
    console.log(`  ratio ${ratio.toFixed(3)}  (goal <= 1.05), failed requests ${failed}  (goal 0)`);
    return [
      { name: "swap: request forcing a swap p50, through the server", value: median(swaps), unit: "ms", baseline: { name: "llama-server cold start + request", value: median(cold) }, goal: { op: "<=", target: 1.05 } },
      { name: "swap: failed requests", value: failed, unit: "", goal: { op: "<=", target: 0 } },
    ];
  } finally {
    await server.stop();
    w.cleanup();
  }
}
