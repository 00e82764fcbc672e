// Cloud providers against real OpenAI-compatible upstreams on loopback: a llama-server started
// directly on the tiny chat model, a second instance of this server (behind LEMONADE_API_KEY),
// and the FAKE llama-server where an upstream has to die mid-answer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import { llamaServerBinary, MODELS, testModelsDir } from "../helpers/engines.ts";
import { FAKE_LLAMA_SERVER } from "../helpers/fake-engine.ts";
import { freePort } from "../../engines/process.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const KEY = "sk-upstream-secret-4242";

/** An engine started by hand, as a user runs llama-server on another box. */
async function startUpstream(argv: (port: number) => string[]) {
  const port = freePort();
  const proc = Bun.spawn(argv(port), { stdout: "ignore", stderr: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) return { proc, url };
    await Bun.sleep(50);
  }
  proc.kill();
  throw new Error(`upstream on ${url} did not start`);
}

let llama: Awaited<ReturnType<typeof startUpstream>>;
let peer: TestServer;
let server: TestServer;

const post = (s: TestServer, path: string, body: unknown) =>
  fetch(`${s.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
/** How many models the peer lists (its tiny chat model, and kokoro, which needs no files). */
const peerListed = async () => (await (await fetch(`${peer.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } })).json()).data.length;
const ids = async (s: TestServer) => ((await (await fetch(`${s.url}/v1/models`)).json()).data as { id: string }[]).map((m) => m.id);

beforeAll(async () => {
  const models = testModelsDir();
  llama = await startUpstream((port) => [llamaServerBinary(), "-m", join(models, MODELS.chat), "--alias", "tiny", "--port", String(port), "--host", "127.0.0.1", "-c", "512", "-np", "1"]);
  const extra = tempDir("lemonade-peer-models-");
  copyFileSync(join(models, MODELS.chat), join(extra, MODELS.chat));
  peer = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_API_KEY: KEY });
  server = await startTestServer({ LEMONADE_LOG_LEVEL: "debug", LEMONADE_EXTRA_MODELS_DIR: extra });
});

afterAll(async () => {
  llama?.proc.kill();
  await server?.close();
  await peer?.close();
});

describe("a llama-server on another box as a provider", () => {
  test("install discovers its models; they are listed, never loaded, and chat works with the official clients", async () => {
    // A key is what makes a provider worth asking; over plain http:// only with the opt-in.
    const res = await post(server, "/v1/install", { backend: "cloud", provider: "gpu-box", base_url: `${llama.url}/v1`, api_key: "sk-gpu-box", allow_insecure_http: true });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({
      status: "success",
      backend: "cloud",
      provider: "gpu-box",
      base_url: `${llama.url}/v1`,
      allow_insecure_http: true,
      auth_header_name: "Authorization",
      auth_header_prefix: "Bearer ",
      models_discovered: 1,
      auth_state: { env_var_set: false, runtime_key_set: true },
    });
    // Lemonade's cautions for plain HTTP with a key, each and joined.
    expect(body.warnings).toEqual([
      "Base URL uses http://; traffic to this provider is not encrypted.",
      "An API key is configured for this http:// provider; Lemonade will send it as a Bearer token over plaintext HTTP.",
    ]);
    expect(body.warning).toBe(body.warnings.join(" | "));
    // The base URL and the opt-in are saved, as Lemonade saves them; the key is not.
    const saved = JSON.parse(readFileSync(join(server.cacheDir, "config.json"), "utf8"));
    expect(saved.cloud_providers).toEqual([{ name: "gpu-box", base_url: `${llama.url}/v1`, allow_insecure_http: true }]);
    // Installing again (a refresh) changes nothing: the same models, none twice.
    const again = await (await post(server, "/v1/install", { backend: "cloud", provider: "gpu-box", base_url: `${llama.url}/v1`, api_key: "sk-gpu-box" })).json();
    expect(again.models_discovered).toBe(1);
    expect((await ids(server)).filter((id) => id === "gpu-box.tiny")).toHaveLength(1);

    const list = (await (await fetch(`${server.url}/v1/models`)).json()).data;
    const model = list.find((m: any) => m.id === "gpu-box.tiny");
    expect(model).toMatchObject({ recipe: "cloud", cloud_provider: "gpu-box", checkpoint: "tiny", downloaded: true, source: "cloud" });
    const tags = (await (await fetch(`${server.url}/api/tags`)).json()).models.map((m: any) => m.name);
    expect(tags).toContain("gpu-box.tiny:latest");

    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused" });
    const answer = await client.chat.completions.create({ model: "gpu-box.tiny", messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
    expect(answer.model).toBe("gpu-box.tiny");
    expect(answer.usage!.completion_tokens).toBe(4);
    const stream = await client.chat.completions.create({ model: "gpu-box.tiny", messages: [{ role: "user", content: "hi" }], max_tokens: 5, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    expect(text.length).toBeGreaterThan(0);

    const ollama = new Ollama({ host: server.url });
    const chat = await ollama.chat({ model: "gpu-box.tiny", messages: [{ role: "user", content: "hi" }], options: { num_predict: 3 } });
    expect(chat.done).toBe(true);
    expect(chat.eval_count).toBe(3);

    // Loaded by the requests, as Lemonade loads it: listed in the unmetered pool, which no
    // max_loaded_models counts, with no engine of its own.
    const health = await (await fetch(`${server.url}/v1/health`)).json();
    expect(health.all_models_loaded).toEqual([expect.objectContaining({ model_name: "gpu-box.tiny", recipe: "cloud", slot_pool: "unmetered", pid: 0, checkpoint: "tiny" })]);
    const load = await post(server, "/v1/load", { model_name: "gpu-box.tiny" });
    expect(load.status).toBe(200);
    expect((await load.json()).message).toContain("nothing to load");
    // /v1/stats and /metrics record it like a local model.
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/lemonade_engine_requests_total\{model="gpu-box.tiny",endpoint="chat_completions",status="200"\} [1-9]/);
    expect(metrics).toMatch(/lemonade_cloud_requests_total\{provider="gpu-box",model="gpu-box.tiny",status="200"\} [1-9]/);
    const stats = await (await fetch(`${server.url}/v1/stats`)).json();
    expect(stats.output_tokens).toBeGreaterThan(0);
    // Responses without a stream is refused, as openai.md says of cloud models.
    const responses = await post(server, "/v1/responses", { model: "gpu-box.tiny", input: "hi" });
    expect(responses.status).toBe(400);
    expect((await responses.json()).error.message).toContain("cloud model");
  });

  test("an alias can point at a cloud model and back at a local one (active-standby)", async () => {
    const ask = async () => {
      const res = await post(server, "/v1/chat/completions", { model: "prod", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
      expect(res.status).toBe(200);
      expect((await res.json()).model).toBe("prod");
      return (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded.map((m: any) => m.model_name);
    };
    await post(server, "/v1/unload", {});
    expect((await post(server, "/internal/aliases", { alias: "prod", target: "gpu-box.tiny" })).status).toBe(200);
    expect(await ask()).toEqual(["gpu-box.tiny"]);
    expect((await post(server, "/internal/aliases", { alias: "prod", target: "extra.tiny-chat" })).status).toBe(200);
    // The cloud model stays loaded beside it (it takes no slot of the local one's type); health
    // names each by its listed id.
    expect((await ask()).sort()).toEqual(["gpu-box.tiny", "tiny-chat"]);
    await post(server, "/v1/unload", {});
  });

  test("a provider that cannot be reached lists nothing; bad names and URLs are refused; a second uninstall is 404", async () => {
    const gone = freePort();
    expect((await post(server, "/v1/install", { backend: "cloud", provider: "gone", base_url: `http://127.0.0.1:${gone}/v1` })).status).toBe(200);
    expect(await ids(server)).not.toContain("gone.tiny");
    // A bad name or URL is refused before anything is saved.
    const badName = await post(server, "/v1/install", { backend: "cloud", provider: "Bad Name", base_url: "http://127.0.0.1:9/v1" });
    expect(badName.status).toBe(400);
    // Lemonade's cloud refusals are OpenAI-shaped error objects, where a backend install's are flat.
    expect((await badName.json()).error).toMatchObject({ type: "invalid_request_error", message: expect.stringContaining("Bad Name") });
    expect((await post(server, "/v1/install", { backend: "cloud", provider: "creds", base_url: "http://user:pw@127.0.0.1:9/v1" })).status).toBe(400);
    expect((await post(server, "/v1/install", { backend: "cloud", provider: "nourl" })).status).toBe(400);
    const uninstall = await post(server, "/v1/uninstall", { backend: "cloud", provider: "gone" });
    expect(await uninstall.json()).toEqual({ status: "success", backend: "cloud", provider: "gone", models_evicted: 0 });
    const again = await post(server, "/v1/uninstall", { backend: "cloud", provider: "gone" });
    expect(again.status).toBe(404);
    expect((await again.json()).error).toMatchObject({ type: "invalid_request_error", message: expect.stringContaining("'gone' is not installed") });
  });
});

describe("another Lemonade behind an API key as a provider", () => {
  test("models are discovered exactly when the key is there: set, used, cleared", async () => {
    const install = await (await post(server, "/v1/install", { backend: "cloud", provider: "peer", base_url: `${peer.url}/v1` })).json();
    // Without a key the peer is not even asked for its models.
    expect(install.models_discovered).toBe(0);
    expect(await ids(server)).not.toContain("peer.tiny-chat");
    // A key for an http:// provider needs the opt-in.
    const plain = await post(server, "/v1/cloud/auth", { provider: "peer", api_key: KEY });
    expect(plain.status).toBe(400);
    expect((await plain.json()).error).toMatchObject({ code: "insecure_http_requires_opt_in", type: "invalid_request_error" });

    const auth = await post(server, "/v1/cloud/auth", { provider: "peer", api_key: KEY, allow_insecure_http: true });
    expect(auth.status).toBe(200);
    expect(await auth.json()).toMatchObject({ provider: "peer", allow_insecure_http: true, auth_state: { env_var_set: false, runtime_key_set: true }, models_discovered: await peerListed() });
    const listed = (await (await fetch(`${server.url}/v1/models`)).json()).data.find((m: any) => m.id === "peer.tiny-chat");
    // The peer's labels keep the model's deployment mode.
    expect(listed.labels).toContain("chat");

    // The peer answers only because the key reached it as a bearer token.
    const res = await post(server, "/v1/chat/completions", { model: "peer.tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 3 });
    expect(res.status).toBe(200);
    expect((await res.json()).usage.completion_tokens).toBe(3);
    const streamed = await post(server, "/v1/chat/completions", { model: "peer.tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 3, stream: true });
    expect(streamed.headers.get("content-type")).toContain("text/event-stream");
    const sse = await streamed.text();
    expect(sse).toContain('"chat.completion.chunk"');
    expect(sse.trim().endsWith("data: [DONE]")).toBe(true);

    const info = (await (await fetch(`${server.url}/v1/system-info`)).json()).cloud.providers.find((p: any) => p.name === "peer");
    expect(info).toMatchObject({
      name: "peer",
      base_url: `${peer.url}/v1`,
      allow_insecure_http: true,
      auth_header_name: "Authorization",
      auth_header_prefix: "Bearer ",
      env_var: "LEMONADE_PEER_API_KEY",
      env_var_set: false,
      runtime_key_set: true,
      models_discovered: await peerListed(),
    });
    const clear = await fetch(`${server.url}/v1/cloud/auth/peer`, { method: "DELETE" });
    expect(await clear.json()).toEqual({ provider: "peer", cleared_runtime_key: true, auth_state: { env_var_set: false, runtime_key_set: false } });
    expect(await ids(server)).not.toContain("peer.tiny-chat");
    const again = await fetch(`${server.url}/v1/cloud/auth/peer`, { method: "DELETE" });
    expect((await again.json()).cleared_runtime_key).toBe(false);
    // A provider never installed held no key either, as Lemonade answers it.
    const never = await fetch(`${server.url}/v1/cloud/auth/never-installed`, { method: "DELETE" });
    expect(never.status).toBe(200);
    expect(await never.json()).toEqual({ provider: "never-installed", cleared_runtime_key: false, auth_state: { env_var_set: false, runtime_key_set: false } });
    const nobody = await post(server, "/v1/cloud/auth", { provider: "nobody", api_key: "x" });
    expect(nobody.status).toBe(404);
    expect((await nobody.json()).error.type).toBe("invalid_request_error");
    expect((await post(server, "/v1/cloud/auth", { provider: "peer", api_key: "" })).status).toBe(400);
  });

  test("a loaded cloud model whose key was cleared answers the missing-credentials error until it is unloaded; one never loaded is not found", async () => {
    await post(server, "/v1/install", { backend: "cloud", provider: "peer", base_url: `${peer.url}/v1` });
    expect((await post(server, "/v1/cloud/auth", { provider: "peer", api_key: KEY, allow_insecure_http: true })).status).toBe(200);
    expect((await post(server, "/v1/load", { model_name: "peer.tiny-chat" })).status).toBe(200);
    await fetch(`${server.url}/v1/cloud/auth/peer`, { method: "DELETE" });
    const chat = () => post(server, "/v1/chat/completions", { model: "peer.tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 3 });
    const res = await chat();
    expect(res.status).toBe(500);
    expect((await res.json()).error).toMatchObject({
      type: "backend_error",
      provider: "peer",
      message: `No API key for cloud provider 'peer'. Set the LEMONADE_PEER_API_KEY env var or POST /v1/cloud/auth with {"provider":"peer","api_key":"..."}.`,
    });
    // Streamed, Lemonade says so inside the stream: a 200, its one error event, no [DONE].
    const streamed = await post(server, "/v1/chat/completions", { model: "peer.tiny-chat", stream: true, messages: [{ role: "user", content: "hi" }], max_tokens: 3 });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get("content-type")).toContain("text/event-stream");
    const events = (await streamed.text()).split("\n\n").filter((e) => e.startsWith("data: "));
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.slice(6)).error).toMatchObject({
      type: "backend_error",
      provider: "peer",
      message: "No API key for cloud provider 'peer'. Set LEMONADE_PEER_API_KEY or POST /v1/cloud/auth.",
    });
    expect((await post(server, "/v1/unload", { model_name: "peer.tiny-chat" })).status).toBe(200);
    const gone = await chat();
    expect(gone.status).toBe(404);
    expect((await gone.json()).error.code).toBe("model_not_found");
  });

  test("as an Anthropic-API provider: /v1/messages passes through with x-api-key; OpenAI routes are refused", async () => {
    const install = await (await post(server, "/v1/install", { backend: "cloud", provider: "claude-box", base_url: `${peer.url}/v1`, wire: "anthropic", api_key: KEY, allow_insecure_http: true })).json();
    expect(install).toMatchObject({ wire: "anthropic", models_discovered: await peerListed() });
    const anthropic = new Anthropic({ baseURL: server.url, apiKey: "unused" });
    const message = await anthropic.messages.create({ model: "claude-box.tiny-chat", max_tokens: 3, messages: [{ role: "user", content: "hi" }] });
    expect(message.model).toBe("claude-box.tiny-chat");
    expect(message.usage.output_tokens).toBe(3);
    expect(message.stop_reason).toBe("max_tokens");
    const streamed = await anthropic.messages.stream({ model: "claude-box.tiny-chat", max_tokens: 4, messages: [{ role: "user", content: "hi" }] }).finalMessage();
    expect(streamed.usage.output_tokens).toBe(4);
    const viaOpenAI = await post(server, "/v1/chat/completions", { model: "claude-box.tiny-chat", messages: [{ role: "user", content: "hi" }] });
    expect(viaOpenAI.status).toBe(400);
    expect((await viaOpenAI.json()).error.message).toContain("/v1/messages");
    await post(server, "/v1/uninstall", { backend: "cloud", provider: "claude-box" });
  });

  test("the key from the environment wins: 409 auth_conflict, and the supplied key is not stored", async () => {
    const withEnv = await startTestServer({ LEMONADE_PEER_API_KEY: KEY });
    try {
      const install = await (await post(withEnv, "/v1/install", { backend: "cloud", provider: "peer", base_url: `${peer.url}/v1`, api_key: "sk-other", allow_insecure_http: true })).json();
      expect(install.models_discovered).toBe(await peerListed());
      expect(install.auth_state).toEqual({ env_var_set: true, runtime_key_set: false });
      expect(install.warning).toContain("LEMONADE_PEER_API_KEY");
      const conflict = await post(withEnv, "/v1/cloud/auth", { provider: "peer", api_key: "sk-other" });
      expect(conflict.status).toBe(409);
      const body = await conflict.json();
      expect(body.error.type).toBe("auth_conflict");
      expect(body.error.env_var).toBe("LEMONADE_PEER_API_KEY");
      expect(body.error.message).toContain("takes precedence");
    } finally {
      await withEnv.close();
    }
  });

  test("no key reaches a log line, a listing, config.json or an error", async () => {
    await post(server, "/v1/cloud/auth", { provider: "peer", api_key: KEY });
    const bad = await post(server, "/v1/chat/completions", { model: "peer.no-such-model", messages: [] });
    expect(JSON.stringify(await bad.json())).not.toContain(KEY);
    const everything = [
      JSON.stringify(server.ctx.logger.snapshot()),
      JSON.stringify(peer.ctx.logger.snapshot()),
      await (await fetch(`${server.url}/v1/models`)).text(),
      await (await fetch(`${server.url}/internal/config`)).text(),
      readFileSync(join(server.cacheDir, "config.json"), "utf8"),
    ].join("\n");
    expect(everything).not.toContain(KEY);
    expect(everything.toLowerCase()).not.toContain("bearer");
  });
});

test("an upstream that dies mid-stream ends the stream with one error event and no [DONE]", async () => {
  const fakeModel = join(tempDir("lemonade-fake-upstream-"), "fake.gguf");
  mkdirSync(join(fakeModel, ".."), { recursive: true });
  const fake = await startUpstream((port) => [process.execPath, FAKE_LLAMA_SERVER, "-m", fakeModel, "--port", String(port), "--alias", "fake"]);
  try {
    await post(server, "/v1/install", { backend: "cloud", provider: "flaky", base_url: `${fake.url}/v1`, api_key: "sk-fake", allow_insecure_http: true });
    const res = await post(server, "/v1/chat/completions", {
      model: "flaky.fake",
      stream: true,
      messages: [{ role: "user", content: '[[fake {"die_after": 2, "token_ms": 20}]] tell me more' }],
      max_tokens: 50,
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = text.split("\n\n").filter((e) => e.startsWith("data: "));
    const errors = events.filter((e) => e.includes('"error"'));
    expect(errors).toHaveLength(1);
    expect(JSON.parse(errors[0]!.slice(6)).error.type).toBe("backend_error");
    expect(text).not.toContain("[DONE]");
    // The provider is gone now: its model stays listed, and a request is a retryable 503.
    expect(await ids(server)).toContain("flaky.fake");
    const after = await post(server, "/v1/chat/completions", { model: "flaky.fake", messages: [{ role: "user", content: "hi" }] });
    expect(after.status).toBe(503);
    expect((await after.json()).error).toMatchObject({ code: "backend_unavailable", retryable: true });
    // Uninstalling drops its models.
    expect((await (await post(server, "/v1/uninstall", { backend: "cloud", provider: "flaky" })).json()).models_evicted).toBe(1);
    expect(await ids(server)).not.toContain("flaky.fake");
  } finally {
    fake.proc.kill();
  }
});

test("a streamed chat asks the provider for its usage, counts those tokens, and keeps the usage-only chunk from a client that did not ask", async () => {
  // As a hosted provider streams: no llama.cpp timings, and usage only when include_usage is asked.
  const asked: unknown[] = [];
  const hosted = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      if (new URL(req.url).pathname === "/v1/models") return Response.json({ object: "list", data: [{ id: "hosted-chat" }] });
      const body = await req.json();
      asked.push(body.stream_options?.include_usage);
      const frame = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
      const chunk = { id: "c", object: "chat.completion.chunk", model: "hosted-chat", choices: [{ index: 0, delta: { content: "hi" }, finish_reason: null }] };
      const usage = body.stream_options?.include_usage ? frame({ id: "c", object: "chat.completion.chunk", model: "hosted-chat", choices: [], usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 } }) : "";
      return new Response(frame(chunk) + usage + "data: [DONE]\n\n", { headers: { "content-type": "text/event-stream" } });
    },
  });
  try {
    await post(server, "/v1/install", { backend: "cloud", provider: "hosted", base_url: `http://127.0.0.1:${hosted.port}/v1`, api_key: "sk-hosted", allow_insecure_http: true });
    const chat = (extra: object) => post(server, "/v1/chat/completions", { model: "hosted.hosted-chat", stream: true, messages: [{ role: "user", content: "hi" }], ...extra });
    const plain = await (await chat({})).text();
    expect(asked).toEqual([true]);
    expect(plain).not.toContain('"usage"');
    expect(plain.trim().endsWith("data: [DONE]")).toBe(true);
    expect((await (await fetch(`${server.url}/v1/stats`)).json()).output_tokens).toBe(7);
    // A client that asks for usage gets the provider's chunk.
    const withUsage = await (await chat({ stream_options: { include_usage: true } })).text();
    expect(withUsage).toContain('"completion_tokens":7');
    await post(server, "/v1/uninstall", { backend: "cloud", provider: "hosted" });
  } finally {
    hosted.stop(true);
  }
});

test("a provider slower than global_timeout is cut off with a 504, and the server stays up", async () => {
  const cacheDir = tempDir();
  writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ global_timeout: 1 }));
  const timed = await startTestServer({}, cacheDir);
  const fakeModel = join(tempDir("lemonade-fake-upstream-"), "fake.gguf");
  const fake = await startUpstream((port) => [process.execPath, FAKE_LLAMA_SERVER, "-m", fakeModel, "--port", String(port), "--alias", "slow"]);
  try {
    await post(timed, "/v1/install", { backend: "cloud", provider: "slow", base_url: `${fake.url}/v1`, api_key: "sk-fake", allow_insecure_http: true });
    const started = performance.now();
    const res = await post(timed, "/v1/chat/completions", { model: "slow.slow", messages: [{ role: "user", content: '[[fake {"ttft_ms": 5000}]] hi' }] });
    expect(res.status).toBe(504);
    expect((await res.json()).error.message).toContain("global_timeout");
    expect(performance.now() - started).toBeLessThan(3000);
    expect((await fetch(`${timed.url}/live`)).status).toBe(200);
  } finally {
    fake.proc.kill();
    await timed.close();
  }
});
