// `bun run bench <what> [runs]`: each benchmark prints its figures with the goal beside each and a
// ratio against a baseline measured in the same run (the engine reached directly, llama-server by
// hand, /live, an Elysia hello-world); `all` runs every one and ends with every figure in one table.
//   memory       server RSS idle, after 10,000 requests, after 20 loads and unloads (npm start and
//                the single executable, against an Elysia hello-world), and each part's import cost
//   start        server start to /live, npm start and the single executable
//   load         POST /v1/load -> ready, vs llama-server alone -> healthy
//   cold         a request to a cold model until its first token, vs llama-server by hand
//   proxy        one stream through the server vs the engine directly (keep-alive pings on), and
//                the time to first token after pauses in which the idle collection kept and dropped
//                the server's compiled code
//   concurrency  1, 4 and 8 simultaneous streams, aggregate tokens/s (paired, beside direct over
//                direct: the run's noise) and TTFT spread
//   catalog      /v1/models, /api/tags, /v1/health (and the two under /api/v1) req/s over /live req/s,
//                and each listing rebuilt once stale (a polling client) vs served from the cache
//   swap         alternating two models with max_loaded_models 1, per swap vs the engine's cold start
//   kv           a long conversation's next turn after a swap, KV cache restored vs never evicted
//   cloud        one stream through a cloud provider (the server's own engine) vs that engine directly
//   pool         one stream through a pool of two llama-servers vs one provider, and a failover's cost
//   classify     /v1/classify through the server vs the onnxruntime engine's own /classify
//   rpc          the tiny model split across two loopback RPC workers vs local: tokens/s, added
//                TTFT, bytes over the TLS links per token
//   all          every one of them
import { table, type Figure } from "../../lib/bench.ts";
import { benchCatalog } from "./catalog.ts";
import { benchClassify } from "./classify.ts";
import { benchCloud } from "./cloud.ts";
import { benchCold } from "./cold.ts";
import { benchConcurrency } from "./concurrency.ts";
import { benchKv } from "./kv.ts";
import { benchLoad } from "./load.ts";
import { benchMemory } from "./memory.ts";
import { benchPool } from "./pool.ts";
import { benchProxy } from "./proxy.ts";
import { benchRpc } from "./rpc.ts";
import { benchStart } from "./start.ts";
import { benchSwap } from "./swap.ts";

const BENCHES: Record<string, (runs?: number) => Promise<Figure[]>> = {
  memory: () => benchMemory(),
  start: (n) => benchStart(n ?? 7),
  load: (n) => benchLoad(n ?? 7),
  cold: (n) => benchCold(n ?? 7),
  proxy: (n) => benchProxy(n ?? 20),
  concurrency: (n) => benchConcurrency(n ?? 9),
  catalog: (n) => benchCatalog(n ?? 3),
  swap: (n) => benchSwap(n ?? 9),
  kv: (n) => benchKv(n ?? 5),
  cloud: (n) => benchCloud(n ?? 20),
  pool: (n) => benchPool(n ?? 20),
  classify: (n) => benchClassify(n ?? 200),
  rpc: (n) => benchRpc(n ?? 5),
};

const [what, arg] = process.argv.slice(2);
const runs = arg === undefined ? undefined : Number(arg);
if (what === "all") {
  const all: Figure[] = [];
  for (const run of Object.values(BENCHES)) {
    all.push(...(await run(runs)));
    console.log();
  }
  console.log(table("bench all: every figure, its baseline from this run, the ratio and the goal", all));
} else if (what && BENCHES[what]) {
  await BENCHES[what](runs);
} else {
  console.error(`usage: bun run bench ${Object.keys(BENCHES).join("|")}|all [runs]`);
  process.exit(2);
}
