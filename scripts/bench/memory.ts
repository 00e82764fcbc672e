// bench memory: the server's resident memory idle, after 10,000 requests, and after loading and
// unloading a model 20 times (on the FAKE engine, whose own memory is another process's).
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { load, rssMb, setup, spawnServer } from "./common.ts";

export async function benchMemory() {
  const w = setup();
  copyFileSync(w.modelPath, join(w.extra, "fake-engine.gguf"));
  const server = await spawnServer(w);
  try {
    await Bun.sleep(1000);
    const idle = rssMb(server.pid);
    const routes = ["/live", "/v1/models", "/v1/health", "/api/tags", "/v1/models/extra.tiny-chat"];
    for (let i = 0; i < 10_000; i += 8) {
      await Promise.all(Array.from({ length: 8 }, (_, j) => fetch(`${server.base}${routes[(i + j) % routes.length]}`).then((r) => r.arrayBuffer())));
    }
    // Settled: the server collects once it has been quiet for 2 s.
    await Bun.sleep(5000);
    const afterRequests = rssMb(server.pid);
    for (let i = 0; i < 20; i++) {
      await load(server, { model_name: "extra.fake-engine", llamacpp_backend: "system" });
      const res = await server.post("/v1/chat/completions", { model: "extra.fake-engine", messages: [{ role: "user", content: "hi" }], max_tokens: 50, stream: true });
      await res.arrayBuffer();
      await server.post("/v1/unload", { model_name: "extra.fake-engine" });
    }
    await Bun.sleep(5000);
    const afterLoads = rssMb(server.pid);
    const within = (mb: number) => `${(((mb - idle) / idle) * 100).toFixed(1)} % over idle`;
    console.log("bench memory: server RSS (the engines are other processes)");
    console.log(`  idle                          ${idle.toFixed(1)} MB  (goal <= 40 MB)`);
    console.log(`  after 10,000 requests         ${afterRequests.toFixed(1)} MB, ${within(afterRequests)}  (goal within 10 %)`);
    console.log(`  after 20 loads and unloads    ${afterLoads.toFixed(1)} MB, ${within(afterLoads)}  (goal within 10 %)`);
  } finally {
    await server.stop();
    w.cleanup();
  }
}
