// Load admission by memory, on real llama-servers: with LEMONADE_MEMORY_LIMIT_GB forced small
// enough for one tiny model and not two (each needs ~92 MB: 25 MB of weights, 0.5 MB of KV cache
// for 4096 tokens, and the engine's overhead), a second load is refused with the documented 507,
// or evicts the first when its auto_evict is on. max_loaded_models is unlimited here, so memory
// is the only limit.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const loaded = async () => (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded.map((m: any) => m.model_name);

beforeAll(async () => {
  const extra = tempDir("lemonade-extra-");
  copyFileSync(join(testModelsDir(), MODELS.chat), join(extra, MODELS.chat));
  copyFileSync(join(testModelsDir(), MODELS.chatB), join(extra, MODELS.chatB));
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MAX_LOADED_MODELS: "-1", LEMONADE_MEMORY_LIMIT_GB: "0.15" });
});
afterAll(() => server.close());

test("ctx_size -1 resolves to what fits: the trained window of the tiny model", async () => {
  const options = await (await fetch(`${server.url}/v1/models/extra.tiny-chat/options`)).json();
  expect(options.resolved_ctx_size).toBe(4096);
});

test("a second model that does not fit is refused with 507 model_load_error naming the GB and the model by its listed id", async () => {
  expect((await post("/v1/load", { model_name: "extra.tiny-chat" })).status).toBe(200);
  const refused = await post("/v1/load", { model_name: "extra.tiny-chat-b" });
  expect(refused.status).toBe(507);
  const body = await refused.json();
  expect(body.code).toBe("model_load_error");
  // Lemonade's prefix quotes the request; the reason names the model by its listed id (the bare name).
  expect(body.message).toMatch(/^Failed to load model 'extra\.tiny-chat-b': tiny-chat-b needs 0\.\d\d GB of memory and 0\.\d\d GB is free; unload a model, or load with auto_evict on/);
  expect(await loaded()).toEqual(["tiny-chat"]);
});

test("/v1/health reports each loaded model's memory by the estimate admission uses, and its slots", async () => {
  const [entry] = (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded;
  // Under the 0.15 GB limit that admitted it, and more than its 25 MB of weights.
  expect(entry.memory_estimate_bytes).toBeGreaterThan(25e6);
  expect(entry.memory_estimate_bytes).toBeLessThan(0.15 * 1024 ** 3);
  expect(entry.slots).toBeGreaterThanOrEqual(1);
  expect(entry.slots_in_use).toBe(0);
});

test("with auto_evict on, the least recently used model makes room", async () => {
  const res = await post("/v1/load", { model_name: "extra.tiny-chat-b", auto_evict: true });
  expect(res.status).toBe(200);
  expect(await loaded()).toEqual(["tiny-chat-b"]);
  const chat = await post("/v1/chat/completions", { model: "extra.tiny-chat-b", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
  expect(chat.status).toBe(200);
});
