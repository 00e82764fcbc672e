// The whole server on FAKE engines (scripts/fake-engine/llama-server as the `system` llama.cpp
// backend): streams pass through whole, a dying engine ends its stream with one error event, and
// concurrent clients of two models sharing one instance are all answered. Then the proxy alone on a
// fake clock: keep-alives, the hang check, the deadline, and an Ollama NDJSON stream.
import { afterEach, describe, expect, test } from "bun:test";
import { Ollama } from "ollama";
import OpenAI from "openai";
import type { Catalog, CatalogModel } from "../../models/catalog.ts";
import type { CloudProviders } from "../../models/cloud.ts";
import { Logger } from "../../observability/logger.ts";
import { Metrics } from "../../observability/metrics.ts";
import { GenerationStats } from "../../observability/stats.ts";
import { chat as ollamaChat } from "../../protocols/ollama.ts";
import { chatStream } from "../../protocols/openai.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { EngineProxy } from "../../runtime/proxy.ts";
import type { ProxyRequest } from "../../runtime/request.ts";
import type { Lease, Scheduler, Instance } from "../../runtime/scheduler.ts";
import { chatRequest } from "../helpers/proxy-request.ts";
import { FakeClock, settle } from "../helpers/fake-clock.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import type { TestServer } from "../helpers/server.ts";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const chat = (s: TestServer, body: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${s.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }), signal });

const loads = (s: TestServer) => s.ctx.logger.snapshot().filter((e) => /Loading \w+ on llama\.cpp/.test(e.line)).length;

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

test("an engine that dies mid-stream: exactly one error event naming the model as listed, no [DONE], and the next request loads it again", async () => {
  server = await startFakeServer(["a"], { LEMONADE_LOG_LEVEL: "info" });
  const res = await chat(server, { model: "extra.a", stream: true, max_tokens: 20, fake: { die_after: 5 } });
  expect(res.status).toBe(200);
  const text = await res.text();
  const events = text.trim().split("\n\n");
  expect(events.filter((e) => e.includes("tok"))).toHaveLength(5);
  const errors = events.filter((e) => e.includes('"error"'));
  expect(errors).toHaveLength(1);
  // The model is named by the id /v1/models lists it by (an extra model's bare name), not its key.
  expect(JSON.parse(errors[0]!.replace(/^data: /, "")).error).toMatchObject({ type: "backend_error", status_code: 502, message: "The a engine closed the stream early" });
  expect(text).not.toContain("[DONE]");
  const again = await chat(server, { model: "extra.a", max_tokens: 3 });
  expect(again.status).toBe(200);
  expect(loads(server)).toBe(2);
});

test("a route's refusal names the model by its listed id, before any engine starts", async () => {
  server = await startFakeServer(["a"], { LEMONADE_LOG_LEVEL: "info" });
  const res = await chat(server, { model: "extra.a", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:," } }] }] });
  expect(res.status).toBe(400);
  expect((await res.json()).error.message).toBe("Model a does not accept images: it has no vision projector (mmproj)");
  expect(loads(server)).toBe(0);
});

test("two models, one instance, 16 concurrent alternating clients: all 200, two engine starts", async () => {
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
  const long = chat(server, { model: "extra.a", stream: true, max_tokens: 20, fake: { token_ms: 10 } });
  const first = await long;
  const reading = first.text();
  const gaveUp = new AbortController();
  const waiting = chat(server, { model: "extra.b", max_tokens: 1 }, gaveUp.signal).catch((e) => e);
  // Gives up once it waits for room (a failure shows as the test's timeout).
  while (server.ctx.scheduler.queued === 0) await Bun.sleep(5);
  gaveUp.abort();
  expect(await waiting).toBeInstanceOf(Error);
  expect(await reading).toContain("[DONE]");
  await Bun.sleep(200);
  expect(loads(server)).toBe(1);
  expect(server.ctx.scheduler.queued).toBe(0);
});

// The proxy alone, on a fake clock and an in-process engine: keep-alives, the hang check and the
// deadline are driven by moving the clock, never by waiting.
describe("the proxy alone, on a fake clock", () => {
  const MODEL = { id: "extra.a", recipe: "llamacpp", type: "llm", labels: [], checkpoints: {} } as unknown as CatalogModel;

  /** An engine stream the test writes to. */
  function engineStream() {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
    const encoder = new TextEncoder();
    return { body, write: (text: string) => controller.enqueue(encoder.encode(text)), close: () => controller.close() };
  }

  /** An engine that never answers: its request fails only when aborted. */
  const hang = (signal: AbortSignal | null | undefined) =>
    new Promise<Response>((_, reject) => signal?.addEventListener("abort", () => reject(new Error("aborted"))));

  interface Setup {
    fetch: (url: string, init: RequestInit) => Promise<Response>;
    model?: CatalogModel;
    hangCheckMs?: number;
    health?: () => Promise<boolean>;
    cloud?: CloudProviders;
  }

  function setup(o: Setup) {
    const clock = new FakeClock();
    const counts = { acquired: 0, failed: 0 };
    const model = o.model ?? MODEL;
    const scheduler = {
      ready: () => undefined,
      acquire: async () => {
        counts.acquired++;
        const instance = { model, engine: { slots: 1, health: o.health ?? (async () => true) }, lastOutput: clock.now() } as unknown as Instance<CatalogModel>;
        return { instance, url: "http://engine.test", streaming() {}, release() {}, fail: async () => void counts.failed++ } satisfies Lease<CatalogModel>;
      },
    } as unknown as Scheduler<CatalogModel>;
    const catalog = { get: () => model, publicId: (m: CatalogModel) => m.id, isShadowedBuiltIn: () => false } as unknown as Catalog;
    const metrics = new Metrics("test");
    const logger = new Logger("Info", () => {});
    const proxy = new EngineProxy({
      scheduler,
      catalog,
      metrics,
      stats: new GenerationStats(),
      logger,
      clock,
      fetch: o.fetch as typeof fetch,
      pingMs: 1000,
      hangCheckMs: o.hangCheckMs ?? 0,
      cloud: o.cloud,
      cloudTimeoutS: () => 30,
    });
    return { proxy, clock, counts, logger, requests: async () => (await metrics.registry.metrics()).split("\n").filter((l) => l.startsWith("lemonade_engine_requests_total{")) };
  }

  const request = (extra: Partial<ProxyRequest> = {}) => chatRequest("extra.a", extra);

  /** Reads a response body as it comes. */
  function collect(res: Response) {
    const out = { text: "", done: false };
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const finished = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        out.text += typeof value === "string" ? value : decoder.decode(value, { stream: true });
      }
      out.done = true;
    })();
    return Object.assign(out, { finished });
  }

  test("keep-alives: the opening at once, one ping per second of silence, none inside a half-sent event", async () => {
    const engine = engineStream();
    const t = setup({ fetch: async () => new Response(engine.body) });
    const out = collect(await t.proxy.toModel(request({ stream: chatStream })));
    await t.clock.advance(999);
    expect(out.text).toBe(": ping\n\n");
    await t.clock.advance(1);
    expect(out.text).toBe(": ping\n\n: ping\n\n");
    engine.write('data: {"a":1}\n\n');
    await t.clock.advance(999);
    expect(out.text).toBe(': ping\n\n: ping\n\ndata: {"a":1}\n\n');
    await t.clock.advance(1);
    engine.write('data: {"b"');
    await t.clock.advance(3000);
    engine.write(":2}\n\n");
    await t.clock.advance(1000);
    engine.write("data: [DONE]\n\n");
    engine.close();
    await out.finished;
    expect(out.text).toBe(': ping\n\n: ping\n\ndata: {"a":1}\n\n: ping\n\ndata: {"b":2}\n\n: ping\n\ndata: [DONE]\n\n');
    expect(await t.requests()).toEqual(['lemonade_engine_requests_total{model="extra.a",endpoint="chat_completions",status="200"} 1']);
  });

  test("hang check: three failed health checks of a silent engine abort the request, and it is sent once more on the model loaded again", async () => {
    let sent = 0;
    let checks = 0;
    const t = setup({
      fetch: async (_url, init) => (++sent === 1 ? hang(init.signal) : Response.json({ model: "engine-name", choices: [] })),
      hangCheckMs: 5000,
      health: async () => {
        checks++;
        return false;
      },
    });
    const answer = t.proxy.toModel(request());
    await t.clock.advance(14_999);
    expect({ checks, sent }).toEqual({ checks: 2, sent: 1 });
    await t.clock.advance(1);
    const res = await answer;
    expect(await res.json()).toEqual({ model: "extra.a", choices: [] });
    expect({ checks, sent, ...t.counts }).toEqual({ checks: 3, sent: 2, acquired: 2, failed: 1 });
    expect(t.logger.snapshot().some((e) => e.line.includes("stopped answering its health checks; loading it again"))).toBe(true);
  });

  test("hang check: an engine that answers its health checks is waited for", async () => {
    let checks = 0;
    let answered: ((res: Response) => void) | undefined;
    const t = setup({
      fetch: () => new Promise<Response>((resolve) => (answered = resolve)),
      hangCheckMs: 5000,
      health: async () => {
        checks++;
        return true;
      },
    });
    const answer = t.proxy.toModel(request());
    await t.clock.advance(60_000);
    expect(checks).toBe(12);
    answered!(Response.json({ choices: [] }));
    expect((await answer).status).toBe(200);
    expect(t.counts).toEqual({ acquired: 1, failed: 0 });
  });

  test("deadline: a cloud request still unanswered at global_timeout is aborted and answered 504, never sent again", async () => {
    const bodies: Record<string, unknown>[] = [];
    const cloud = { members: () => undefined, target: () => ({ servers: [{ baseUrl: "http://cloud.test/v1", headers: { authorization: "Bearer k" } }], wire: "openai" }) } as unknown as CloudProviders;
    const model = { ...MODEL, id: "box.m", recipe: "cloud", cloud: { provider: "box", upstreamId: "m-upstream" } } as unknown as CatalogModel;
    const t = setup({
      model,
      cloud,
      fetch: (_url, init) => {
        bodies.push(JSON.parse(String(init.body)));
        return hang(init.signal);
      },
    });
    let settled = false;
    const answer = t.proxy.toModel(request({ model: "box.m" })).catch((err) => err).finally(() => (settled = true));
    await t.clock.advance(29_999);
    expect(settled).toBe(false);
    await t.clock.advance(1);
    expect(await answer).toMatchObject({ status: 504, code: "timeout" });
    expect(bodies).toEqual([{ messages: [{ role: "user", content: "hi" }], model: "m-upstream" }]);
    expect(await t.requests()).toEqual(['lemonade_engine_requests_total{model="box.m",endpoint="chat_completions",status="504"} 1']);
  });

  test("targets: a model resolves to the first kind that claims it, else its local engine; a cloud model loads nothing", async () => {
    let sent = 0;
    const cloud = { members: () => undefined, target: () => ({ servers: [{ baseUrl: "http://cloud.test/v1", headers: {} }], wire: "anthropic" }) } as unknown as CloudProviders;
    const t = setup({ cloud, fetch: async () => (sent++, Response.json({ choices: [] })) });
    expect((await t.proxy.toModel(request())).status).toBe(200);
    expect(sent).toBe(1);
    const forwarded: string[] = [];
    t.proxy.targets.add({
      claims: (m) => m.id === "extra.a",
      target: (m) => ({ speaks: "openai", load: async () => ({ message: "", tookOptions: false }), forward: async (req) => (forwarded.push(`${m.id} ${req.path}`), new Response("mine")) }),
    });
    expect(await (await t.proxy.toModel(request())).text()).toBe("mine");
    expect({ sent, forwarded }).toEqual({ sent: 1, forwarded: ["extra.a /v1/chat/completions"] });
    const remote = { ...MODEL, id: "box.m", cloud: { provider: "box", upstreamId: "m-up", wire: "anthropic" } } as unknown as CatalogModel;
    const target = t.proxy.targets.of(remote);
    expect(target.speaks).toBe("anthropic");
    expect(await target.load({ name: "box.m", options: { ctx_size: 1 } })).toEqual({ message: "box.m is served by the box cloud provider; nothing to load", checkpoint: "m-up", tookOptions: false });
    expect(t.counts.acquired).toBe(1);
  });

  test("an Ollama stream goes through the pump: space keep-alives the ollama client reads past, then exactly one error line", async () => {
    const engine = engineStream();
    const t = setup({ fetch: async () => new Response(engine.body) });
    const ctx = { proxy: t.proxy } as unknown as ServerContext;
    let raw = "";
    const client = new Ollama({
      host: "http://lemonade.test",
      fetch: (async (_url: string, init: RequestInit) => {
        const res = (await ollamaChat(ctx, JSON.parse(String(init.body)), init.signal!, "ollama_chat")) as Response;
        const [mine, theirs] = res.body!.tee();
        void new Response(theirs).text().then((text) => (raw = text));
        return new Response(mine, { headers: res.headers });
      }) as typeof fetch,
    });
    const warnings: unknown[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void warnings.push(args);
    try {
      engine.write(`data: ${JSON.stringify({ choices: [{ delta: { role: "assistant", content: "Hel" } }] })}\n\n`);
      const stream = await client.chat({ model: "extra.a", messages: [{ role: "user", content: "hi" }], stream: true });
      const parts: string[] = [];
      const consumed = (async () => {
        for await (const part of stream) parts.push(part.message.content);
      })().catch((err: Error) => err);
      await t.clock.advance(3000);
      expect(parts).toEqual(["Hel"]);
      engine.write(`data: ${JSON.stringify({ error: { message: "boom", type: "server_error" } })}\n\n`);
      expect(await consumed).toMatchObject({ message: "boom" });
      await settle();
    } finally {
      console.warn = warn;
    }
    const lines = raw.split("\n");
    expect(lines[0]).toStartWith(' {"model":"extra.a"');
    expect(lines.slice(1)).toEqual(['   {"error":"boom"}', ""]);
    expect(warnings).toEqual([]);
    expect(await t.requests()).toEqual(['lemonade_engine_requests_total{model="extra.a",endpoint="ollama_chat",status="500"} 1']);
  });
});
