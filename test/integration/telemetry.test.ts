// OpenTelemetry tracing (Lemonade's telemetry guide), against a loopback OTLP collector this test
// runs, on the FAKE llama-server: a span per chat, completion, responses, embeddings and rerank
// request, streamed or not; load failures and broken streams as span errors; both semantic
// conventions; tokens; session and user ids; the privacy switches; W3C trace context; JSON and
// protobuf; exporter headers; retries, refusals and the bounded queue; the settings changed live
// through /internal/set and /v1/params; /internal/telemetry/flush and /v1/health's `telemetry`.
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { GgufType } from "../../models/gguf.ts";
import { writeGguf } from "../../scripts/test-models/gguf-writer.ts";
import { startCollector, type CollectedSpan, type Collector } from "../helpers/otlp-collector.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import type { TestServer } from "../helpers/server.ts";

let server: TestServer;
let collector: Collector;

beforeAll(async () => {
  collector = startCollector();
  const bert = (path: string) => writeGguf(path, [["general.architecture", GgufType.STRING, "bert"]], []);
  const ranker = (path: string) => writeGguf(path, [["general.architecture", GgufType.STRING, "qwen3"], ["qwen3.pooling_type", GgufType.UINT32, 4]], []);
  server = await startFakeServer(["chat", "embed", "rank", "fake-exit-1"], { LEMONADE_MAX_LOADED_MODELS: "-1" }, {}, { embed: bert, rank: ranker });
});
afterAll(async () => {
  await server.close();
  collector.stop();
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json", ...headers } });
const set = async (settings: Record<string, unknown>) => {
  const res = await post("/internal/set", settings);
  expect(res.status).toBe(200);
  return res.json();
};
/** Every span sent since the last call, after a flush. */
let seen = 0;
const flushed = async (): Promise<CollectedSpan[]> => {
  expect(await (await post("/internal/telemetry/flush", {})).json()).toEqual({ status: "flushed" });
  const spans = collector.spans().slice(seen);
  seen += spans.length;
  return spans;
};
const chat = (extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  post("/v1/chat/completions", { model: "extra.chat", messages: [{ role: "user", content: "Hello, Lemonade!" }], max_tokens: 3, ...extra }, headers);
const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await Bun.sleep(25);
  expect(done()).toBe(true);
};

const BASE = {
  "telemetry.enabled": true,
  "telemetry.otlp.protocol": "http/json",
  "telemetry.otlp.semantics": ["openinference", "otel_genai"],
  "telemetry.otlp.batch_timeout_s": 60,
  "telemetry.otlp.send_batch_size": 100,
  "telemetry.otlp.max_retries": 0,
  "telemetry.otlp.headers": {},
  "telemetry.max_queue_capacity": 1000,
  "telemetry.hide_inputs": false,
  "telemetry.hide_outputs": false,
  "telemetry.hide_thinking": false,
  "telemetry.trust_incoming_trace_context": false,
  "telemetry.session.headers.id": [],
};
beforeEach(async () => {
  await set({ ...BASE, "telemetry.otlp.endpoint": collector.url });
  await flushed();
});

test("off by default: /v1/health says so, and no span is sent; /v1/params turns it on live on every prefix", async () => {
  await set({ "telemetry.enabled": false });
  expect((await (await fetch(`${server.url}/v1/health`)).json()).telemetry).toEqual({ enabled: false });
  expect((await chat()).status).toBe(200);
  expect(await flushed()).toEqual([]);
  const res = await post("/api/v1/params", { telemetry: { enabled: true } });
  expect(await res.json()).toEqual({ status: "success", applied: ["telemetry.enabled"], saved: [], updated: { telemetry: { enabled: true } } });
  expect((await (await fetch(`${server.url}/v1/health`)).json()).telemetry).toEqual({ enabled: true, captures: ["inputs", "outputs", "thinking"] });
  expect((await chat()).status).toBe(200);
  expect((await flushed()).map((s) => s.name)).toEqual(["chat.completions"]);
  for (const prefix of ["/v0", "/api/v0", "/v1"]) expect((await post(`${prefix}/params`, { "telemetry.enabled": true })).status).toBe(200);
  // Lemonade's GET reads the configuration back, the setting just made included.
  const get = await fetch(`${server.url}/v1/params`);
  expect(get.status).toBe(200);
  expect((await get.json()).telemetry).toMatchObject({ enabled: true });
});

test("a chat span carries both conventions in one span: model, messages, output, tokens, status", async () => {
  expect((await chat()).status).toBe(200);
  const [span] = await flushed();
  expect(span).toMatchObject({ name: "chat.completions", kind: 2, status: { code: 1 }, parentSpanId: "" });
  expect(span!.traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(span!.resource["service.name"]).toBe("lemonade-server");
  expect(span!.attributes).toMatchObject({
    "openinference.span.kind": "LLM",
    "llm.model_name": "extra.chat",
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "Hello, Lemonade!",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": "tok0 tok1 tok2 ",
    "output.value": "tok0 tok1 tok2 ",
    "llm.token_count.prompt": 1,
    "llm.token_count.completion": 3,
    "llm.token_count.total": 4,
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "extra.chat",
    "gen_ai.provider.name": "lemonade",
    "gen_ai.input.messages.0.content": "Hello, Lemonade!",
    "gen_ai.output.messages.0.content": "tok0 tok1 tok2 ",
    "gen_ai.usage.input_tokens": 1,
    "gen_ai.usage.output_tokens": 3,
  });
  expect(JSON.parse(String(span!.attributes["input.value"]))).toEqual([{ role: "user", content: "Hello, Lemonade!" }]);
});

test("every inference route, streamed and not, is one span with its output and tokens", async () => {
  const cases: [string, Record<string, unknown>][] = [
    ["/v1/chat/completions", { model: "extra.chat", messages: [{ role: "user", content: "hi" }], max_tokens: 2, stream: true }],
    ["/v1/completions", { model: "extra.chat", prompt: "Once", max_tokens: 2 }],
    ["/v1/completions", { model: "extra.chat", prompt: "Once", max_tokens: 2, stream: true }],
    ["/v1/responses", { model: "extra.chat", input: "hi", max_output_tokens: 2 }],
    ["/v1/responses", { model: "extra.chat", input: "hi", max_output_tokens: 2, stream: true }],
  ];
  for (const [path, body] of cases) {
    const res = await post(path, body);
    expect(res.status).toBe(200);
    await res.text();
  }
  const spans = await flushed();
  expect(spans.map((s) => s.name)).toEqual(["chat.completions", "completions", "completions", "responses", "responses"]);
  for (const span of spans) {
    expect(span.status.code).toBe(1);
    expect(span.attributes["output.value"]).toBe("tok0 tok1 ");
    expect(span.attributes["gen_ai.usage.output_tokens"]).toBe(2);
  }
  expect(spans[1]!.attributes).toMatchObject({ "gen_ai.operation.name": "completion", "llm.input_messages.0.message.content": "Once" });

  // Ollama's chat, generate and embed are traced as the requests they become.
  for (const [path, body] of [
    ["/api/chat", { model: "extra.chat", messages: [{ role: "user", content: "hi" }], options: { num_predict: 2 } }],
    ["/api/chat", { model: "extra.chat", messages: [{ role: "user", content: "hi" }], options: { num_predict: 2 }, stream: false }],
    ["/api/generate", { model: "extra.chat", prompt: "Once", options: { num_predict: 2 }, stream: false }],
    ["/api/embed", { model: "extra.embed", input: "one" }],
  ] as const) {
    const res = await post(path, body);
    expect(res.status).toBe(200);
    await res.text();
  }
  const ollama = await flushed();
  expect(ollama.map((s) => [s.name, s.status.code])).toEqual([["chat.completions", 1], ["chat.completions", 1], ["completions", 1], ["embeddings", 1]]);
  expect(ollama.slice(0, 3).map((s) => s.attributes["output.value"])).toEqual(["tok0 tok1 ", "tok0 tok1 ", "tok0 tok1 "]);

  // Anthropic's Messages API is traced as the chat request it becomes.
  for (const stream of [false, true]) {
    const res = await post("/v1/messages", { model: "extra.chat", max_tokens: 2, stream, system: "Be brief", messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    await res.text();
  }
  const messages = await flushed();
  expect(messages).toHaveLength(2);
  for (const span of messages) {
    expect(span).toMatchObject({ name: "chat.completions", status: { code: 1 } });
    expect(span.attributes).toMatchObject({ "llm.input_messages.0.message.role": "system", "llm.input_messages.1.message.content": "hi", "output.value": "tok0 tok1 " });
  }

  expect((await post("/v1/embeddings", { model: "extra.embed", input: ["one", "two"] })).status).toBe(200);
  expect((await post("/v1/rerank", { model: "extra.rank", query: "q", documents: ["a", "bb"] })).status).toBe(200);
  const [embed, rerank] = await flushed();
  expect(embed!.attributes).toMatchObject({ "openinference.span.kind": "EMBEDDING", "embedding.model_name": "extra.embed", "gen_ai.operation.name": "embeddings", "embedding.usage.prompt_tokens": 2 });
  expect(embed!.attributes["input.value"]).toBe('["one","two"]');
  expect(rerank!).toMatchObject({ name: "reranking", attributes: { "openinference.span.kind": "RERANKER", "reranker.model_name": "extra.rank", "gen_ai.operation.name": "rerank" } });
});

test("a load that fails and a stream that breaks off are span errors", async () => {
  const failed = await post("/v1/chat/completions", { model: "extra.fake-exit-1", messages: [{ role: "user", content: "hi" }] });
  expect(failed.status).toBeGreaterThanOrEqual(400);
  const broken = await chat({ stream: true, max_tokens: 5, fake: { die_after: 2 } });
  await broken.text();
  const [load, stream] = await flushed();
  expect(load).toMatchObject({ name: "chat.completions", status: { code: 2 } });
  expect(load!.status.message.length).toBeGreaterThan(0);
  expect(load!.attributes["llm.model_name"]).toBe("extra.fake-exit-1");
  expect(stream).toMatchObject({ name: "chat.completions", status: { code: 2 } });
  expect(stream!.attributes["output.value"]).toBeUndefined();
});

test("session ids: the body wins, then configured headers, then the well-known ones (prefixed by the client); user ids from the body", async () => {
  await set({ "telemetry.session.headers.id": "x-corp-session" });
  await chat({ session_id: "body-session", user: "alice" }, { "x-session-id": "header-session" });
  await chat({}, { "x-session-id": "known", "x-corp-session": "corp" });
  await chat({}, { "x-session-id": "sess-abc123", "x-client-name": "vscode" });
  await chat();
  const [body, custom, client, none] = await flushed();
  expect(body!.attributes).toMatchObject({ "session.id": "body-session", "gen_ai.conversation.id": "body-session", "user.id": "alice" });
  expect(custom!.attributes["session.id"]).toBe("corp");
  expect(client!.attributes["session.id"]).toBe("vscode/sess-abc123");
  expect(none!.attributes["session.id"]).toBeUndefined();
});

test("privacy: hidden inputs, outputs and thinking are redacted; counts stay", async () => {
  await set({ "telemetry.hide_inputs": true, "telemetry.hide_outputs": true });
  expect((await (await fetch(`${server.url}/v1/health`)).json()).telemetry).toEqual({ enabled: true, captures: ["thinking"] });
  await chat();
  const [hidden] = await flushed();
  expect(hidden!.attributes).toMatchObject({
    "input.value": "[REDACTED]",
    "llm.input_messages.0.message.content": "[REDACTED]",
    "gen_ai.input.messages.0.content": "[REDACTED]",
    "output.value": "[REDACTED]",
    "llm.token_count.completion": 3,
  });
  expect(JSON.stringify(hidden!.attributes)).not.toContain("Hello, Lemonade!");
  expect(JSON.stringify(hidden!.attributes)).not.toContain("tok0");

  await set({ "telemetry.hide_inputs": false, "telemetry.hide_outputs": false, "telemetry.hide_thinking": true });
  await chat({ fake: { reply: "<think>secret plan</think>The answer" } });
  await set({ "telemetry.hide_thinking": false });
  await chat({ fake: { reply: "<thought>shown plan</thought>The answer" } });
  const [stripped, shown] = await flushed();
  expect(stripped!.attributes["output.value"]).toBe("The answer");
  expect(shown!.attributes["output.value"]).toBe("<think>shown plan</think>The answer");
});

test("W3C traceparent: adopted when trusted (future versions too), ignored when not, a malformed one starts a new root", async () => {
  const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  const parent = "00f067aa0ba902b7";
  await chat({}, { traceparent: `00-${trace}-${parent}-01` });
  await set({ "telemetry.trust_incoming_trace_context": true });
  await chat({}, { traceparent: `00-${trace}-${parent}-01` });
  await chat({}, { traceparent: `01-${trace}-${parent}-00-future-field` });
  await chat({}, { traceparent: `00-${trace}-${parent}-01-extra` });
  await chat({}, { traceparent: `00-${"0".repeat(32)}-${parent}-01` });
  const [untrusted, adopted, future, badV0, zero] = await flushed();
  expect(untrusted!.traceId).not.toBe(trace);
  expect(untrusted!.parentSpanId).toBe("");
  expect(adopted).toMatchObject({ traceId: trace, parentSpanId: parent });
  expect(adopted!.spanId).not.toBe(parent);
  expect(future).toMatchObject({ traceId: trace, parentSpanId: parent });
  for (const root of [badV0!, zero!]) {
    expect(root.traceId).not.toBe(trace);
    expect(root.parentSpanId).toBe("");
  }
});

test("http/protobuf with exporter headers; one convention at a time", async () => {
  await set({ "telemetry.otlp.protocol": "http/protobuf", "telemetry.otlp.headers": { "x-project-name": "lemonade", "Content-Type": "text/plain" }, "telemetry.otlp.semantics": ["otel_genai"] });
  await chat();
  await flushed();
  const request = collector.requests.at(-1)!;
  expect(request.contentType).toBe("application/x-protobuf");
  expect(request.headers.get("x-project-name")).toBe("lemonade");
  const [genai] = request.spans;
  expect(genai).toMatchObject({ name: "chat.completions", kind: 2, status: { code: 1 }, attributes: { "gen_ai.request.model": "extra.chat", "gen_ai.usage.output_tokens": 3 } });
  expect(genai!.traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(Object.keys(genai!.attributes).some((k) => k.startsWith("llm.") || k.startsWith("openinference."))).toBe(false);

  await set({ "telemetry.otlp.semantics": ["openinference"] });
  await chat();
  const [oi] = await flushed();
  expect(oi!.attributes["openinference.span.kind"]).toBe("LLM");
  expect(Object.keys(oi!.attributes).some((k) => k.startsWith("gen_ai."))).toBe(false);
});

test("transient failures are retried with backoff; a refusal drops the batch at once", async () => {
  await set({ "telemetry.otlp.batch_timeout_s": 0.05, "telemetry.otlp.max_retries": 2, "telemetry.otlp.retry_backoff_base_s": 0.01 });
  const before = collector.requests.length;
  collector.respond(503, 503);
  await chat({ user: "retried" });
  await until(() => collector.requests.length - before === 3);
  expect(collector.requests.slice(before).map((r) => r.answered)).toEqual([503, 503, 200]);
  expect(collector.requests.at(-1)!.spans[0]!.attributes["user.id"]).toBe("retried");

  collector.respond(400);
  await chat({ user: "refused" });
  await until(() => collector.requests.length - before === 4);
  await flushed();
  expect(collector.requests.length - before).toBe(4);
  expect(collector.requests.at(-1)!.answered).toBe(400);
  seen = collector.spans().length;
});

test("a full queue drops its oldest span", async () => {
  await set({ "telemetry.max_queue_capacity": 2 });
  for (const user of ["first", "second", "third"]) await chat({ user });
  expect((await flushed()).map((s) => s.attributes["user.id"])).toEqual(["second", "third"]);
});

test("telemetry settings are checked as Lemonade checks them", async () => {
  for (const [key, value] of [
    ["telemetry.otlp.protocol", "grpc"],
    ["telemetry.otlp.semantics", ["zipkin"]],
    ["telemetry.max_queue_capacity", 0],
    ["telemetry.otlp.batch_timeout_s", 0],
    ["telemetry.otlp.headers", { "x-n": 1 }],
    ["telemetry.session.headers.id", [1]],
  ] as const) {
    const res = await post("/internal/set", { [key]: value });
    expect(res.status).toBe(400);
    expect((await res.json()).param).toBe(key);
  }
  expect(await set({ "telemetry.max_attribute_length": 64, "telemetry.session.headers.client": "x-corp-client" })).toEqual({
    status: "success",
    applied: ["telemetry.max_attribute_length", "telemetry.session.headers.client"],
    saved: [],
    updated: { telemetry: { max_attribute_length: 64, session: { headers: { client: "x-corp-client" } } } },
  });
  await chat({ messages: [{ role: "user", content: "long ".repeat(100) }] }, { "x-session-id": "s", "x-corp-client": "corp" });
  const [cut] = await flushed();
  const content = String(cut!.attributes["llm.input_messages.0.message.content"]);
  expect(content.length).toBeLessThanOrEqual(64);
  expect(content.endsWith("... [TRUNCATED]")).toBe(true);
  expect(cut!.attributes["session.id"]).toBe("corp/s");
  await set({ "telemetry.max_attribute_length": 4096, "telemetry.session.headers.client": [] });
});

test("lemonade telemetry off / on, through the running server", async () => {
  const { port } = new URL(server.url);
  const cli = async (state: string) => {
    const p = Bun.spawn([process.execPath, "cli/main.ts", "telemetry", state, "--host", "127.0.0.1", "--port", port], { cwd: `${import.meta.dir}/../..`, stdout: "pipe", stderr: "pipe" });
    expect(await p.exited).toBe(0);
    return new Response(p.stdout).text();
  };
  // Lemonade's own words for it.
  expect(await cli("off")).toBe("Telemetry successfully turned off.\n");
  expect((await (await fetch(`${server.url}/v1/health`)).json()).telemetry).toEqual({ enabled: false });
  await cli("on");
  expect((await (await fetch(`${server.url}/v1/health`)).json()).telemetry.enabled).toBe(true);
});

test("a traced request's span also reaches a /spans/stream connection, tied to its caller and without the key's hash", async () => {
  const ws = new WebSocket(`${server.url.replace("http", "ws")}/spans/stream`);
  const messages: any[] = [];
  ws.onmessage = (ev) => messages.push(JSON.parse(String(ev.data)));
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("the spans channel refused the connection"));
  });
  // A keyless server: a guest sees the keyless spans of its own client session only.
  ws.send(JSON.stringify({ type: "auth", client_session_id: "tab-1" }));
  await until(() => messages.some((m) => m.type === "auth.ok"));
  expect((await chat({}, { "x-client-session-id": "tab-2" })).status).toBe(200);
  expect((await chat({ max_tokens: 2 }, { "x-client-session-id": "tab-1" })).status).toBe(200);
  await until(() => messages.some((m) => typeof m.spanId === "string"));
  ws.close();
  const spans = messages.filter((m) => typeof m.spanId === "string");
  expect(spans).toHaveLength(1);
  const keys = spans[0].attributes.map((a: { key: string }) => a.key);
  expect(keys).toContain("lemon.client_session_id");
  expect(keys).not.toContain("lemon.auth_token_hash");
  const model = spans[0].attributes.find((a: { key: string }) => a.key === "gen_ai.request.model");
  expect(model?.value.stringValue).toBe("extra.chat");
  expect(spans[0].name).toBeString();
});
