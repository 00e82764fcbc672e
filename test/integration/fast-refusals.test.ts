// Requests refusable at once are refused before anything reaches an engine, as the FAKE
// llama-server's request log shows: a model name longer than any can be (a 10 MB string), a body
// nested 10,000 deep or not an object, and a prompt longer than the context in any tokenisation
// (its bytes over the vocabulary's longest token, read from the GGUF). Also: `effective.ctx_size`
// keeps -1 (auto) while `resolved_ctx_size` carries the number.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultCacheDir } from "../../config/config.ts";
import { LLAMACPP } from "../../engines/llamacpp.ts";
import { sourceDir } from "../../engines/source-build.ts";
import { GgufType, readGgufMetadata } from "../../models/gguf.ts";
import { writeGguf } from "../../scripts/test-models/gguf-writer.ts";
import { FAKE_DIR } from "../helpers/fake-engine.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const CTX = 256;
/** The vocabulary's longest token is 4 bytes: no text tokenises to fewer than its bytes / 4 tokens. */
const TOKENS = ["a", "bb", "cccc", "d"];

let server: TestServer;
let modelsDir: string;

beforeAll(async () => {
  const cacheDir = tempDir();
  modelsDir = tempDir("lemonade-fake-models-");
  mkdirSync(cacheDir, { recursive: true });
  writeGguf(
    join(modelsDir, "vocab.gguf"),
    [
      ["general.architecture", GgufType.STRING, "llama"],
      ["llama.context_length", GgufType.UINT32, 4096],
      ["tokenizer.ggml.tokens", GgufType.ARRAY, { type: GgufType.STRING, values: TOKENS }],
    ],
    [],
  );
  writeFileSync(join(cacheDir, "recipe_options.json"), JSON.stringify({ "extra.vocab": { llamacpp_backend: "system", ctx_size: CTX } }));
  server = await startTestServer({ PATH: `${FAKE_DIR}:${process.env.PATH ?? ""}`, LEMONADE_EXTRA_MODELS_DIR: modelsDir }, cacheDir, { engines: false });
  expect((await post("/v1/load", JSON.stringify({ model_name: "extra.vocab" }))).status).toBe(200);
});
afterAll(() => server.close());

function post(path: string, body: string) {
  return fetch(`${server.url}${path}`, { method: "POST", body, headers: { "content-type": "application/json" } });
}

/** What the FAKE llama-server has been asked so far. */
async function engineLog(): Promise<string[]> {
  const loaded = (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded.find((m: any) => m.model_name === "vocab");
  return (await fetch(`${loaded.backend_url.replace(/\/v1$/, "")}/fake/requests`)).json();
}

const chatBody = (model: string, content = "hi") => ({ model, max_tokens: 2, messages: [{ role: "user", content }] });
const ROUTES: [string, (model: string, content?: string) => unknown][] = [
  ["/v1/chat/completions", chatBody],
  ["/v1/messages", (model, content = "hi") => ({ model, max_tokens: 2, messages: [{ role: "user", content }] })],
  ["/v1/messages/count_tokens", (model, content = "hi") => ({ model, messages: [{ role: "user", content }] })],
  ["/api/chat", (model, content = "hi") => ({ model, stream: false, messages: [{ role: "user", content }] })],
  ["/api/generate", (model, content = "hi") => ({ model, stream: false, prompt: content })],
];

test("the GGUF reader finds the vocabulary's longest token, with the arrays skipped or read", () => {
  const path = join(modelsDir, "vocab.gguf");
  expect(readGgufMetadata(path, { arrays: false, tensors: false }).longestTokenBytes).toBe(4);
  expect(readGgufMetadata(path).longestTokenBytes).toBe(4);
  // A real vocabulary (Qwen2's, from the llama.cpp sources the CPU build uses), where present.
  const qwen = join(sourceDir(defaultCacheDir(), LLAMACPP), "models", "ggml-vocab-qwen2.gguf");
  if (!existsSync(qwen)) return console.log("no llama.cpp vocabulary in the cache; the real-vocabulary check is skipped");
  const skipped = readGgufMetadata(qwen, { arrays: false, tensors: false }).longestTokenBytes!;
  const full = readGgufMetadata(qwen, { tensors: false });
  const tokens = (full.kv.get("tokenizer.ggml.tokens")!.value as { values: string[] }).values;
  expect(skipped).toBe(Math.max(...tokens.slice(0, 50_000).map((t) => Buffer.byteLength(t)), ...tokens.slice(50_000).map((t) => Buffer.byteLength(t))));
  expect(full.longestTokenBytes).toBe(skipped);
});

test("a 10 MB model name is a 400 on every chat route, and no engine hears of it", async () => {
  const before = await engineLog();
  const huge = "m".repeat(10 * 1024 * 1024);
  for (const [path, body] of ROUTES) {
    const res = await post(path, JSON.stringify(body(huge)));
    expect(res.status, path).toBe(400);
    const text = await res.text();
    expect(text.length, path).toBeLessThan(2000);
    expect(text).toContain("model");
  }
  expect(await engineLog()).toEqual(before);
});

test("a bare array nested 10,000 deep, and a body that is no object, are 400 invalid_json at parse time", async () => {
  const before = await engineLog();
  const deep = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
  for (const [path] of ROUTES) {
    for (const body of [deep, "[]", '"model"', "5"]) {
      const res = await post(path, body);
      expect(res.status, `${path} ${body.slice(0, 5)}`).toBe(400);
      // Each dialect's error body: OpenAI's names the code, Anthropic's and Ollama's the message.
      expect(await res.text()).toMatch(/invalid_json|deeper than 64 levels|must be a JSON object/);
    }
  }
  expect(await engineLog()).toEqual(before);
});

test("a prompt longer than the context in any tokenisation is context_length_exceeded before the engine tokenises it", async () => {
  const before = await engineLog();
  // 4 bytes a token at the most: 4 * 256 + 4 bytes cannot fit 256 tokens.
  const long = "x".repeat(4 * CTX + 4);
  for (const [path, body] of ROUTES.filter(([p]) => p !== "/v1/messages/count_tokens")) {
    const res = await post(path, JSON.stringify(body("extra.vocab", long)));
    expect(res.status, path).toBe(400);
    expect(await res.text(), path).toMatch(/context_length_exceeded|The prompt is at least 257 tokens/);
  }
  expect(await engineLog()).toEqual(before);
  // One that may fit goes on to the engine, which tokenises it.
  const fits = await post("/v1/chat/completions", JSON.stringify(chatBody("extra.vocab", "x".repeat(100))));
  expect(fits.status).toBe(200);
  expect((await engineLog()).slice(before.length)).toEqual(["POST /v1/chat/completions"]);
});

test("effective.ctx_size keeps -1 (auto) when the user sets it; resolved_ctx_size is the number it comes to", async () => {
  const url = `${server.url}/v1/models/extra.vocab/options`;
  const set = await (await post(url.slice(server.url.length), JSON.stringify({ ctx_size: -1 }))).json();
  expect(set.saved.ctx_size).toBe(-1);
  expect(set.effective.ctx_size).toBe(-1);
  expect(set.resolved_ctx_size).toBeGreaterThan(0);
  const fixed = await (await post(url.slice(server.url.length), JSON.stringify({ ctx_size: CTX }))).json();
  expect([fixed.effective.ctx_size, fixed.resolved_ctx_size]).toEqual([CTX, CTX]);
});
