// The Anthropic Messages API with the official @anthropic-ai/sdk, against a real llama-server.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let client: Anthropic;
const CHAT = "extra.tiny-chat";

beforeAll(async () => {
  const models = testModelsDir();
  const extra = tempDir("lemonade-extra-");
  for (const f of [MODELS.chat, MODELS.embed]) copyFileSync(join(models, f), join(extra, f));
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MAX_LOADED_MODELS: "-1", LEMONADE_API_KEY: "sk-test" });
  // The SDK sends the key as x-api-key, which the server accepts like a Bearer token.
  client = new Anthropic({ baseURL: server.url, apiKey: "sk-test", maxRetries: 0 });
});
afterAll(() => server.close());

const weather: Anthropic.Tool = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

test("messages: system, max_tokens, temperature, stop_sequences", async () => {
  const msg = await client.messages.create({
    model: CHAT,
    max_tokens: 6,
    system: "You are terse.",
    // This SDK version no longer types `temperature`; the API still takes it.
    ...({ temperature: 0.5 } as object),
    stop_sequences: ["\n\n\n"],
    messages: [{ role: "user", content: "Hello" }],
  });
  expect(msg.type).toBe("message");
  expect(msg.role).toBe("assistant");
  expect(msg.model).toBe(CHAT);
  expect(msg.content[0]!.type).toBe("text");
  expect(msg.stop_reason).toMatch(/max_tokens|stop_sequence|end_turn/);
  expect(msg.usage.output_tokens).toBeLessThanOrEqual(6);
  expect(msg.usage.input_tokens).toBeGreaterThan(0);
});

test("streaming with the SDK's stream helper: the documented event sequence", async () => {
  const types: string[] = [];
  const stream = client.messages.stream({ model: CHAT, max_tokens: 5, messages: [{ role: "user", content: "Count" }] });
  stream.on("streamEvent", (event) => types.push(event.type));
  let text = "";
  stream.on("text", (t) => (text += t));
  const final = await stream.finalMessage();
  expect(types[0]).toBe("message_start");
  expect(types).toContain("content_block_start");
  expect(types).toContain("content_block_delta");
  expect(types).toContain("content_block_stop");
  expect(types.at(-2)).toBe("message_delta");
  expect(types.at(-1)).toBe("message_stop");
  expect(text.length).toBeGreaterThan(0);
  expect(final.usage.output_tokens).toBe(5);
  expect((final.content[0] as Anthropic.TextBlock).text).toBe(text);
});

test("a tool round trip: tool_use out, tool_result back in", async () => {
  const first = await client.messages.create({
    model: CHAT,
    max_tokens: 24,
    tools: [weather],
    messages: [{ role: "user", content: "Weather in Paris?" }],
  });
  const toolUse = first.content.find((b) => b.type === "tool_use") as Anthropic.ToolUseBlock | undefined;
  if (toolUse) {
    expect(first.stop_reason).toBe("tool_use");
    expect(toolUse.name).toBe("get_weather");
    expect(typeof toolUse.input).toBe("object");
  }
  // Either way, the client sends a tool result and gets an answer: the blocks are understood.
  const id = toolUse?.id ?? "toolu_1";
  const second = await client.messages.create({
    model: CHAT,
    max_tokens: 4,
    tools: [weather],
    messages: [
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: [{ type: "tool_use", id, name: "get_weather", input: { city: "Paris" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "21 C and sunny" }] },
    ],
  });
  expect(second.type).toBe("message");
  const promptOf = (m: Anthropic.Message) => m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0);
  expect(promptOf(second)).toBeGreaterThan(promptOf(first));
});

test("count_tokens agrees with the prompt a message uses", async () => {
  const body = { model: CHAT, messages: [{ role: "user" as const, content: "How many tokens is this?" }] };
  const counted = await client.messages.countTokens(body);
  const msg = await client.messages.create({ ...body, max_tokens: 1 });
  expect(counted.input_tokens).toBeGreaterThan(3);
  expect(counted.input_tokens).toBe(msg.usage.input_tokens + (msg.usage.cache_read_input_tokens ?? 0));
});

test("unknown fields are ignored and named in the warning header, never a 400", async () => {
  const res = await fetch(`${server.url}/v1/messages?beta=1`, {
    method: "POST",
    headers: { "x-api-key": "sk-test", "content-type": "application/json" },
    body: JSON.stringify({ model: CHAT, max_tokens: 2, messages: [{ role: "user", content: "x" }], container: "c1", service_tier: "auto", metadata: { user_id: "u" } }),
  });
  expect(res.status).toBe(200);
  // Lemonade's wording, one warning per thing dropped, joined by " | ".
  expect(res.headers.get("x-lemonade-warning")).toBe("Ignored unsupported beta query value: 1 | Ignored 'metadata' field | Ignored 'container' field | Ignored 'service_tier' field");
});

test("errors come in Anthropic's shape, which the SDK raises as its own error classes", async () => {
  const missing = await client.messages.create({ model: "no-such-model", max_tokens: 2, messages: [{ role: "user", content: "x" }] }).catch((e) => e);
  expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
  expect(missing.error).toMatchObject({ type: "error", error: { type: "not_found_error" } });
  const notLlm = await client.messages.create({ model: "extra.tiny-embed", max_tokens: 2, messages: [{ role: "user", content: "x" }] }).catch((e) => e);
  expect(notLlm).toBeInstanceOf(Anthropic.BadRequestError);
  const badKey = new Anthropic({ baseURL: server.url, apiKey: "wrong", maxRetries: 0 });
  const denied = await badKey.messages.create({ model: CHAT, max_tokens: 2, messages: [{ role: "user", content: "x" }] }).catch((e) => e);
  expect(denied).toBeInstanceOf(Anthropic.AuthenticationError);
  const schema = await fetch(`${server.url}/v1/messages`, { method: "POST", headers: { "x-api-key": "sk-test" }, body: JSON.stringify({ model: CHAT }) });
  expect(schema.status).toBe(400);
  expect(await schema.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
});

test("a matched stop sequence is stop_reason stop_sequence, naming it; a cut answer is max_tokens", async () => {
  // Greedy decoding of the tiny model's text soon produces a space or a common letter.
  const stops = [" ", "e", "a", "o", "t"];
  const msg = await client.messages.create({ model: CHAT, max_tokens: 60, temperature: 0, stop_sequences: stops, messages: [{ role: "user", content: "Tell me a story" }] } as never);
  const stopped = msg as Anthropic.Message;
  expect(stopped.stop_reason).toBe("stop_sequence");
  expect(stops).toContain(stopped.stop_sequence!);
  const streamed = await client.messages.stream({ model: CHAT, max_tokens: 60, temperature: 0, stop_sequences: stops, messages: [{ role: "user", content: "Tell me a story" }] } as never).finalMessage();
  expect(streamed.stop_reason).toBe("stop_sequence");
  expect(streamed.stop_sequence).toBe(stopped.stop_sequence);
  const cut = await client.messages.create({ model: CHAT, max_tokens: 2, messages: [{ role: "user", content: "hi" }] });
  expect(cut.stop_reason).toBe("max_tokens");
});

test("thinking disabled reaches the chat template as enable_thinking does (the prompt gains the empty think block)", async () => {
  const ask = (extra: object) => client.messages.create({ model: CHAT, max_tokens: 1, messages: [{ role: "user", content: "hi" }], ...extra } as never) as Promise<Anthropic.Message>;
  const prompt = (m: Anthropic.Message) => m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0);
  const plain = await ask({});
  const off = await ask({ thinking: { type: "disabled" } });
  expect(prompt(off)).toBeGreaterThan(prompt(plain));
});

test("a named tool choice offers the model that tool alone; output_config's schema constrains the text", async () => {
  // The tiny model's template does not force a call, so what is checked is the prompt: with the
  // tool named, only its definition is in it.
  const time: Anthropic.Tool = { name: "get_time", description: "The time", input_schema: { type: "object", properties: {} } };
  const ask = (tool_choice: object) =>
    client.messages.create({ model: CHAT, max_tokens: 1, tools: [weather, time], tool_choice, messages: [{ role: "user", content: "What time is it?" }] } as never) as Promise<Anthropic.Message>;
  const prompt = (m: Anthropic.Message) => m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0);
  const both = await ask({ type: "auto" });
  const named = await ask({ type: "tool", name: "get_time" });
  expect(prompt(named)).toBeLessThan(prompt(both));

  const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
  // Greedy, with room for the whitespace the grammar allows the random-weight model between tokens.
  const json = await client.messages.create({ model: CHAT, max_tokens: 300, temperature: 0, output_config: { format: { type: "json_schema", schema } }, messages: [{ role: "user", content: "Answer" }] } as never);
  const text = (json as Anthropic.Message).content.map((b) => (b.type === "text" ? b.text : "")).join("");
  expect(typeof JSON.parse(text).ok).toBe("boolean");
});

test("ignored fields are also listed in the message's warnings", async () => {
  const res = await fetch(`${server.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": "sk-test" },
    body: JSON.stringify({ model: CHAT, max_tokens: 2, messages: [{ role: "user", content: "x" }], container: "c1" }),
  });
  expect((await res.json()).warnings).toEqual(["Ignored 'container' field"]);
});
