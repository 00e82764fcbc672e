// bench pool: a stream through a pool of two llama-servers (started by hand on the tiny chat
// model) vs through a provider of the member that serves it (sequential requests take the members
// in turn, so each pool request is paired with one to the same server alone), and the time a
// request loses when the member it is sent to first cannot be reached (a fresh pool per run whose first member is a closed loopback
// port, so each run's first request fails over to the live member).
import { freePort } from "../../engines/process.ts";
import { fmt, median, pairedRatio, percentile, setup, spawnServer, timeStream, TEST_MODELS, type Figure, type ServerProcess } from "./common.ts";

async function llamaServer(binary: string, model: string) {
  const port = freePort();
  const proc = Bun.spawn([binary, "-m", model, "--alias", "tiny", "--port", String(port), "--host", "127.0.0.1", "-c", "1024", "-np", "1", "--threads", "1"], { stdout: "ignore", stderr: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600 && !(await fetch(`${url}/health`).then((r) => r.ok, () => false)); i++) await Bun.sleep(20);
  return { proc, base: `${url}/v1` };
}

async function install(server: ServerProcess, provider: string, servers: string[]): Promise<void> {
  const where = servers.length > 1 ? { members: servers.map((base_url) => ({ base_url })) } : { base_url: servers[0] };
  const res = await server.post("/v1/install", { backend: "cloud", provider, ...where, api_key: "sk-bench", allow_insecure_http: true });
  if (!res.ok || (await res.json()).models_discovered !== 1) throw new Error(`installing ${provider} failed`);
}

export async function benchPool(runs: number): Promise<Figure[]> {
  const w = setup();
  const server = await spawnServer(w);
  const members = [await llamaServer(w.binary, w.modelPath), await llamaServer(w.binary, w.modelPath)];
  try {
    const [a, b] = members as [(typeof members)[0], (typeof members)[0]];
    await install(server, "solo-a", [a.base]);
    await install(server, "solo", [b.base]);
    await install(server, "farm", [a.base, b.base]);
    const via = `${server.base}/v1/chat/completions`;
    for (const model of ["solo-a.tiny", "solo.tiny", "farm.tiny", "farm.tiny"]) await timeStream(via, model, 8);
    const tokens = 64;
    const tps = { solo: [] as number[], pool: [] as number[] };
    const added: number[] = [];
    for (let i = 0; i < runs; i++) {
      const order = i % 2 === 0 ? ["solo", "pool"] : ["pool", "solo"];
      const ttft: Record<string, number> = {};
      // The pool's turn: a on even runs, b on odd ones.
      const alone = i % 2 === 0 ? "solo-a.tiny" : "solo.tiny";
      for (const side of order) {
        const t = await timeStream(via, side === "solo" ? alone : "farm.tiny", tokens);
        (side === "solo" ? tps.solo : tps.pool).push(t.tokensPerSecond);
        ttft[side] = t.ttftMs;
      }
      added.push(ttft.pool! - ttft.solo!);
    }
    const failover: number[] = [];
    for (let i = 0; i < runs; i++) {
      const closed = `http://127.0.0.1:${freePort()}/v1`;
      await install(server, `failover${i}`, [closed, b.base]);
      const healthy = await timeStream(via, "solo.tiny", 2);
      const failed = await timeStream(via, `failover${i}.tiny`, 2);
      failover.push(failed.ttftMs - healthy.ttftMs);
    }
    const tpsSolo = median(tps.solo);
    const tpsPool = median(tps.pool);
    const ratio = pairedRatio(tps.pool, tps.solo);
    console.log(`bench pool: ${runs} interleaved runs, two llama-servers by hand (${TEST_MODELS.chat}, one slot, one thread each)`);
    console.log(`  tokens/s through the serving member alone ${tpsSolo.toFixed(1)}, through the pool ${tpsPool.toFixed(1)}; paired ratio ${ratio.toFixed(3)}  (goal >= 0.98)`);
    console.log(`  added TTFT of the pool p50 ${fmt(percentile(added, 0.5))}, p95 ${fmt(percentile(added, 0.95))} over ${added.length} pairs  (goal p50 < 1 ms)`);
    console.log(`  added TTFT of a failover (first member's port closed) p50 ${fmt(percentile(failover, 0.5))}, p95 ${fmt(percentile(failover, 0.95))}  (goal p50 < 5 ms)`);
    return [
      { name: `pool: stream tokens/s through a pool of two over the serving member alone (median of ${runs} pairs)`, value: ratio, unit: "x", goal: { op: ">=", target: 0.98 } },
      { name: "pool: added time to first token p50", value: percentile(added, 0.5), unit: "ms", goal: { op: "<", target: 1 } },
      { name: "pool: added time to first token of a failover p50", value: percentile(failover, 0.5), unit: "ms", goal: { op: "<", target: 5 } },
    ];
  } finally {
    for (const m of members) m.proc.kill("SIGKILL");
    await server.stop();
    w.cleanup();
  }
}
