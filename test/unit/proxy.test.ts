// The whole server on FAKE engines (scripts/fake-engine/llama-server as the `system` llama.cpp
// backend): streams pass through whole, a dying engine ends its stream with one error event, and
// concurrent clients of two models sharing one slot are all answered.
import { afterEach, expect, test } from "bun:test";
import OpenAI from "openai";
import { startFakeServer } from "../helpers/fake-engine.ts";
import type { TestServer } from "../helpers/server.ts";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const chat = (s: TestServer, body: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${s.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }), signal });

const loads = (s: TestServer) => s.ctx.logger.snapshot().filter((e) => /Loading extra\.\w+ on llama\.cpp/.test(e.line)).length;

test("a stream through the server arrives whole, with the engine's timings recorded", async () => {
  server = await startFakeServer(["a"], { LEMONADE_LOG_LEVEL: "info" });
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused" });
  const stream = await client.chat.completions.create({ model: "extra.a", messages: [{ role: "user", content: "hi" }], max_tokens: 50, stream: true });
  let pieces = 0;
  let finish: string | null = null;
  for await (const part of stream) {
    if (part.choices[0]?.delta?.content) pieces++;
    finish = part.choices[0]?.finish_reason ?? finish;
  }
  expect(pieces).toBe(50);
  expect(finish).toBe("length");
  const stats = await (await fetch(`${server.url}/v1/stats`)).json();
  expect(stats.output_tokens).toBe(50);
});

test("an engine that dies mid-stream: exactly one error event, no [DONE], and the next request loads it again", async () => {
  server = await startFakeServer(["a"], { LEMONADE_LOG_LEVEL: "info" });
  const res = await chat(server, { model: "extra.a", stream: true, max_tokens: 20, fake: { die_after: 5 } });
  expect(res.status).toBe(200);
  const text = await res.text();
  const events = text.trim().split("\n\n");
  expect(events.filter((e) => e.includes("tok"))).toHaveLength(5);
  const errors = events.filter((e) => e.includes('"error"'));
  expect(errors).toHaveLength(1);
  expect(JSON.parse(errors[0]!.replace(/^data: /, "")).error).toMatchObject({ type: "backend_error", status_code: 502 });
  expect(text).not.toContain("[DONE]");
  const again = await chat(server, { model: "extra.a", max_tokens: 3 });
  expect(again.status).toBe(200);
  expect(loads(server)).toBe(2);
});

test("two models, one slot, 16 concurrent alternating clients: all 200, two engine starts", async () => {
  server = await startFakeServer(["a", "b"], { LEMONADE_LOG_LEVEL: "info" });
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: 16 }, (_, i) => chat(server!, { model: i % 2 ? "extra.b" : "extra.a", stream: true, max_tokens: 10, fake: { token_ms: 2 } }).then(async (r) => [r.status, await r.text()] as const)),
  );
  expect(results.map(([status]) => status)).toEqual(Array(16).fill(200));
  expect(results.every(([, text]) => text.includes("[DONE]"))).toBe(true);
  expect(loads(server)).toBe(2);
  console.log(`over HTTP: 16 requests, ${loads(server)} engine starts, ${Math.round(performance.now() - started)} ms`);
});

test("a client that gives up while its model waits for room starts no engine", async () => {
  server = await startFakeServer(["a", "b"], { LEMONADE_LOG_LEVEL: "info" });
  const long = chat(server, { model: "extra.a", stream: true, max_tokens: 40, fake: { token_ms: 10 } });
  const first = await long;
  const reading = first.text();
  const gaveUp = new AbortController();
  const waiting = chat(server, { model: "extra.b", max_tokens: 1 }, gaveUp.signal).catch((e) => e);
  await Bun.sleep(50);
  gaveUp.abort();
  expect(await waiting).toBeInstanceOf(Error);
  expect(await reading).toContain("[DONE]");
  await Bun.sleep(200);
  expect(loads(server)).toBe(1);
  expect(server.ctx.scheduler.queued).toBe(0);
});
