// bench rpc: the tiny chat model split across two loopback `lemonade worker`s (real rpc-server
// behind the project's TLS link) against the same model run locally: tokens/s ratio, the added
// time to first token, and the bytes the link carries per generated token.
import { copyFileSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { defaultCacheDir } from "../../config/config.ts";
import { fmt, load, median, percentile, setup, spawnServer, timeStream, TEST_MODELS, type Figure, type StreamTiming } from "./common.ts";

const SECRET = "bench-secret-bench-secret";

/** One `lemonade worker` on a free loopback port; resolves once it listens. */
async function startWorker(cacheDir: string): Promise<{ address: string; stop(): Promise<void> }> {
  mkdirSync(cacheDir, { recursive: true });
  symlinkSync(join(defaultCacheDir(), "bin"), join(cacheDir, "bin"));
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "cli", "main.ts"), "worker", "--host", "127.0.0.1", "--port", "0", "--threads", "1"], {
    env: { ...process.env, LEMONADE_CACHE_DIR: cacheDir, LEMONADE_RPC_SECRET: SECRET },
    stdout: "pipe",
    stderr: "ignore",
  });
  const reader = child.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("lemonade worker exited before it listened");
    text += new TextDecoder().decode(value);
  }
  const ready = JSON.parse(text.split("\n")[0]!);
  return {
    address: `127.0.0.1:${ready.port}`,
    async stop() {
      child.kill("SIGTERM");
      await child.exited;
    },
  };
}

export async function benchRpc(runs: number): Promise<Figure[]> {
  const w = setup();
  copyFileSync(w.modelPath, join(w.extra, "tiny-chat-split.gguf"));
  const workers = await Promise.all([startWorker(join(w.work, "worker-a")), startWorker(join(w.work, "worker-b"))]);
  const server = await spawnServer(w, { LEMONADE_RPC_WORKERS: workers.map((x) => x.address).join(","), LEMONADE_RPC_SECRET: SECRET });
  try {
    // One thread per engine and per worker: the split does the same work on as many threads.
    await load(server, { model_name: "extra.tiny-chat", llamacpp_args: "--threads 1" });
    await load(server, { model_name: "extra.tiny-chat-split", llamacpp_args: "--threads 1", rpc: "all" });
    const url = `${server.base}/v1/chat/completions`;
    const linkBytes = async () => {
      const health = await (await fetch(`${server.base}/v1/health`)).json();
      const split = health.all_models_loaded.find((m: { model_name: string }) => m.model_name === "tiny-chat-split").rpc;
      return split.workers.reduce((n: number, x: { bytes_sent: number; bytes_received: number }) => n + x.bytes_sent + x.bytes_received, 0);
    };
    const tokens = 128;
    await timeStream(url, "extra.tiny-chat", 8);
    await timeStream(url, "extra.tiny-chat-split", 8);
    const local: StreamTiming[] = [];
    const split: StreamTiming[] = [];
    const perToken: number[] = [];
    for (let i = 0; i < runs; i++) {
      for (const side of i % 2 === 0 ? ["local", "split"] : ["split", "local"]) {
        if (side === "local") local.push(await timeStream(url, "extra.tiny-chat", tokens));
        else {
          const before = await linkBytes();
          const t = await timeStream(url, "extra.tiny-chat-split", tokens);
          perToken.push(((await linkBytes()) - before) / Math.max(1, t.events));
          split.push(t);
        }
      }
    }
    const ttft = { local: [] as number[], split: [] as number[] };
    for (let i = 0; i < runs * 3; i++) {
      for (const side of i % 2 === 0 ? (["local", "split"] as const) : (["split", "local"] as const)) {
        ttft[side].push((await timeStream(url, side === "local" ? "extra.tiny-chat" : "extra.tiny-chat-split", 2)).ttftMs);
      }
    }
    const tpsLocal = median(local.map((t) => t.tokensPerSecond));
    const tpsSplit = median(split.map((t) => t.tokensPerSecond));
    const added = ttft.split.map((t, i) => t - ttft.local[i]!);
    const bytes = median(perToken);
    console.log(`bench rpc: ${runs} interleaved runs, ${TEST_MODELS.chat} (--threads 1), ${tokens} tokens streamed`);
    console.log(`  tokens/s local ${tpsLocal.toFixed(1)}, split across two loopback workers ${tpsSplit.toFixed(1)}, ratio ${(tpsSplit / tpsLocal).toFixed(3)}`);
    console.log(`  TTFT local p50 ${fmt(percentile(ttft.local, 0.5))}, split p50 ${fmt(percentile(ttft.split, 0.5))}; added p50 ${fmt(percentile(added, 0.5))}, p95 ${fmt(percentile(added, 0.95))}`);
    console.log(`  bytes over the TLS links per token (both workers, both ways) p50 ${Math.round(bytes)}`);
    return [
      { name: "rpc: stream tokens/s, split across two loopback workers", value: tpsSplit, unit: "tok/s", baseline: { name: "the same model local", value: tpsLocal } },
      { name: "rpc: added time to first token p50", value: percentile(added, 0.5), unit: "ms" },
      { name: "rpc: bytes over the links per token", value: bytes, unit: "B" },
    ];
  } finally {
    await server.stop();
    await Promise.all(workers.map((x) => x.stop()));
    w.cleanup();
  }
}
