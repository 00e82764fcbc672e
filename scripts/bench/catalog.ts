// bench catalog: listing routes against /live, each req/s with keep-alive clients, with the full
// built-in catalog and 50 extra models (hard links to the tiny model: no disk used). The /api/v1
// rows are the same routes reached through another prefix (http/version-prefixes.ts forwards it).
// Then what a polling client pays (the web app, a script every few seconds): a listing built
// afresh once its cached JSON went stale, and the first listing after start, which reads every
// GGUF's header, against the same listing served from the cache; then the first listing after a
// restart, which finds the headers kept.
import { existsSync, linkSync } from "node:fs";
import { join } from "node:path";
import { median, rate, setup, spawnServer, timedFetch, type Figure } from "./common.ts";

/** A cached listing is rebuilt once it is this old (http/view-cache.ts, 2 s), with a margin. */
const STALE_AFTER_MS = 2100;

export async function benchCatalog(runs: number): Promise<Figure[]> {
  const w = setup();
  for (let i = 0; i < 50; i++) linkSync(w.modelPath, join(w.extra, `extra-model-${String(i).padStart(2, "0")}.gguf`));
  let server = await spawnServer(w);
  try {
    const routes = ["/live", "/v1/models", "/v1/models?show_all=true", "/api/tags", "/v1/health", "/api/v1/models", "/api/v1/health"];
    // The first listing after start reads every local GGUF's header (vocabulary included): once
    // per file, until it changes.
    const first = await timedFetch(`${server.base}/v1/models`);
    // The headers it read are written a moment later (models/gguf-header-cache.ts): waited for
    // here, so that the write dents no sample below and the restart at the end finds them.
    const kept = join(w.cacheDir, "gguf_headers.json");
    for (let i = 0; i < 100 && !existsSync(kept); i++) await Bun.sleep(50);
    if (!existsSync(kept)) throw new Error(`the server kept no GGUF headers in ${kept}`);
    for (const r of routes) await rate(`${server.base}${r}`, 0.3);
    const seconds = 1;
    const results = new Map<string, number[]>(routes.map((r) => [r, []]));
    for (let i = 0; i < runs; i++) for (const r of routes) results.get(r)!.push(await rate(`${server.base}${r}`, seconds));
    const live = median(results.get("/live")!);
    const listed = (await (await fetch(`${server.base}/v1/models?show_all=true`)).json()).data.length;
    console.log(`bench catalog: ${runs} rounds of ${seconds} s per route, 8 keep-alive clients, ${listed} models with show_all (51 local)`);
    const out: Figure[] = [];
    for (const r of routes) {
      const rps = median(results.get(r)!);
      if (r !== "/live") out.push({ name: `catalog: ${r} req/s`, value: rps, unit: "req/s", baseline: { name: "/live", value: live }, ...(r === "/v1/models" ? { goal: { op: ">=", target: 0.3 } as const } : {}) });
      const goal = r === "/v1/models" ? "  (goal >= 0.3)" : "";
      console.log(`  ${r.padEnd(26)} ${rps.toFixed(0).padStart(7)} req/s, ratio to /live ${(rps / live).toFixed(3)}${goal}`);
    }
    const rebuilt = await rebuilds(server.base);
    const cached = rebuilt.find((f) => f.name === "catalog: /v1/models rebuilt")!.baseline;
    out.push({ name: "catalog: /v1/models, the first after start (51 GGUF headers read)", value: first, unit: "ms", baseline: cached });
    console.log(`  /v1/models, the first after start (51 GGUF headers read): ${first.toFixed(1)} ms`);
    out.push(...rebuilt);
    // The same server started again on the same cache directory: the headers it read are kept
    // (models/gguf-header-cache.ts), so its first listing reads none of them.
    await server.stop();
    server = await spawnServer(w);
    const restarted = await timedFetch(`${server.base}/v1/models`);
    out.push({ name: "catalog: /v1/models, the first after a restart (the 51 headers kept)", value: restarted, unit: "ms", baseline: { name: "the first after the first start", value: first } });
    console.log(`  /v1/models, the first after a restart (the 51 headers kept): ${restarted.toFixed(1)} ms`);
    return out;
  } finally {
    await server.stop();
    w.cleanup();
  }
}

/** Each listing's request once its cache went stale (median of 5), against the same request
 * served from the cache (median of 20 back to back, right after). */
async function rebuilds(base: string): Promise<Figure[]> {
  const out: Figure[] = [];
  console.log("  a polling client's request, the listing rebuilt (median of 5) / served from the cache (median of 20)");
  for (const r of ["/v1/models", "/v1/models?show_all=true", "/api/tags", "/v1/health"]) {
    const stale: number[] = [];
    const cached: number[] = [];
    for (let i = 0; i < 5; i++) {
      await Bun.sleep(STALE_AFTER_MS);
      stale.push(await timedFetch(`${base}${r}`));
      for (let j = 0; j < 4; j++) cached.push(await timedFetch(`${base}${r}`));
    }
    const [rebuilt, fromCache] = [median(stale), median(cached)];
    out.push({ name: `catalog: ${r} rebuilt`, value: rebuilt, unit: "ms", baseline: { name: "served from the cache", value: fromCache } });
    console.log(`  ${r.padEnd(26)} ${rebuilt.toFixed(2).padStart(7)} ms rebuilt, ${fromCache.toFixed(2)} ms cached`);
  }
  return out;
}
