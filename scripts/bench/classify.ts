// bench classify: /v1/classify through the server vs the onnxruntime engine's own /classify,
// interleaved on one loaded classifier (the tiny BERT the tests use), so the difference is the
// server's path: body checks, the model lookup, the lease and the reshaped answer.
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeClassifierModels } from "../make-test-models.ts";
import { fmt, load, median, percentile, setup, spawnServer, timedFetch, type Figure } from "./common.ts";

const REPO = "bench-org/sentiment-ONNX";

/** The classifier's files in the server's Hugging Face cache, as a download leaves them. */
function seedCache(hfDir: string): void {
  const src = join(makeClassifierModels(join(import.meta.dir, "..", "..", ".cache", "test-models", "classifiers")), "sentiment");
  const sha = "b".repeat(40);
  const base = join(hfDir, `models--${REPO.replace("/", "--")}`);
  mkdirSync(join(base, "refs"), { recursive: true });
  writeFileSync(join(base, "refs", "main"), sha);
  const snapshot = join(base, "snapshots", sha);
  mkdirSync(snapshot, { recursive: true });
  for (const f of readdirSync(src)) copyFileSync(join(src, f), join(snapshot, f));
}

const timed = (url: string, body: Record<string, unknown>) => timedFetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

export async function benchClassify(runs: number): Promise<Figure[]> {
  const w = setup();
  const hf = join(w.cacheDir, "hf");
  seedCache(hf);
  const server = await spawnServer(w, { HF_HUB_CACHE: hf, HF_ENDPOINT: "http://127.0.0.1:9" });
  try {
    const reg = await server.post("/v1/models/register", { model_name: "user.Sentiment", checkpoint: REPO, recipe: "onnxruntime" });
    if (!reg.ok) throw new Error(`register failed: ${await reg.text()}`);
    await load(server, { model_name: "user.Sentiment" });
    const engine = (await server.engineUrl("user.Sentiment")).replace(/\/v1$/, "");
    const input = "I love this movie, it is great! John Smith works in Paris and he was very unhappy";
    const direct = () => timed(`${engine}/classify`, { input });
    const viaServer = () => timed(`${server.base}/v1/classify`, { model: "Sentiment", input });
    for (let i = 0; i < 20; i++) {
      await direct();
      await viaServer();
    }
    const d: number[] = [];
    const s: number[] = [];
    for (let i = 0; i < runs; i++) {
      if (i % 2 === 0) {
        d.push(await direct());
        s.push(await viaServer());
      } else {
        s.push(await viaServer());
        d.push(await direct());
      }
    }
    const added = s.map((t, i) => t - d[i]!);
    console.log(`bench classify: ${runs} interleaved requests, one tiny BERT classifier on onnxruntime-node`);
    console.log(`  latency p50 direct ${fmt(median(d))}, through the server ${fmt(median(s))}, ratio ${(median(s) / median(d)).toFixed(2)}  (the tiny model answers in well under 1 ms, so the added time is the figure that carries over to a real one)`);
    console.log(`  added latency p50 ${fmt(percentile(added, 0.5))}, p95 ${fmt(percentile(added, 0.95))}  (goal p50 < 1 ms)`);
    return [{ name: "classify: added latency p50", value: percentile(added, 0.5), unit: "ms", goal: { op: "<", target: 1 } }];
  } finally {
    await server.stop();
    w.cleanup();
  }
}
