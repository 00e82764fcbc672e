// bench proxy: streaming through the server vs the engine directly, keep-alive pings on: tokens/s
// ratio and added TTFT on llama-server (back to back beside a bare Bun proxy's, the runtime's
// floor, and after pauses in which the server's idle collection ran, with and without dropping its
// compiled code), per-chunk overhead on the FAKE engine, which streams as fast as it can.
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { QUIET_MS } from "../../app/idle-gc.ts";
import { SERVER_RUNTIME_ENV } from "../../cli/runtime-env.ts";
import { freePort } from "../../engines/process.ts";
import { fmt, load, median, pairedRatio, percentile, SETTLED_MS, setup, spawnServer, timeStream, untilUp, TEST_MODELS, type Figure, type StreamTiming } from "./common.ts";

/** scripts/bench/bare-proxy.ts relaying to `engine`, under the server's JavaScriptCore settings. */
async function bareProxy(engine: string): Promise<{ url: string; stop(): void }> {
  const port = freePort();
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "bare-proxy.ts"), String(port), engine], { env: { ...process.env, ...SERVER_RUNTIME_ENV }, stdout: "ignore", stderr: "inherit" });
  const url = `http://127.0.0.1:${port}`;
  await untilUp(url);
  return { url, stop: () => child.kill() };
}

export async function benchProxy(runs: number): Promise<Figure[]> {
  const w = setup();
  copyFileSync(w.modelPath, join(w.extra, "fake-engine.gguf"));
  const server = await spawnServer(w);
  try {
    for (const body of [
      // One engine thread leaves the second core to the proxy and this client: on a 2-core
      // machine a 2-thread engine would be slowed by any process beside it, which measures the
      // machine, not the proxy. Direct and proxied requests hit this same engine.
      { model_name: "extra.tiny-chat", llamacpp_args: "--threads 1" },
      { model_name: "extra.fake-engine", llamacpp_backend: "system" },
    ]) {
      await load(server, body);
    }
    const realDirect = `${await server.engineUrl("extra.tiny-chat")}/chat/completions`;
    const fakeDirect = `${await server.engineUrl("extra.fake-engine")}/chat/completions`;
    const viaServer = `${server.base}/v1/chat/completions`;

    const tokens = 128;
    const chunks = 20000;
    // Warm both paths (connection pools, JIT) before measuring.
    await timeStream(realDirect, "x", 8);
    await timeStream(viaServer, "extra.tiny-chat", 8);
    await timeStream(fakeDirect, "x", 1000);
    await timeStream(viaServer, "extra.fake-engine", 1000);

    // Each stream through the server is paired with one sent directly beside it, and a second
    // direct one gives the same ratio between two direct streams: this run's noise.
    const real = { direct: [] as StreamTiming[], proxied: [] as StreamTiming[], again: [] as StreamTiming[] };
    const fake = { direct: [] as StreamTiming[], proxied: [] as StreamTiming[] };
    const realSides = ["direct", "proxied", "again"] as const;
    for (let i = 0; i < runs; i++) {
      // Interleaved, each side first in turn, so drift hits every side alike.
      for (let k = 0; k < realSides.length; k++) {
        const side = realSides[(i + k) % realSides.length]!;
        real[side].push(side === "proxied" ? await timeStream(viaServer, "extra.tiny-chat", tokens) : await timeStream(realDirect, "x", tokens));
      }
      const order = i % 2 === 0 ? ["direct", "proxied"] : ["proxied", "direct"];
      for (const side of order) {
        const t = await timeStream(side === "direct" ? fakeDirect : viaServer, side === "direct" ? "x" : "extra.fake-engine", chunks);
        if (t.events !== chunks) throw new Error(`fake engine stream lost events: ${t.events}/${chunks}`);
        (side === "direct" ? fake.direct : fake.proxied).push(t);
      }
    }
    // Time to first token from many short requests, interleaved: the added latency is a fraction
    // of a millisecond, so it needs more samples than the long streams give. The bare proxy beside
    // them is the runtime's floor for it.
    const bare = await bareProxy(realDirect);
    const ttft = { direct: [] as number[], proxied: [] as number[], bare: [] as number[] };
    try {
      await timeStream(bare.url, "x", 8);
      const sides = ["direct", "proxied", "bare"] as const;
      for (let i = 0; i < runs * 5; i++) {
        // Each side goes first, second and third in turn.
        for (let k = 0; k < sides.length; k++) {
          const side = sides[(i + k) % sides.length]!;
          const url = side === "direct" ? realDirect : side === "bare" ? bare.url : viaServer;
          ttft[side].push((await timeStream(url, side === "proxied" ? "extra.tiny-chat" : "x", 2)).ttftMs);
        }
      }
    } finally {
      bare.stop();
    }
    // The same pair after pauses (app/idle-gc.ts): one in which the server collected its garbage
    // and kept its compiled code, what a chat's next message pays once its user stopped to read,
    // and one long enough for it to drop the code too.
    const afterPauses = async (ms: number, pairs: number): Promise<{ added: number; proxied: number; direct: number }> => {
      const paused = { direct: [] as number[], proxied: [] as number[] };
      for (let i = 0; i < pairs; i++) {
        await Bun.sleep(ms);
        paused.proxied.push((await timeStream(viaServer, "extra.tiny-chat", 2)).ttftMs);
        paused.direct.push((await timeStream(realDirect, "x", 2)).ttftMs);
      }
      return { added: median(paused.proxied.map((t, i) => t - paused.direct[i]!)), proxied: median(paused.proxied), direct: median(paused.direct) };
    };
    const shortPauseMs = 2 * QUIET_MS + 1000;
    const short = await afterPauses(shortPauseMs, 5);
    const long = await afterPauses(SETTLED_MS, 3);
    const tpsDirect = median(real.direct.map((t) => t.tokensPerSecond));
    const tpsProxied = median(real.proxied.map((t) => t.tokensPerSecond));
    const perSecond = (ts: StreamTiming[]) => ts.map((t) => t.tokensPerSecond);
    const tpsRatio = pairedRatio(perSecond(real.proxied), perSecond(real.direct));
    const tpsNoise = pairedRatio(perSecond(real.again), perSecond(real.direct));
    const added = ttft.proxied.map((t, i) => t - ttft.direct[i]!);
    const bareAdded = ttft.bare.map((t, i) => t - ttft.direct[i]!);
    const fakeTotal = (xs: StreamTiming[]) => median(xs.map((t) => t.totalMs));
    const perChunkUs = ((fakeTotal(fake.proxied) - fakeTotal(fake.direct)) * 1000) / chunks;
    const fakeAdded = fake.proxied.map((t, i) => t.ttftMs - fake.direct[i]!.ttftMs);
    console.log(`bench proxy: ${runs} interleaved runs (keep-alive pings on)`);
    console.log(`  llama-server (--threads 1), ${TEST_MODELS.chat}, ${tokens} tokens streamed:`);
    console.log(`    tokens/s direct ${tpsDirect.toFixed(1)}, through server ${tpsProxied.toFixed(1)}; paired ratio ${tpsRatio.toFixed(3)}  (goal >= 0.99), direct over direct ${tpsNoise.toFixed(3)}`);
    console.log(`  llama-server, ${ttft.direct.length} short requests each way, interleaved:`);
    console.log(`    TTFT direct p50 ${fmt(percentile(ttft.direct, 0.5))}, through server p50 ${fmt(percentile(ttft.proxied, 0.5))}`);
    console.log(`    added TTFT p50 ${fmt(percentile(added, 0.5))}, p95 ${fmt(percentile(added, 0.95))}  (goal p50 < 1 ms)`);
    console.log(`    through a bare Bun proxy (scripts/bench/bare-proxy.ts, the runtime's floor): added TTFT p50 ${fmt(percentile(bareAdded, 0.5))}, p95 ${fmt(percentile(bareAdded, 0.95))}`);
    console.log(`    after a ${(shortPauseMs / 1000).toFixed(0)} s pause (garbage collected, compiled code kept), added TTFT p50 ${fmt(short.added)} (5 pairs)`);
    console.log(`    after a ${(SETTLED_MS / 1000).toFixed(0)} s pause (compiled code dropped too), added TTFT p50 ${fmt(long.added)} (3 pairs)`);
    console.log(`  FAKE engine, ${chunks} chunks as fast as it can:`);
    console.log(`    direct ${fmt(fakeTotal(fake.direct))}, through server ${fmt(fakeTotal(fake.proxied))}`);
    console.log(`    per-chunk overhead ${perChunkUs.toFixed(2)} us  (goal < 20 us)`);
    console.log(`    added time to first chunk p50 ${fmt(percentile(fakeAdded, 0.5))}, p95 ${fmt(percentile(fakeAdded, 0.95))}`);
    return [
      { name: `proxy: stream tokens/s through the server over llama-server directly (median of ${runs} pairs)`, value: tpsRatio, unit: "x", goal: { op: ">=", target: 0.99 } },
      { name: "proxy: the same ratio between two direct streams (this run's noise)", value: tpsNoise, unit: "x" },
      { name: "proxy: added time to first token p50", value: percentile(added, 0.5), unit: "ms", goal: { op: "<", target: 1 } },
      // A difference, not a ratio: the bare proxy's own figure is a fraction of a millisecond, at times none.
      { name: "proxy: added time to first token p50, beyond a bare Bun proxy's", value: percentile(added, 0.5) - percentile(bareAdded, 0.5), unit: "ms" },
      { name: "proxy: per-chunk overhead (FAKE engine)", value: perChunkUs, unit: "us", goal: { op: "<", target: 20 } },
      { name: `proxy: time to first token after a ${(shortPauseMs / 1000).toFixed(0)} s pause (compiled code kept)`, value: short.proxied, unit: "ms", baseline: { name: "llama-server directly, right after", value: short.direct } },
      { name: `proxy: time to first token after a ${(SETTLED_MS / 1000).toFixed(0)} s pause (compiled code dropped)`, value: long.proxied, unit: "ms", baseline: { name: "llama-server directly, right after", value: long.direct } },
    ];
  } finally {
    await server.stop();
    w.cleanup();
  }
}

