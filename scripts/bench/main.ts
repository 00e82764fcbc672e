// `bun run bench <what> [runs]`: each benchmark prints ratios against a baseline measured in the
// same run (the engine reached directly, or /live), with the goal beside each.
//   load         POST /v1/load -> ready, vs llama-server alone -> healthy
//   proxy        one stream through the server vs the engine directly (keep-alive pings on)
//   concurrency  1, 4 and 8 simultaneous streams, aggregate tokens/s and TTFT spread
//   catalog      /v1/models, /api/tags, /v1/health req/s over /live req/s
//   memory       server RSS idle, after 10,000 requests, after 20 loads and unloads
//   swap         alternating two models with max_loaded_models 1, per swap vs the engine's cold start
//   cloud        one stream through a cloud provider (the server's own engine) vs that engine directly
//   classify     /v1/classify through the server vs the onnxruntime engine's own /classify
//   all          every one of them
import { benchCatalog } from "./catalog.ts";
import { benchClassify } from "./classify.ts";
import { benchCloud } from "./cloud.ts";
import { benchConcurrency } from "./concurrency.ts";
import { benchLoad } from "./load.ts";
import { benchMemory } from "./memory.ts";
import { benchProxy } from "./proxy.ts";
import { benchSwap } from "./swap.ts";

const BENCHES: Record<string, (runs?: number) => Promise<void>> = {
  load: (n) => benchLoad(n ?? 7),
  proxy: (n) => benchProxy(n ?? 20),
  concurrency: (n) => benchConcurrency(n ?? 5),
  catalog: (n) => benchCatalog(n ?? 3),
  memory: () => benchMemory(),
  swap: (n) => benchSwap(n ?? 9),
  cloud: (n) => benchCloud(n ?? 20),
  classify: (n) => benchClassify(n ?? 200),
};

const [what, arg] = process.argv.slice(2);
const runs = arg === undefined ? undefined : Number(arg);
if (what === "all") {
  for (const run of Object.values(BENCHES)) await run(runs);
} else if (what && BENCHES[what]) {
  await BENCHES[what](runs);
} else {
  console.error(`usage: bun run bench ${Object.keys(BENCHES).join("|")}|all [runs]`);
  process.exit(2);
}
