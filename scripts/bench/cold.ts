// bench cold: a request to a model not loaded, through the server, until its first token, over
// llama-server started by hand on the same file until the same request's first token (goal <= 1.02).
// The saved KV cache is off here (LEMONADE_KV_CACHE_SWAP=0): this is the load path alone.
import { llamaArgv } from "../../engines/llamacpp.ts";
import { freePort } from "../../engines/process.ts";
import { median, table, timeChatStream, type Figure } from "../../lib/bench.ts";
import { setup, spawnServer } from "./common.ts";

const body = (model: string) => ({ model, messages: [{ role: "user", content: "Tell me a story." }], max_tokens: 4, ignore_eos: true, seed: 1 });

/** llama-server spawned by hand, /health polled every millisecond, then the request: ms to its first token. */
async function byHand(binary: string, modelPath: string): Promise<number> {
  const port = freePort();
  const t0 = performance.now();
  const child = Bun.spawn(llamaArgv(binary, port, { modelPath, mode: "llm", ctxSize: 4096, userArgs: [] }), { stdout: "ignore", stderr: "ignore" });
  try {
    while (!(await fetch(`http://127.0.0.1:${port}/health`, { headers: { connection: "close" } }).then((r) => r.ok, () => false))) await Bun.sleep(1);
    const t = await timeChatStream(`http://127.0.0.1:${port}/v1/chat/completions`, body("x"));
    return t.ttftMs + (performance.now() - t0 - t.totalMs);
  } finally {
    child.kill();
    await child.exited;
  }
}

export async function benchCold(runs: number): Promise<Figure[]> {
  const w = setup();
  const server = await spawnServer(w, { LEMONADE_KV_CACHE_SWAP: "0" });
  try {
    const url = `${server.base}/v1/chat/completions`;
    const hand: number[] = [];
    const through: number[] = [];
    for (let i = 0; i < runs; i++) {
      hand.push(await byHand(w.binary, w.modelPath));
      through.push((await timeChatStream(url, body("extra.tiny-chat"))).ttftMs);
      await server.post("/v1/unload", { model_name: "extra.tiny-chat" });
    }
    const out: Figure[] = [
      { name: "cold model, request to first token p50, through the server", value: median(through), unit: "ms", baseline: { name: "llama-server by hand", value: median(hand) }, goal: { op: "<=", target: 1.02 } },
    ];
    console.log(table(`bench cold: ${runs} interleaved cold starts of ${w.modelPath.split("/").pop()}`, out));
    return out;
  } finally {
    await server.stop();
    w.cleanup();
  }
}
