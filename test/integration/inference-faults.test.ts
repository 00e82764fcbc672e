// The inference path's timing and failure rules, on the FAKE llama-server: stream headers at once
// and keep-alives while the engine is silent, one error event for a stream that fails, replay
// after an engine dies (crashed, killed or hung), and normalised engine errors on every dialect.
// Integration tier: it waits out the proxy's real one-second pings and hang checks.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startFakeServer(["a"], { LEMONADE_LOG_LEVEL: "info", LEMONADE_HANG_CHECK_MS: "200" });
});
afterAll(() => server.close());

const post = (path: string, body: Record<string, unknown>) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const chat = (body: Record<string, unknown>) => post("/v1/chat/completions", { model: "extra.a", messages: [{ role: "user", content: "hi" }], ...body });
const loads = () => server.ctx.logger.snapshot().filter((e) => /Loading a on llama\.cpp/.test(e.line)).length;
const enginePid = () => server.ctx.scheduler.list()[0]!.engine.pid;
const events = (text: string) => text.trim().split("\n\n");

test("a stream's headers come at once and a ping follows every second the engine is silent", async () => {
  expect((await chat({ max_tokens: 1 })).status).toBe(200);
  const started = performance.now();
  const res = await chat({ stream: true, max_tokens: 3, fake: { ttft_ms: 3000 } });
  const headersMs = performance.now() - started;
  expect(headersMs).toBeLessThan(100);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  expect(res.headers.get("cache-control")).toBe("no-cache");
  expect(res.headers.get("x-accel-buffering")).toBe("no");
  const text = await res.text();
  const pings = events(text).filter((e, i) => e === ": ping" && i > 0);
  expect(pings.length).toBeGreaterThanOrEqual(2);
  expect(text.indexOf(": ping")).toBeLessThan(text.indexOf("tok0"));
  expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
  // The official client reads through the keep-alives.
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused" });
  const stream = await client.chat.completions.create({ model: "extra.a", messages: [{ role: "user", content: "hi" }], max_tokens: 2, stream: true, fake: { ttft_ms: 1200 } } as never);
  let content = "";
  for await (const part of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) content += part.choices[0]?.delta?.content ?? "";
  expect(content).toBe("tok0 tok1 ");
});

test("Anthropic streams send event: ping while the engine is silent, and the SDK reads through them", async () => {
  const silent = [{ role: "user", content: 'hi [[fake {"ttft_ms": 1200}]]' }];
  const res = await post("/v1/messages", { model: "extra.a", max_tokens: 2, stream: true, messages: silent });
  const text = await res.text();
  expect(text).toContain('event: ping\ndata: {"type":"ping"}');
  expect(text.indexOf("event: ping")).toBeLessThan(text.indexOf("content_block_delta"));
  const client = new Anthropic({ baseURL: server.url, apiKey: "unused" });
  const message = await client.messages.stream({ model: "extra.a", max_tokens: 3, messages: [{ role: "user", content: "hi" }] }).finalMessage();
  expect(message.content.map((b) => (b.type === "text" ? b.text : b.type))).toEqual(["tok0 tok1 tok2 "]);
  expect(message.stop_reason).toBe("max_tokens");
  expect(message.model).toBe("extra.a");
});

test("an engine that dies after sending tokens: exactly one error event, no [DONE]; the next request is served", async () => {
  const res = await chat({ stream: true, max_tokens: 20, fake: { die_after: 3 } });
  const text = await res.text();
  expect(events(text).filter((e) => e.includes("tok"))).toHaveLength(3);
  const errors = events(text).filter((e) => e.includes('"error"'));
  expect(errors).toHaveLength(1);
  expect(JSON.parse(errors[0]!.replace(/^data: /, "")).error).toMatchObject({ type: "backend_error", status_code: 502 });
  expect(text).not.toContain("[DONE]");
  expect((await chat({ max_tokens: 2 })).status).toBe(200);
});

test("an engine that dies before answering is replaced and the request replayed: streaming and not", async () => {
  const before = loads();
  const once = join(tempDir(), "died");
  const plain = await chat({ max_tokens: 2, fake: { die_once: once } });
  expect(plain.status).toBe(200);
  expect((await plain.json()).choices[0].message.content).toBe("tok0 tok1 ");
  const streamed = await chat({ stream: true, max_tokens: 2, fake: { die_once: `${once}-stream` } });
  const text = await streamed.text();
  expect(text).toContain("tok1");
  expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
  expect(loads() - before).toBe(2);
});

test("a killed idle engine: the next request gets 200, not 502", async () => {
  expect((await chat({ max_tokens: 1 })).status).toBe(200);
  process.kill(enginePid(), "SIGKILL");
  const res = await chat({ max_tokens: 2 });
  expect(res.status).toBe(200);
});

test("a hung engine fails its health checks, is stopped, and the request is replayed on a fresh one", async () => {
  expect((await chat({ max_tokens: 1 })).status).toBe(200);
  const pid = enginePid();
  const pending = chat({ max_tokens: 2, fake: { ttft_ms: 1000 } });
  await Bun.sleep(100);
  process.kill(pid, "SIGSTOP");
  const res = await pending;
  expect(res.status).toBe(200);
  expect(enginePid()).not.toBe(pid);
  expect(server.ctx.logger.snapshot().some((e) => e.line.includes("stopped answering its health checks"))).toBe(true);
});

test("an engine that dies on the replay too: a retryable 503 backend_unavailable (and one error event on a stream)", async () => {
  const res = await chat({ max_tokens: 2, fake: { die_after: 0 } });
  expect(res.status).toBe(503);
  const body = await res.json();
  expect(body.error).toMatchObject({ code: "backend_unavailable", type: "backend_error", retryable: true });
  expect(body.error.message).not.toMatch(/verbose|\/tmp\//);
  const streamed = await (await chat({ stream: true, max_tokens: 2, fake: { die_after: 0 } })).text();
  const errors = events(streamed).filter((e) => e.includes('"error"'));
  expect(errors).toHaveLength(1);
  expect(JSON.parse(errors[0]!.slice(6)).error).toMatchObject({ code: "backend_unavailable", status_code: 503 });
  expect(streamed).not.toContain("[DONE]");
});

test("a context overflow is normalised on every dialect: OpenAI 400 (and one stream event), Anthropic's shape, Ollama's", async () => {
  const messages = [{ role: "user", content: "word ".repeat(5000) }];
  const openai = await chat({ max_tokens: 8, messages });
  expect(openai.status).toBe(400);
  const body = await openai.json();
  expect(body.error).toMatchObject({ type: "invalid_request_error", code: "context_length_exceeded" });
  expect(body.error.message).toContain("exceeds the available context size");

  const stream = await (await chat({ max_tokens: 8, messages, stream: true })).text();
  expect(events(stream).filter((e) => e.startsWith("data: "))).toHaveLength(1);
  expect(JSON.parse(stream.slice(stream.indexOf("data: ") + 6)).error).toMatchObject({ code: "context_length_exceeded", status_code: 400, type: "invalid_request_error" });
  expect(stream).not.toContain("[DONE]");

  const anthropic = await post("/v1/messages", { model: "extra.a", max_tokens: 8, messages });
  expect(anthropic.status).toBe(400);
  expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  const anthropicStream = await (await post("/v1/messages", { model: "extra.a", max_tokens: 8, messages, stream: true })).text();
  expect(anthropicStream.match(/event: error/g)).toHaveLength(1);

  for (const stream of [false, true]) {
    const ollama = await post("/api/chat", { model: "extra.a", stream, messages });
    expect(ollama.status).toBe(400);
    expect((await ollama.json()).error).toContain("exceeds the available context size");
  }
});

test("Ollama: a model whose engine fails to start is a 404 on a route that loads on first use", async () => {
  // llamacpp_args takes only llama-server's own flags: the model's file name makes the FAKE exit.
  const broken = await startFakeServer(["fake-exit-3"]);
  try {
    const res = await fetch(`${broken.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "extra.fake-exit-3", stream: false, messages: [{ role: "user", content: "hi" }] }) });
    expect(res.status).toBe(404);
    expect(typeof (await res.json()).error).toBe("string");
  } finally {
    await broken.close();
  }
});

test("an OpenAI route that loads on first use answers a failed load as /v1/load does: naming the model as the request did, with requested_model", async () => {
  const broken = await startFakeServer(["fake-exit-3"]);
  try {
    for (const stream of [false, true]) {
      const res = await fetch(`${broken.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "fake-exit-3", stream, messages: [{ role: "user", content: "hi" }] }) });
      expect(res.status).toBe(500);
      const { error } = await res.json();
      expect(error.code).toBe("model_load_error");
      expect(error.type).toBe("model_load_error");
      expect(error.requested_model).toBe("fake-exit-3");
      expect(error.message).toStartWith("Failed to load model 'fake-exit-3': engine exited with code 3");
    }
    const completion = await fetch(`${broken.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "extra.fake-exit-3", prompt: "hi" }) });
    const { error } = await completion.json();
    expect([completion.status, error.requested_model]).toEqual([500, "extra.fake-exit-3"]);
    expect(error.message).toStartWith("Failed to load model 'extra.fake-exit-3': ");
    // Anthropic's routes keep Anthropic's own shape, as Lemonade's do.
    const messages = await fetch(`${broken.url}/v1/messages`, { method: "POST", body: JSON.stringify({ model: "fake-exit-3", max_tokens: 4, messages: [{ role: "user", content: "hi" }] }) });
    const said = await messages.json();
    expect(said.type).toBe("error");
    expect(said.error.requested_model).toBeUndefined();
  } finally {
    await broken.close();
  }
});

test("a client that cancels a stream before its first token neither kills the engine nor keeps its claim", async () => {
  expect((await chat({ max_tokens: 1 })).status).toBe(200);
  const pid = enginePid();
  const res = await chat({ stream: true, max_tokens: 3, fake: { ttft_ms: 1500 } });
  const reader = res.body!.getReader();
  await reader.read();
  await reader.cancel();
  const deadline = Date.now() + 3000;
  while (server.ctx.scheduler.list()[0]!.inflight > 0 && Date.now() < deadline) await Bun.sleep(20);
  expect(server.ctx.scheduler.list()[0]!.inflight).toBe(0);
  expect(enginePid()).toBe(pid);
  expect((await chat({ max_tokens: 2 })).status).toBe(200);
  expect(enginePid()).toBe(pid);
});

test("a client that stops reading at [DONE] before the engine's stream closes is counted as answered; one that leaves mid-answer is not", async () => {
  const count = async (status: number) => {
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const m = new RegExp(`lemonade_engine_requests_total\\{model="a",endpoint="chat_completions",status="${status}"\\} (\\d+)`).exec(metrics);
    return Number(m?.[1] ?? 0);
  };
  const settled = async (status: number, from: number) => {
    for (let i = 0; i < 100 && (await count(status)) === from; i++) await Bun.sleep(20);
    return count(status);
  };
  const [answered, left] = [await count(200), await count(499)];
  // As `lemonade run` does: read to [DONE], then let go while the engine has not closed yet.
  const whole = await chat({ stream: true, max_tokens: 3, fake: { close_ms: 1500 } });
  const reader = whole.body!.getReader();
  let text = "";
  while (!text.includes("[DONE]")) text += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  expect(await settled(200, answered)).toBe(answered + 1);
  expect(await count(499)).toBe(left);

  const cut = await chat({ stream: true, max_tokens: 50, fake: { token_ms: 100 } });
  const partial = cut.body!.getReader();
  let first = "";
  while (!first.includes("tok0")) first += new TextDecoder().decode((await partial.read()).value);
  await partial.cancel();
  expect(await settled(499, left)).toBe(left + 1);
  expect(await count(200)).toBe(answered + 1);
});
