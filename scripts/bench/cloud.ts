// bench cloud: a stream through the server to a cloud provider vs the same engine reached
// directly. The provider is the server's own llama-server, installed as a provider, so both sides
// hit one engine and the difference is the cloud path (catalog lookup, provider headers, proxy).
import { fmt, load, median, pairedRatio, percentile, setup, spawnServer, timeStream, TEST_MODELS, type Figure, type StreamTiming } from "./common.ts";

export async function benchCloud(runs: number): Promise<Figure[]> {
  const w = setup();
  // A provider with no key is not asked for its models, and one reached over http:// gets its key
  // only when allowed to: llama-server takes any key.
  const server = await spawnServer(w, { LEMONADE_BENCH_API_KEY: "bench" });
  try {
    await load(server, { model_name: "extra.tiny-chat", llamacpp_args: "--threads 1" });
    const engine = await server.engineUrl("extra.tiny-chat");
    const install = await fetch(`${server.base}/v1/install`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ backend: "cloud", provider: "bench", base_url: engine, allow_insecure_http: true }),
    });
    if (!install.ok) throw new Error(`installing the provider failed: ${await install.text()}`);
    const models = (await (await fetch(`${server.base}/v1/models`)).json()).data as { id: string; recipe: string }[];
    const cloudModel = models.find((m) => m.recipe === "cloud")?.id;
    if (!cloudModel) throw new Error(`the provider lists no model: ${await install.text()}`);
    const direct = `${engine}/chat/completions`;
    const viaServer = `${server.base}/v1/chat/completions`;
    const tokens = 128;
    await timeStream(direct, "x", 8);
    await timeStream(viaServer, cloudModel, 8);
    const long = { direct: [] as StreamTiming[], cloud: [] as StreamTiming[] };
    const ttft = { direct: [] as number[], cloud: [] as number[] };
    for (let i = 0; i < runs; i++) {
      const order = i % 2 === 0 ? ["direct", "cloud"] : ["cloud", "direct"];
      for (const side of order) {
        if (side === "direct") long.direct.push(await timeStream(direct, "x", tokens));
        else long.cloud.push(await timeStream(viaServer, cloudModel, tokens));
      }
      for (let j = 0; j < 5; j++) {
        for (const side of order) {
          const t = await timeStream(side === "direct" ? direct : viaServer, side === "direct" ? "x" : cloudModel, 2);
          (side === "direct" ? ttft.direct : ttft.cloud).push(t.ttftMs);
        }
      }
    }
    const tpsDirect = median(long.direct.map((t) => t.tokensPerSecond));
    const tpsCloud = median(long.cloud.map((t) => t.tokensPerSecond));
    const ratio = pairedRatio(long.cloud.map((t) => t.tokensPerSecond), long.direct.map((t) => t.tokensPerSecond));
    const added = ttft.cloud.map((t, i) => t - ttft.direct[i]!);
    console.log(`bench cloud: ${runs} interleaved runs, provider = the server's own llama-server (${TEST_MODELS.chat})`);
    console.log(`  tokens/s direct ${tpsDirect.toFixed(1)}, through the cloud path ${tpsCloud.toFixed(1)}; paired ratio ${ratio.toFixed(3)}  (goal >= 0.98)`);
    console.log(`  added TTFT p50 ${fmt(percentile(added, 0.5))}, p95 ${fmt(percentile(added, 0.95))} over ${added.length} pairs  (goal p50 < 2 ms)`);
    return [
      { name: `cloud: stream tokens/s through the cloud path over the provider directly (median of ${runs} pairs)`, value: ratio, unit: "x", goal: { op: ">=", target: 0.98 } },
      { name: "cloud: added time to first token p50", value: percentile(added, 0.5), unit: "ms", goal: { op: "<", target: 2 } },
    ];
  } finally {
    await server.stop();
    w.cleanup();
  }
}
