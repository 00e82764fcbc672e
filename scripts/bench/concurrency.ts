// bench concurrency: 1, 4 and 8 simultaneous streaming clients through the server vs the same
// clients against llama-server directly: aggregate tokens/s ratio and the spread of per-stream TTFT.
import { fmt, load, median, setup, spawnServer, timeStream, TEST_MODELS, type Figure } from "./common.ts";

interface Round {
  tokensPerSecond: number;
  ttftSpreadMs: number;
  ttftP50Ms: number;
}

async function round(url: string, model: string, clients: number, tokens: number): Promise<Round> {
  const t0 = performance.now();
  const streams = await Promise.all(Array.from({ length: clients }, () => timeStream(url, model, tokens)));
  const wall = performance.now() - t0;
  const ttfts = streams.map((s) => s.ttftMs);
  return {
    tokensPerSecond: (streams.reduce((n, s) => n + s.events, 0) * 1000) / wall,
    ttftSpreadMs: Math.max(...ttfts) - Math.min(...ttfts),
    ttftP50Ms: median(ttfts),
  };
}

export async function benchConcurrency(runs: number): Promise<Figure[]> {
  const w = setup();
  const server = await spawnServer(w);
  try {
    // One engine thread, as in bench proxy: the second core is the proxy's and the client's.
    await load(server, { model_name: "extra.tiny-chat", llamacpp_args: "--threads 1" });
    const direct = `${await server.engineUrl("extra.tiny-chat")}/chat/completions`;
    const proxied = `${server.base}/v1/chat/completions`;
    const tokens = 128;
    await round(direct, "x", 4, 8);
    await round(proxied, "extra.tiny-chat", 4, 8);
    const out: Figure[] = [];
    console.log(`bench concurrency: ${runs} interleaved rounds per level, ${tokens} tokens per stream, ${TEST_MODELS.chat} (llama-server's 4 slots, unified KV)`);
    for (const clients of [1, 4, 8]) {
      const d: Round[] = [];
      const p: Round[] = [];
      for (let i = 0; i < runs; i++) {
        const order = i % 2 === 0 ? ["direct", "proxied"] : ["proxied", "direct"];
        for (const side of order) {
          if (side === "direct") d.push(await round(direct, "x", clients, tokens));
          else p.push(await round(proxied, "extra.tiny-chat", clients, tokens));
        }
      }
      const tps = (rs: Round[]) => median(rs.map((r) => r.tokensPerSecond));
      const ratio = tps(p) / tps(d);
      const goal = clients >= 4 ? "  (goal >= 0.98)" : "";
      out.push({ name: `concurrency: ${clients} client(s), aggregate tokens/s through the server`, value: tps(p), unit: "tok/s", baseline: { name: "directly", value: tps(d) }, ...(clients >= 4 ? { goal: { op: ">=", target: 0.98 } as const } : {}) });
      console.log(`  ${clients} client(s): aggregate tokens/s direct ${tps(d).toFixed(1)}, through server ${tps(p).toFixed(1)}, ratio ${ratio.toFixed(3)}${goal}`);
      console.log(
        `    TTFT p50 direct ${fmt(median(d.map((r) => r.ttftP50Ms)))}, through server ${fmt(median(p.map((r) => r.ttftP50Ms)))}; ` +
          `spread (max - min) direct ${fmt(median(d.map((r) => r.ttftSpreadMs)))}, through server ${fmt(median(p.map((r) => r.ttftSpreadMs)))}`,
      );
    }
    return out;
  } finally {
    await server.stop();
    w.cleanup();
  }
}
