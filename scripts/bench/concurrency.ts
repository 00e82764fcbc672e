// bench concurrency: 1, 4 and 8 simultaneous streaming clients through the server vs the same
// clients against llama-server directly: aggregate tokens/s ratio and the spread of per-stream TTFT.
// Each round through the server is paired with a round sent directly beside it, and the figure is
// the median of those pairs' ratios; a third round, sent directly again, gives the same ratio
// between two direct rounds, which is what this machine's noise alone makes of the figure (on 2
// cores shared by the engine, the server and the clients, a few percent either way: three runs of
// 9 rounds, direct over direct, 0.975-1.015 as paired ratios, 0.946-1.025 as a ratio of medians).
import { fmt, load, median, pairedRatio, setup, spawnServer, timeStream, TEST_MODELS, type Figure } from "./common.ts";

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
    console.log(`bench concurrency: ${runs} interleaved rounds per level and side, ${tokens} tokens per stream, ${TEST_MODELS.chat} (llama-server's 4 slots, unified KV)`);
    for (const clients of [1, 4, 8]) {
      const rounds = { direct: [] as Round[], proxied: [] as Round[], again: [] as Round[] };
      const sides = ["direct", "proxied", "again"] as const;
      for (let i = 0; i < runs; i++) {
        // Each side goes first, second and third in turn, so drift hits all three alike.
        for (let k = 0; k < sides.length; k++) {
          const side = sides[(i + k) % sides.length]!;
          rounds[side].push(side === "proxied" ? await round(proxied, "extra.tiny-chat", clients, tokens) : await round(direct, "x", clients, tokens));
        }
      }
      const { direct: d, proxied: p, again } = rounds;
      const tps = (rs: Round[]) => median(rs.map((r) => r.tokensPerSecond));
      const perSecond = (rs: Round[]) => rs.map((r) => r.tokensPerSecond);
      const ratio = pairedRatio(perSecond(p), perSecond(d));
      const noise = pairedRatio(perSecond(again), perSecond(d));
      const goal = clients >= 4 ? "  (goal >= 0.98)" : "";
      out.push(
        { name: `concurrency: ${clients} client(s), aggregate tokens/s through the server over directly (median of ${runs} pairs)`, value: ratio, unit: "x", ...(clients >= 4 ? { goal: { op: ">=", target: 0.98 } as const } : {}) },
        { name: `concurrency: ${clients} client(s), the same ratio between two direct rounds (this run's noise)`, value: noise, unit: "x" },
      );
      console.log(`  ${clients} client(s): aggregate tokens/s direct ${tps(d).toFixed(1)}, through server ${tps(p).toFixed(1)}; paired ratio ${ratio.toFixed(3)}${goal}, direct over direct ${noise.toFixed(3)}`);
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
