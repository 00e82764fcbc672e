// bench kv: the KV cache across a swap (runtime/kv-cache.ts). Two chat models, max_loaded_models=1:
// a 3,000-token conversation's next turn after a swap, time to first token with the saved cache
// restored over the same turn on a model never evicted (goal <= 1.3), and over the same turn with
// nothing restored (printed: the prefill it saved). The measuring is lib/bench.ts's, as for
// `lemonade bench --swap-model`.
import { linkSync } from "node:fs";
import { join } from "node:path";
import { kvRestoreFigures, table, type Figure } from "../../lib/bench.ts";
import { setup, spawnServer } from "./common.ts";

export async function benchKv(runs: number): Promise<Figure[]> {
  const w = setup();
  linkSync(w.modelPath, join(w.extra, "tiny-chat-b.gguf"));
  const server = await spawnServer(w, { LEMONADE_MAX_LOADED_MODELS: "1" });
  try {
    const out = await kvRestoreFigures({ base: server.base }, "extra.tiny-chat", "extra.tiny-chat-b", runs);
    console.log(table(`bench kv: ${runs} conversations of each kind, max_loaded_models=1`, out));
    return out;
  } finally {
    await server.stop();
    w.cleanup();
  }
}
