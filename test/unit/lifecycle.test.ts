// Lemonade's lifecycle routes answered as Lemonade answers them (lemonade.md, and the real
// server where the page is silent): the load and model errors' body, unload, delete of a model
// never downloaded, pull's refusals, its answer and its event stream, the loaded models /v1/health
// lists (a cloud model's too), /v1/params read by GET, and the fields of a model object.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { readSse } from "../../lib/sse.ts";
import { health } from "../../spec/operations.ts";
import { LemonadeModelError } from "../../spec/schemas.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { startFakeHub, type FakeHub } from "../helpers/fake-hub.ts";
import type { TestServer } from "../helpers/server.ts";

const GGUF = new TextEncoder().encode("GGUF tiny model bytes for the lifecycle tests");
let hub: FakeHub;
let server: TestServer;
/** While set, the upstream holds its chat answers until it settles (a request in flight). */
let holdChat: Promise<void> | undefined;
const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    if (new URL(req.url).pathname.endsWith("/models")) return Response.json({ object: "list", data: [{ id: "tiny-chat", context_length: 8192, pricing: { input: 0.5, output: 1.5 } }] });
    await holdChat;
    return Response.json({ id: "x", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }] });
  },
});

beforeAll(async () => {
  hub = startFakeHub({ "acme/tiny-GGUF": { sha: "a".repeat(40), files: { "tiny-Q4_0.gguf": GGUF } } });
  server = await startFakeServer(["a", "b"], { HF_ENDPOINT: hub.url });
});
afterAll(async () => {
  await server.close();
  hub.stop();
  upstream.stop(true);
});

const post = (path: string, body?: unknown) => fetch(`${server.url}${path}`, { method: "POST", ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }) });
const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });

describe("a model Lemonade cannot find, run or load", () => {
  test("/v1/load of an unknown model: 404, lemonade.md's status and message, and the error object naming the model as the request gave it", async () => {
    const { status, body } = await json(await post("/v1/load", { model_name: "No-Such-Model" }));
    expect(status).toBe(404);
    expect(Value.Check(LemonadeModelError, body)).toBe(true);
    expect(body.status).toBe("error");
    expect(body.message).toMatch(/^Model 'No-Such-Model' was not found\. Available models include: '[^']+', '[^']+', '[^']+', and \d+ more\. Use 'lemonade list' or GET \/api\/v1\/models\?show_all=true to see all available models\.$/);
    expect(body.error).toEqual({ message: body.message, type: "model_not_found", code: "model_not_found", param: "model", requested_model: "No-Such-Model" });
  });

  test("the models it suggests are the first three ids in order", async () => {
    const { body } = await json(await post("/v1/load", { model_name: "zzz" }));
    const named = [...body.message.matchAll(/'([^']+)'/g)].map((m) => m[1]).slice(1, 4);
    expect(named).toEqual([...named].sort());
    expect(named).toHaveLength(3);
  });

  test("GET /v1/models/{id} of an unknown model answers the same error object", async () => {
    for (const prefix of ["/v1", "/api/v1", "/v0", "/api/v0"]) {
      const res = await fetch(`${server.url}${prefix}/models/No-Such-Model`);
      expect(res.status).toBe(404);
      const body = (await res.json()) as any;
      expect(body.error).toMatchObject({ type: "model_not_found", code: "model_not_found", param: "model", requested_model: "No-Such-Model" });
      expect(body.error.message).toStartWith("Model 'No-Such-Model' was not found.");
    }
  });

  test("a load that fails says so first, naming the model, with model_load_error as type and code", async () => {
    // Not downloaded, and the hub has no such repository.
    const { status, body } = await json(await post("/v1/load", { model_name: "Qwen3-0.6B-GGUF" }));
    expect(status).toBe(500);
    expect(body.message).toStartWith("Failed to load model 'Qwen3-0.6B-GGUF': ");
    expect(body.message).toContain("not downloaded");
    expect(body.error).toMatchObject({ type: "model_load_error", code: "model_load_error", param: "model", requested_model: "Qwen3-0.6B-GGUF" });
  });

  test("a load the body's schema refuses keeps its own code, in the same body", async () => {
    const { status, body } = await json(await post("/v1/load", { model_name: "extra.a", ctx_size: "big" }));
    expect(status).toBe(400);
    expect(body).toMatchObject({ status: "error", error: { type: "invalid_request_error", code: "invalid_argument", param: "ctx_size" } });
    expect(body.error.requested_model).toBeUndefined();
  });
});

test("a load ignores a field it does not know, as Lemonade does, and passes it on to no engine", async () => {
  const res = await json(await post("/v1/load", { model_name: "extra.a", stream: false, client_hint: "x" }));
  expect(res).toMatchObject({ status: 200, body: { status: "success", model_name: "extra.a" } });
  const [entry] = (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded;
  expect(entry.launch_command.join(" ")).not.toContain("client_hint");
  expect(Object.keys(entry.recipe_options)).not.toContain("client_hint");
  await post("/v1/unload");
});

describe("unload", () => {
  test("a loaded model: lemonade.md's message, with the model named", async () => {
    expect((await post("/v1/load", { model_name: "extra.a" })).status).toBe(200);
    expect(await json(await post("/v1/unload", { model_name: "extra.a" }))).toEqual({ status: 200, body: { status: "success", message: "Model unloaded successfully", model_name: "extra.a" } });
  });

  test("`model` in place of `model_name`, and no body at all unloads every model", async () => {
    await post("/v1/load", { model_name: "extra.a" });
    expect((await json(await post("/v1/unload", { model: "extra.a" }))).body).toEqual({ status: "success", message: "Model unloaded successfully", model_name: "extra.a" });
    await post("/v1/load", { model_name: "extra.b" });
    expect((await json(await post("/v1/unload"))).body).toEqual({ status: "success", message: "All models unloaded successfully" });
    expect((await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded).toEqual([]);
  });

  test("a model that is not loaded: 404 model_not_loaded naming it", async () => {
    const { status, body } = await json(await post("/v1/unload", { model_name: "extra.b" }));
    expect(status).toBe(404);
    expect(body).toMatchObject({ status: "error", message: "Model not loaded: extra.b", code: "model_not_loaded" });
  });
});

describe("delete", () => {
  test("a registered model that is not downloaded is deleted, as Lemonade does (nothing to remove is no error)", async () => {
    expect(await json(await post("/v1/delete", { model_name: "Qwen3-0.6B-GGUF" }))).toEqual({ status: 200, body: { status: "success", message: "Deleted model: Qwen3-0.6B-GGUF" } });
  });

  test("a user model never downloaded is unregistered", async () => {
    expect((await post("/v1/models/register", { model_name: "user.Never", checkpoint: "acme/none-GGUF:Q4_0", recipe: "llamacpp" })).status).toBe(200);
    expect((await post("/v1/delete", { model_name: "user.Never" })).status).toBe(200);
    expect((await fetch(`${server.url}/v1/models/user.Never`)).status).toBe(404);
  });

  test("an extra model's file is the user's: 500, in Lemonade's words, naming the file but not its folder", async () => {
    const { status, body } = await json(await post("/v1/delete", { model_name: "extra.b" }));
    expect(status).toBe(500);
    expect(body.error).toBe("Cannot delete extra models via API. Models in --extra-models-dir are user-managed. Delete the file directly from the extra models folder: b.gguf");
    expect((await fetch(`${server.url}/v1/models/extra.b`)).status).toBe(200);
  });

  test("a name the registry does not know: 422 model_not_found", async () => {
    const { status, body } = await json(await post("/v1/delete", { model_name: "No-Such-Model" }));
    expect(status).toBe(422);
    expect(body).toMatchObject({ status: "error", message: "Model not found: No-Such-Model", error: "Model not found: No-Such-Model", code: "model_not_found" });
  });
});

describe("pull", () => {
  const RESERVED = "Model names with 'extra.' / 'builtin.' prefixes are reserved, including as bare-name parts of a 'user.' alias. Received: ";

  test("a reserved prefix is refused whether or not the body defines a model, also as a user. name's bare part, and nothing is registered", async () => {
    const define = { checkpoint: "acme/tiny-GGUF:Q4_0", recipe: "llamacpp" };
    for (const body of [{ model_name: "extra.a" }, { model_name: "extra.new", ...define }, { model_name: "builtin.x", ...define }, { model_name: "user.extra.x", ...define }, { model_name: "user.builtin.x", ...define }]) {
      const { status, body: answer } = await json(await post("/v1/pull", body));
      expect(status).toBe(400);
      expect(answer).toMatchObject({ status: "error", error: RESERVED + body.model_name, code: "invalid_argument", param: "model_name" });
    }
    const ids = ((await (await fetch(`${server.url}/v1/models?show_all=true`)).json()).data as { id: string }[]).map((m) => m.id);
    expect(ids.filter((id) => /builtin\.x|extra\.x|extra\.new/.test(id))).toEqual([]);
  });

  test("an unregistered user. name without a definition: 404 model_not_found asking for the recipe, in Lemonade's words", async () => {
    const { status, body } = await json(await post("/v1/pull", { model_name: "user.Unknown" }));
    expect(status).toBe(404);
    expect(body).toMatchObject({ code: "model_not_found", error: "Model user.Unknown is not registered with Lemonade Server. To register it, provide the `recipe` argument." });
  });

  test("a definition under a name without the user. prefix is refused in Lemonade's words", async () => {
    const { status, body } = await json(await post("/v1/pull", { model_name: "Plain", checkpoint: "acme/tiny-GGUF:Q4_0", recipe: "llamacpp" }));
    expect(status).toBe(400);
    expect(body.error).toBe("Registered model definitions must use a non-empty `user.*` name, for example `user.Phi-4-Mini-GGUF`. Received: Plain");
  });

  test("an unknown name that could not be registered: 400 unknown_model; streamed, the stream's error event carries the code", async () => {
    const message = "When registering a new model, the model name must include the `user` namespace, for example `user.Phi-4-Mini-GGUF`. Received: No-Such-Model";
    const { status, body } = await json(await post("/v1/pull", { model_name: "No-Such-Model" }));
    expect(status).toBe(400);
    expect(body).toMatchObject({ status: "error", error: message, code: "unknown_model" });
    const res = await post("/v1/pull", { model_name: "No-Such-Model", stream: true });
    expect(res.status).toBe(200);
    const events = [];
    for await (const e of readSse(res.body!)) events.push({ event: e.event, data: JSON.parse(e.data) });
    expect(events).toEqual([{ event: "error", data: { error: message, code: "unknown_model" } }]);
  });

  test("installed: the answer names the model; the stream's progress carries the download's sizes and complete the last figures at 100", async () => {
    const define = { checkpoint: "acme/tiny-GGUF:Q4_0", recipe: "llamacpp" };
    const res = await post("/v1/pull", { model_name: "user.Tiny", ...define, stream: true });
    const events = [];
    for await (const e of readSse(res.body!)) events.push({ event: e.event, data: JSON.parse(e.data) });
    const progress = events.filter((e) => e.event === "progress").map((e) => e.data);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toEqual({
      file: "tiny-Q4_0.gguf",
      file_index: 1,
      total_files: 1,
      bytes_downloaded: GGUF.length,
      bytes_total: GGUF.length,
      total_download_size: GGUF.length,
      bytes_previously_downloaded: 0,
      percent: 100,
    });
    expect(events.at(-1)).toEqual({ event: "complete", data: { ...progress.at(-1), model_name: "user.Tiny" } });
    expect(await json(await post("/v1/pull", { model_name: "user.Tiny" }))).toEqual({ status: 200, body: { status: "success", message: "Installed model: user.Tiny", model_name: "user.Tiny" } });
    // Pulled again with nothing left to fetch, the stream ends with Lemonade's bare completion.
    const again = [];
    for await (const e of readSse((await post("/v1/pull", { model_name: "user.Tiny", stream: true })).body!)) again.push({ event: e.event, data: JSON.parse(e.data) });
    expect(again.at(-1)!.event).toBe("complete");
    expect(again.at(-1)!.data.percent).toBe(100);
  });
});

test("offline, a pull registers what it defines and then installs nothing, even a model already there: 400 lemond_offline in Lemonade's words", async () => {
  expect((await post("/internal/set", { offline: true })).status).toBe(200);
  try {
    for (const body of [{ model_name: "user.Tiny" }, { model_name: "user.Later", checkpoint: "acme/tiny-GGUF:Q4_0", recipe: "llamacpp" }, { model_name: "user.Tiny", stream: true }]) {
      const { status, body: answer } = await json(await post("/v1/pull", body));
      expect(status).toBe(400);
      expect(answer).toMatchObject({ error: "Lemond is in offline mode, models not downloaded", code: "lemond_offline" });
    }
    expect((await fetch(`${server.url}/v1/models/user.Later`)).status).toBe(200);
  } finally {
    await post("/internal/set", { offline: false });
  }
});

describe("/v1/health's loaded models", () => {
  test("a local model's entry says its backend is alive, ready, loaded and never watchdog-reset", async () => {
    await post("/v1/load", { model_name: "extra.a" });
    const body = await (await fetch(`${server.url}/v1/health`)).json();
    expect(Value.Check(health.response!, body)).toBe(true);
    expect(body.all_models_loaded[0]).toMatchObject({ model_name: "a", backend_alive: true, backend_health: "ready", loaded: true, watchdog_reset: false, slot_pool: "standard/llm" });
    await post("/v1/unload");
  });

  test("a cloud model, loaded or used, is listed in the unmetered pool with what its provider reports; unloaded, it is not", async () => {
    const base = `http://127.0.0.1:${upstream.port}/v1`;
    const installed = await post("/v1/install", { backend: "cloud", provider: "acme", base_url: base, api_key: "sk-acme", allow_insecure_http: true });
    expect(installed.status).toBe(200);
    expect((await post("/v1/load", { model_name: "acme.tiny-chat" })).status).toBe(200);
    const listed = async () => ((await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded as any[]).filter((m) => m.recipe === "cloud");
    const [entry] = await listed();
    expect(entry).toMatchObject({
      model_name: "acme.tiny-chat",
      checkpoint: "tiny-chat",
      type: "llm",
      slot_pool: "unmetered",
      residency_class: "standard",
      pinned: false,
      backend_alive: true,
      loaded: true,
      pid: 0,
      backend_url: base,
      max_context_window: 8192,
      recipe_options: {},
    });
    expect(entry.launch_command).toBeUndefined();
    expect(JSON.stringify(entry)).not.toContain("sk-acme");
    expect((await post("/v1/unload", { model_name: "acme.tiny-chat" })).status).toBe(200);
    expect(await listed()).toEqual([]);
    // A chat names it: Lemonade loads it on the way, so it is listed again.
    expect((await post("/v1/chat/completions", { model: "acme.tiny-chat", messages: [{ role: "user", content: "hi" }] })).status).toBe(200);
    expect((await listed()).map((m) => m.model_name)).toEqual(["acme.tiny-chat"]);
    await post("/v1/unload");
    expect(await listed()).toEqual([]);
    await post("/v1/uninstall", { backend: "cloud", provider: "acme" });
  });

  test("a cloud model serving a request is in use, and its backend's health stays ready as Lemonade's cloud entry says", async () => {
    const base = `http://127.0.0.1:${upstream.port}/v1`;
    expect((await post("/v1/install", { backend: "cloud", provider: "acme", base_url: base, api_key: "sk-acme", allow_insecure_http: true })).status).toBe(200);
    let release!: () => void;
    holdChat = new Promise((r) => (release = r));
    const chat = post("/v1/chat/completions", { model: "acme.tiny-chat", messages: [{ role: "user", content: "hi" }] });
    const cloudEntry = async () => ((await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded as any[]).find((m) => m.recipe === "cloud");
    let entry = await cloudEntry();
    while (!entry?.is_busy) entry = await (Bun.sleep(5), cloudEntry());
    expect(entry).toMatchObject({ model_name: "acme.tiny-chat", is_busy: true, status: "in_use", slots_in_use: 1, backend_health: "ready" });
    release();
    holdChat = undefined;
    expect((await chat).status).toBe(200);
    expect(await cloudEntry()).toMatchObject({ is_busy: false, status: "ready", backend_health: "ready" });
    await post("/v1/unload");
    await post("/v1/uninstall", { backend: "cloud", provider: "acme" });
  });
});

test("GET /v1/params reads the configuration /internal/config reads, on every prefix", async () => {
  const config = await (await fetch(`${server.url}/internal/config`)).json();
  for (const prefix of ["/v1", "/api/v1", "/v0", "/api/v0"]) {
    const res = await fetch(`${server.url}${prefix}/params`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(config);
  }
});

test("a model object leaves out a size of 0 and always names its registry_source", async () => {
  const model = await (await fetch(`${server.url}/v1/models/extra.a`)).json();
  expect(model).not.toHaveProperty("size");
  expect(model.registry_source).toBe("huggingface");
  expect((await (await fetch(`${server.url}/v1/models/Qwen3-0.6B-GGUF`)).json()).size).toBeGreaterThan(0);
});

test("/v1/system-info names the recipes none of whose models run here, and no_fetch_executables", async () => {
  const info = await (await fetch(`${server.url}/v1/system-info`)).json();
  expect(info.no_fetch_executables).toBe(false);
  expect(Array.isArray(info.unavailable_recipes)).toBe(true);
  const listed = new Set(((await (await fetch(`${server.url}/v1/models?show_all=true`)).json()).data as { recipe: string }[]).map((m) => m.recipe));
  for (const recipe of info.unavailable_recipes) expect(listed.has(recipe)).toBe(false);
  expect(info.unavailable_recipes).not.toContain("llamacpp");
  // Its NPU engine runs on Windows only.
  expect(info.unavailable_recipes).toContain("ryzenai-llm");
});

describe("/internal/aliases refuses what Lemonade refuses, in its words and its error object", () => {
  const bind = (body: unknown) => post("/internal/aliases", body);
  test.each([
    [{ alias: "same", target: "same" }, 400, "invalid_alias", "Alias cannot point to itself"],
    [{ alias: "user.mine", target: "extra.a" }, 400, "invalid_alias", "Alias name cannot use reserved prefixes (user., extra., builtin.)"],
    [{ alias: "extra.mine", target: "extra.a" }, 400, "invalid_alias", "Alias name cannot use reserved prefixes (user., extra., builtin.)"],
    [{ alias: "builtin.mine", target: "extra.a" }, 400, "invalid_alias", "Alias name cannot use reserved prefixes (user., extra., builtin.)"],
    [{ alias: "Qwen3-0.6B-GGUF", target: "extra.a" }, 409, "alias_conflict", "Cannot create alias 'Qwen3-0.6B-GGUF': Name conflicts with an existing canonical model"],
  ] as const)("%j: %d %s", async (body, status, code, message) => {
    const res = await json(await bind(body));
    expect(res.status).toBe(status);
    expect(res.body.error).toEqual({ message, type: "invalid_request_error", code, param: "alias" });
    expect((await (await fetch(`${server.url}/internal/aliases`)).json()).aliases.map((a: { alias: string }) => a.alias)).not.toContain(body.alias);
  });

  test("an alias of an alias that leads back is a 409 naming the cycle; an extra model's bare name may be an alias; removing none is 404 'Alias not found'", async () => {
    expect((await bind({ alias: "one", target: "extra.a" })).status).toBe(200);
    expect((await bind({ alias: "two", target: "one" })).status).toBe(200);
    const cycle = await json(await bind({ alias: "one", target: "two" }));
    expect(cycle.status).toBe(409);
    expect(cycle.body.error).toMatchObject({ code: "alias_conflict", message: "Circular alias dependency detected: one -> two" });
    expect((await bind({ alias: "b", target: "extra.a" })).status).toBe(200);
    for (const alias of ["one", "two", "b"]) expect((await fetch(`${server.url}/internal/aliases/${alias}`, { method: "DELETE" })).status).toBe(200);
    const gone = await json(await fetch(`${server.url}/internal/aliases/one`, { method: "DELETE" }));
    expect(gone).toEqual({ status: 404, body: { status: "error", message: "Alias not found: one", code: "alias_not_found", error: { message: "Alias not found: one", type: "invalid_request_error", code: "alias_not_found", param: "alias" } } });
  });
});

describe("a model named otherwise than its catalog id is named as the request named it, as Lemonade names it", () => {
  const events = async (res: Response) => {
    const out = [];
    for await (const e of readSse(res.body!)) out.push({ event: e.event, data: JSON.parse(e.data) });
    return out;
  };

  test("pull by a user model's bare name: the job's id and model_name, the answer's message and the stream's complete event", async () => {
    expect((await post("/v1/models/register", { model_name: "user.Named", checkpoint: "acme/tiny-GGUF:Q4_0", recipe: "llamacpp" })).status).toBe(200);
    const started = await json(await post("/v1/pull", { model_name: "Named", stream: true, subscribe: false }));
    expect(started.body).toMatchObject({ id: "model:Named", type: "model", model_name: "Named" });
    let job: any;
    do job = ((await (await fetch(`${server.url}/v1/downloads`)).json()) as any[]).find((j) => j.id === "model:Named");
    while (job?.running);
    expect(job).toMatchObject({ id: "model:Named", model_name: "Named", status: "completed", complete: true });
    // Steered by that id: the job is found, and forgotten.
    expect(await json(await post("/v1/downloads/control", { id: "model:Named", action: "remove" }))).toEqual({ status: 200, body: { status: "ok" } });
    expect(((await (await fetch(`${server.url}/v1/downloads`)).json()) as any[]).map((j) => j.id)).not.toContain("model:Named");
    expect(await json(await post("/v1/pull", { model_name: "Named" }))).toEqual({ status: 200, body: { status: "success", message: "Installed model: Named", model_name: "Named" } });
    const streamed = await events(await post("/v1/pull", { model_name: "Named", stream: true }));
    expect(streamed.at(-1)).toMatchObject({ event: "complete", data: { percent: 100, model_name: "Named" } });
  });

  test("load and unload by a bare name, and by an alias (named by its target); delete by a bare name", async () => {
    expect(await json(await post("/v1/load", { model_name: "a" }))).toMatchObject({ status: 200, body: { message: "Loaded model: a", model_name: "a" } });
    expect((await json(await post("/v1/unload", { model_name: "a" }))).body).toEqual({ status: "success", message: "Model unloaded successfully", model_name: "a" });
    expect((await post("/internal/aliases", { alias: "the-a", target: "extra.a" })).status).toBe(200);
    try {
      expect(await json(await post("/v1/load", { model_name: "the-a" }))).toMatchObject({ status: 200, body: { message: "Loaded model: extra.a", model_name: "extra.a" } });
      expect((await json(await post("/v1/unload", { model_name: "the-a" }))).body).toEqual({ status: "success", message: "Model unloaded successfully", model_name: "extra.a" });
    } finally {
      await fetch(`${server.url}/internal/aliases/the-a`, { method: "DELETE" });
    }
    expect(await json(await post("/v1/delete", { model_name: "Named" }))).toEqual({ status: 200, body: { status: "success", message: "Deleted model: Named" } });
    expect((await fetch(`${server.url}/v1/models/user.Named`)).status).toBe(404);
  });

  test("a cloud model is deleted as Lemonade deletes it: unloaded, 200, and still listed while its provider lists it", async () => {
    const base = `http://127.0.0.1:${upstream.port}/v1`;
    expect((await post("/v1/install", { backend: "cloud", provider: "acme", base_url: base, api_key: "sk-acme", allow_insecure_http: true })).status).toBe(200);
    try {
      expect((await post("/v1/load", { model_name: "acme.tiny-chat" })).status).toBe(200);
      expect(await json(await post("/v1/delete", { model_name: "acme.tiny-chat" }))).toEqual({ status: 200, body: { status: "success", message: "Deleted model: acme.tiny-chat" } });
      const loaded = ((await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded as any[]).map((m) => m.model_name);
      expect(loaded).not.toContain("acme.tiny-chat");
      expect((await fetch(`${server.url}/v1/models/acme.tiny-chat`)).status).toBe(200);
    } finally {
      await post("/v1/uninstall", { backend: "cloud", provider: "acme" });
    }
  });

  test("GET /internal/aliases reports an alias whose target is not in the catalog as Lemonade does: not downloaded, recipe llamacpp", async () => {
    expect((await post("/internal/aliases", { alias: "later", target: "Not-Pulled-Yet" })).status).toBe(200);
    try {
      const { aliases } = await (await fetch(`${server.url}/internal/aliases`)).json();
      expect(aliases.find((a: { alias: string }) => a.alias === "later")).toEqual({ alias: "later", target: "Not-Pulled-Yet", downloaded: false, recipe: "llamacpp" });
    } finally {
      await fetch(`${server.url}/internal/aliases/later`, { method: "DELETE" });
    }
  });
});
