// The Ollama-compatible API with the official `ollama` client, against real llama-server
// processes on the tiny generated models.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let ollama: Ollama;
const CHAT = "extra.tiny-chat";
const EMBED = "extra.tiny-embed";
// The names /api/tags and /api/ps list them by: their bare names, which nothing else holds.
const CHAT_TAG = "tiny-chat:latest";
const EMBED_TAG = "tiny-embed:latest";

beforeAll(async () => {
  const models = testModelsDir();
  const extra = tempDir("lemonade-extra-");
  for (const f of [MODELS.chat, MODELS.embed]) copyFileSync(join(models, f), join(extra, f));
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MAX_LOADED_MODELS: "-1" });
  ollama = new Ollama({ host: server.url });
});
afterAll(() => server.close());

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

describe("chat and generate", () => {
  test("chat, not streaming, with options and the :latest tag", async () => {
    const res = await ollama.chat({
      model: `${CHAT}:latest`,
      messages: [{ role: "user", content: "Hello" }],
      stream: false,
      options: { num_predict: 5, temperature: 0.5, seed: 3 },
    });
    expect(res.message.role).toBe("assistant");
    expect(res.message.content.length).toBeGreaterThan(0);
    expect(res.done).toBe(true);
    expect(res.done_reason).toBe("length");
    expect(res.eval_count).toBe(5);
    expect(res.prompt_eval_count).toBeGreaterThan(0);
    expect(res.eval_duration).toBeGreaterThan(0);
  });

  test("chat streams NDJSON pieces, then the done line and the counts line", async () => {
    const stream = await ollama.chat({ model: CHAT, messages: [{ role: "user", content: "Hi" }], stream: true, options: { num_predict: 6 } });
    const parts = [];
    for await (const part of stream) parts.push(part);
    const pieces = parts.filter((p) => !p.done);
    expect(pieces.map((p) => p.message.content).join("").length).toBeGreaterThan(0);
    // The client stops at the first done line, which carries the real reason and the counts.
    const done = parts.filter((p) => p.done);
    expect(done).toHaveLength(1);
    expect(done[0]!.done_reason).toBe("length");
    expect(done[0]!.eval_count).toBe(6);
    // The raw wire format: one JSON object per line, ending with the two done lines.
    const raw = await (await post("/api/chat", { model: CHAT, messages: [{ role: "user", content: "x" }], options: { num_predict: 2 } })).text();
    const lines = raw.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.done).map((l) => l.done_reason)).toEqual(["length", "stop"]);
    expect(lines.at(-1).eval_count).toBe(2);
  });

  test("tools: tool calls come back with object arguments, or plain text", async () => {
    const res = await ollama.chat({
      model: CHAT,
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            description: "Weather for a city",
            parameters: { type: "object", properties: { city: { type: "string", description: "City" } }, required: ["city"] },
          },
        },
      ],
      stream: false,
      options: { num_predict: 16 },
    });
    if (res.message.tool_calls?.length) {
      expect(res.message.tool_calls[0]!.function.name).toBe("get_weather");
      expect(typeof res.message.tool_calls[0]!.function.arguments).toBe("object");
    } else {
      expect(typeof res.message.content).toBe("string");
    }
  });

  test("a whole /api/generate answer's done_reason is stop even when num_predict cut it (ollama.md)", async () => {
    const res = await ollama.generate({ model: CHAT, prompt: "Once upon a time", stream: false, options: { num_predict: 2 } });
    expect(res.eval_count).toBe(2);
    expect(res.done_reason).toBe("stop");
  });

  test("tools asked for a stream: two lines, the whole answer then the done line, as Lemonade sends them", async () => {
    const tools = [{ type: "function", function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: {} } } }];
    const raw = await (await post("/api/chat", { model: CHAT, messages: [{ role: "user", content: "x" }], tools, options: { num_predict: 2 } })).text();
    const lines = raw.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => l.done)).toEqual([false, true]);
    expect(lines[0].eval_count).toBe(2);
    expect(lines[1]).toMatchObject({ message: { role: "assistant", content: "" }, done_reason: lines[0].done_reason, eval_count: 2 });
  });

  test("a tool result message round-trips back to the model", async () => {
    const res = await ollama.chat({
      model: CHAT,
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: "", tool_calls: [{ function: { name: "get_weather", arguments: { city: "Paris" } } }] },
        { role: "tool", content: '{"temp": 21}', tool_name: "get_weather" } as any,
      ],
      stream: false,
      options: { num_predict: 3 },
    });
    expect(res.done).toBe(true);
    expect(res.prompt_eval_count).toBeGreaterThan(10);
  });

  test("format: json constrains the reply", async () => {
    const res = await ollama.chat({ model: CHAT, messages: [{ role: "user", content: "json" }], format: "json", stream: false, options: { num_predict: 6 } });
    // Whitespace, an optional ```json fence (llama.cpp's grammar allows one), then an object.
    expect(res.message.content.replace(/^\s*`{1,3}(j(s(o(n)?)?)?)?/, "")).toMatch(/^\s*(\{[\s\S]*)?$/);
  });

  test("images to a model without vision are refused before the engine, with a 400 naming the model", async () => {
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    const res = await post("/api/chat", { model: CHAT, messages: [{ role: "user", content: "what is this", images: [png] }], stream: false });
    expect(res.status).toBe(400);
    // Named by the id /v1/models lists it by: the extra model's bare name.
    expect((await res.json()).error).toBe(`Model ${CHAT.slice("extra.".length)} does not accept images: it has no vision projector (mmproj)`);
  });

  test("generate, not streaming and streaming", async () => {
    const res = await ollama.generate({ model: CHAT, prompt: "Once upon", stream: false, options: { num_predict: 4 } });
    expect(res.response!.length).toBeGreaterThan(0);
    expect(res.done).toBe(true);
    expect(res.eval_count).toBe(4);
    const stream = await ollama.generate({ model: CHAT, prompt: "Once upon", stream: true, options: { num_predict: 4 } });
    let text = "";
    let last: any;
    for await (const part of stream) {
      text += part.response;
      last = part;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(last).toMatchObject({ done: true, done_reason: "length", eval_count: 4 });
  });

  test("keep_alive: 0 with no input unloads the model", async () => {
    await ollama.generate({ model: CHAT, prompt: "x", stream: false, options: { num_predict: 1 } });
    expect((await ollama.ps()).models.map((m) => m.name)).toContain(CHAT_TAG);
    const res = await ollama.chat({ model: CHAT, messages: [], keep_alive: 0, stream: false });
    expect(res.done_reason).toBe("unload");
    expect((await ollama.ps()).models.map((m) => m.name)).not.toContain(CHAT_TAG);
    const pre = await ollama.generate({ model: CHAT, prompt: "", stream: false });
    expect(pre.done_reason).toBe("load");
    expect((await ollama.ps()).models.map((m) => m.name)).toContain(CHAT_TAG);
  });
});

describe("embeddings and model info", () => {
  test("embed returns one vector per input; embeddings the older single vector", async () => {
    const res = await ollama.embed({ model: EMBED, input: ["one", "two", "three"] });
    expect(res.embeddings).toHaveLength(3);
    expect(res.embeddings[0]).toHaveLength(32);
    const single = await ollama.embeddings({ model: EMBED, prompt: "one" });
    single.embedding.forEach((v, i) => expect(v).toBeCloseTo(res.embeddings[0]![i]!, 5));
    // Each route is counted under its own label, from its spec definition.
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    for (const label of ["ollama_embed", "ollama_embeddings"]) {
      expect(metrics).toMatch(new RegExp(`lemonade_engine_requests_total\\{model="${EMBED.slice("extra.".length)}",endpoint="${label}",status="200"\\} 1`));
    }
    // ollama.md: `prompt` or `input`, a string or an array (the first text's vector), and the model named back.
    const byInput = await (await post("/api/embeddings", { model: EMBED, input: ["one", "two"] })).json();
    expect(byInput.model).toBe(EMBED);
    byInput.embedding.forEach((v: number, i: number) => expect(v).toBeCloseTo(res.embeddings[0]![i]!, 5));
  });

  test("list, show, ps and version", async () => {
    const list = await ollama.list();
    expect(list.models.map((m) => m.name)).toEqual(expect.arrayContaining([CHAT_TAG, EMBED_TAG]));
    const shown = await ollama.show({ model: CHAT });
    expect(shown.capabilities).toContain("completion");
    expect(shown.details.family).toBe("llamacpp");
    expect(shown.parameters).toMatch(/^num_ctx \d+$/);
    expect((await ollama.show({ model: EMBED })).capabilities).toEqual(["embedding"]);
    const version = await ollama.version();
    expect(version.version).toMatch(/^\d+\.\d+\.\d+$/);
  });
});

describe("errors", () => {
  test("an unknown model is 404 with a string error, which the client raises", async () => {
    const err = await ollama.chat({ model: "no-such-model", messages: [{ role: "user", content: "x" }], stream: false }).catch((e) => e);
    expect(err.status_code).toBe(404);
    const res = await post("/api/generate", { model: "no-such-model", prompt: "x", stream: false });
    expect(res.status).toBe(404);
    expect(typeof (await res.json()).error).toBe("string");
    expect((await post("/api/show", { model: "no-such-model" })).status).toBe(404);
  });

  test("schema failures answer 400 with a string error", async () => {
    const res = await post("/api/chat", { messages: [] });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(typeof body.error).toBe("string");
    expect(body.error).toContain("model");
    const bad = await fetch(`${server.url}/api/embed`, { method: "POST", body: "{oops" });
    expect(bad.status).toBe(400);
    expect(typeof (await bad.json()).error).toBe("string");
  });

  test("an embedding request to a chat model is refused", async () => {
    const res = await post("/api/embed", { model: CHAT, input: "x" });
    expect(res.status).toBe(400);
  });

  test("create, copy, push and blobs answer 501", async () => {
    for (const path of ["/api/create", "/api/copy", "/api/push", "/api/blobs/sha256-0"]) {
      expect((await post(path, {})).status).toBe(501);
    }
  });
});
