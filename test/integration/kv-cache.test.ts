// The KV cache across a swap (runtime/kv-cache.ts) on real llama-server processes: with
// max_loaded_models=1 and two chat models, the evicted model's conversation is saved, restored on
// its next load (the engine reports the prompt tokens it took from its cache), and the answer is
// the one a server without the cache gives; a context-size change or a corrupt file means a normal
// prefill.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const A = "extra.tiny-chat";
const B = "extra.tiny-chat-b";
type Message = { role: string; content: string };

let withCache: TestServer;
let without: TestServer;

beforeAll(async () => {
  const models = testModelsDir();
  const extra = tempDir("lemonade-extra-");
  for (const f of [MODELS.chat, MODELS.chatB]) copyFileSync(join(models, f), join(extra, f));
  const env = { LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MAX_LOADED_MODELS: "1" };
  withCache = await startTestServer(env);
  without = await startTestServer({ ...env, LEMONADE_KV_CACHE_SWAP: "0" });
});
afterAll(async () => {
  await withCache.close();
  await without.close();
});

async function chat(server: TestServer, model: string, messages: Message[]): Promise<{ content: string; cached: number }> {
  const res = await fetch(`${server.url}/api/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages, max_tokens: 8, temperature: 0, seed: 1 }),
  });
  expect(res.status).toBe(200);
  const body = await res.json();
  return { content: body.choices[0].message.content, cached: body.timings.cache_n };
}

/** A model's saved conversations as /v1/health lists them: by the id /v1/models lists it by (an
 * extra model's bare name), never by its internal `extra.` key. */
async function saved(server: TestServer, model: string): Promise<{ conversations: number; bytes: number } | undefined> {
  const health = await (await fetch(`${server.url}/api/v1/health`)).json();
  const names = health.saved_kv_cache.map((s: { model_name: string }) => s.model_name);
  expect(names).not.toContain(model);
  return health.saved_kv_cache.find((s: { model_name: string }) => s.model_name === model.slice("extra.".length));
}

const first: Message = { role: "user", content: "Here is a long story about a lighthouse keeper, a storm and a ship that lost its way. ".repeat(6) };

/** Turn one on A, then one on B (A is evicted), then turn two on A: its answer and cache use. */
async function conversation(server: TestServer): Promise<{ content: string; cached: number; turnTwo: Message[] }> {
  const one = await chat(server, A, [first]);
  await chat(server, B, [{ role: "user", content: "Hello there." }]);
  const turnTwo = [first, { role: "assistant", content: one.content }, { role: "user", content: "And then what happened?" }];
  return { ...(await chat(server, A, turnTwo)), turnTwo };
}

describe("KV cache across a swap", () => {
  let restored: Awaited<ReturnType<typeof conversation>>;

  test("the evicted model's conversation is saved and listed in /v1/health", async () => {
    restored = await conversation(withCache);
    expect((await saved(withCache, A))?.conversations).toBe(1);
    const listed = await saved(withCache, B);
    expect(listed?.conversations).toBe(1);
    expect(listed!.bytes).toBeGreaterThan(0);
  });

  test("the next turn after the swap starts from the restored cache, and answers as without it", async () => {
    expect(restored.cached).toBeGreaterThan(50);
    const plain = await conversation(without);
    expect(plain.cached).toBe(0);
    expect(restored.content).toBe(plain.content);
    expect(await saved(without, A)).toBeUndefined();
  });

  test("a restore across a context-size change is refused: a normal prefill", async () => {
    // A is evicted with its second turn saved, then loaded with another context size.
    await chat(withCache, B, [{ role: "user", content: "Hello again." }]);
    expect((await saved(withCache, A))?.conversations).toBe(1);
    const load = await fetch(`${withCache.url}/api/v1/load`, { method: "POST", body: JSON.stringify({ model_name: A, ctx_size: 2048 }) });
    expect(load.status).toBe(200);
    const three = await chat(withCache, A, [...restored.turnTwo, { role: "assistant", content: restored.content }, { role: "user", content: "Go on." }]);
    expect(three.cached).toBe(0);
    expect(typeof three.content).toBe("string");
    // Never restored into the other context, the file stays for a load with the old one.
    expect((await saved(withCache, A))?.conversations).toBe(1);
  });

  test("a corrupt saved file means a normal prefill, and the file is dropped", async () => {
    const one = await chat(withCache, B, [first]);
    await chat(withCache, A, [{ role: "user", content: "Hello." }]);
    const before = (await saved(withCache, B))!.conversations;
    const dir = join(withCache.cacheDir, "slots", B);
    for (const f of readdirSync(dir).filter((f) => f.endsWith(".bin"))) writeFileSync(join(dir, f), "not a KV cache");
    const two = await chat(withCache, B, [first, { role: "assistant", content: one.content }, { role: "user", content: "And then?" }]);
    expect(two.cached).toBe(0);
    expect(typeof two.content).toBe("string");
    expect((await saved(withCache, B))?.conversations ?? 0).toBe(before - 1);
  });
});
