// Live configuration: GET /internal/config (every Lemonade setting), POST /internal/set (checked,
// saved atomically, applied at once where possible), /internal/pin and /internal/shutdown, all
// behind the admin key; and a config.json with ctx_size -1 starts.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../config/config.ts";
import { freePort } from "../../engines/process.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { tempDir, type TestServer } from "../helpers/server.ts";

const ADMIN = "admin-key";
let server: TestServer;
beforeAll(async () => {
  server = await startFakeServer(["a", "b"], { LEMONADE_ADMIN_API_KEY: ADMIN, LEMONADE_MAX_LOADED_MODELS: "1" });
});
afterAll(() => server.close());

const admin = (path: string, body?: unknown) =>
  fetch(`${server.url}${path}`, { method: body === undefined ? "GET" : "POST", body: body === undefined ? undefined : JSON.stringify(body), headers: { authorization: `Bearer ${ADMIN}` } });
// Health names each model by its listed id: these extra models' bare names, which nothing else holds.
const loaded = async () => (await (await admin("/v1/health")).json()).all_models_loaded.map((m: any) => m.model_name).sort();
const load = (model: string) => admin("/v1/load", { model_name: model });

test("GET /internal/config has every Lemonade setting, with the values the server runs with", async () => {
  const config = await (await admin("/internal/config")).json();
  expect(config).toMatchObject({ max_loaded_models: 1, llamacpp: { backend: "auto", vulkan_bin: "builtin" }, sdcpp: { steps: 20 }, telemetry: { enabled: false } });
  expect(config.port).toBe(Number(new URL(server.url).port));
  expect((await fetch(`${server.url}/internal/config`)).status).toBe(401);
});

test("POST /internal/set max_loaded_models: 2 lets a second model stay loaded without a restart, and is saved", async () => {
  await load("extra.a");
  await load("extra.b");
  expect(await loaded()).toEqual(["b"]);
  const res = await admin("/internal/set", { max_loaded_models: 2 });
  expect(await res.json()).toEqual({ status: "success", updated: { max_loaded_models: 2 }, applied: ["max_loaded_models"], saved: [] });
  await load("extra.a");
  expect(await loaded()).toEqual(["a", "b"]);
  expect(JSON.parse(readFileSync(join(server.cacheDir, "config.json"), "utf8"))).toMatchObject({ max_loaded_models: 2 });
});

test("nested settings by dots or objects are saved nested; a wrong type, a range or an unknown key is a 400 and saves nothing", async () => {
  const ok = await admin("/internal/set", { "sdcpp.steps": 10, llamacpp: { args: "--no-mmap" }, log_level: "debug", telemetry: { enabled: true } });
  // `updated` nests the keys as config.json holds them, as Lemonade answers.
  expect(await ok.json()).toEqual({
    status: "success",
    updated: { sdcpp: { steps: 10 }, llamacpp: { args: "--no-mmap" }, log_level: "debug", telemetry: { enabled: true } },
    applied: ["sdcpp.steps", "llamacpp.args", "log_level", "telemetry.enabled"],
    saved: [],
  });
  const file = JSON.parse(readFileSync(join(server.cacheDir, "config.json"), "utf8"));
  expect(file).toMatchObject({ sdcpp: { steps: 10 }, llamacpp: { args: "--no-mmap" }, log_level: "debug", telemetry: { enabled: true } });
  expect((await (await admin("/internal/config")).json()).log_level).toBe("debug");
  for (const [body, key] of [
    [{ port: "80" }, "port"],
    [{ max_loaded_models: 0 }, "max_loaded_models"],
    [{ ctx_size: 2 ** 31 }, "ctx_size"],
    [{ no_such_setting: 1 }, "no_such_setting"],
    [{ "llamacpp.backend": 5, max_loaded_models: 3 }, "llamacpp.backend"],
  ] as const) {
    const res = await admin("/internal/set", body);
    expect(res.status).toBe(400);
    expect((await res.json()).param).toBe(key);
  }
  // The per-model eviction options are no server settings (the multi-model guide's scope column), in Lemonade's words.
  for (const key of ["evict_weight_factor", "downsize_idle_timeout", "evict_idle_timeout", "no_such_setting"]) {
    const res = await admin("/internal/set", { [key]: 2 });
    expect(res.status).toBe(400);
    expect((await res.json()).message).toBe(`Unknown config key: '${key}'`);
  }
  expect(JSON.parse(readFileSync(join(server.cacheDir, "config.json"), "utf8")).max_loaded_models).toBe(2);
  await admin("/internal/set", { log_level: "info", "llamacpp.args": "" });
});

test("GET /internal/config/schema types every setting from its default, with the ranges and lists /internal/set enforces", async () => {
  const schema = await (await admin("/internal/config/schema")).json();
  expect(schema.ctx_size).toMatchObject({ type: "number", default: -1, minimum: 1, special: -1, integer: true });
  expect(schema.log_level.enum).toContain("debug");
  expect(schema.offline).toMatchObject({ type: "boolean", default: false });
  expect(schema.offline.description).toContain("internet");
  expect(schema["llamacpp.backend"].type).toBe("string");
  // A key kept for Lemonade with no effect here has its type, and no description.
  expect(schema["flm.args"]).toEqual({ type: "string", default: "" });
  // The bounds are the ones the server checks: the value just outside them is refused.
  const res = await admin("/internal/set", { "sdcpp.width": schema["sdcpp.width"].minimum - 1 });
  expect(res.status).toBe(400);
  expect((await res.json()).param).toBe("sdcpp.width");
  expect((await fetch(`${server.url}/internal/config/schema`)).status).toBe(401);
});

test("/internal/pin pins and unpins a loaded model, idempotently; a model not loaded is a 400 invalid_request_error, as Lemonade answers it", async () => {
  await load("extra.a");
  for (const pinned of [true, true, false]) {
    const res = await admin("/internal/pin", { model_name: "extra.a", pinned });
    expect(await res.json()).toEqual({ status: "success", model_name: "extra.a", pinned });
    const entry = (await (await admin("/v1/health")).json()).all_models_loaded.find((m: any) => m.model_name === "a");
    expect(entry.pinned).toBe(pinned);
  }
  await admin("/v1/unload", { model_name: "extra.b" });
  const notLoaded = await admin("/internal/pin", { model_name: "extra.b", pinned: true });
  expect(notLoaded.status).toBe(400);
  expect(await notLoaded.json()).toEqual({ status: "error", message: "Model not loaded: extra.b", error: { message: "Model not loaded: extra.b", type: "invalid_request_error", param: "model_name" } });
});

test("port set live: the server answers on the new port, not the old one", async () => {
  const other = await startFakeServer(["c"]);
  try {
    const port = freePort();
    const res = await fetch(`${other.url}/internal/set`, { method: "POST", body: JSON.stringify({ port }) });
    expect((await res.json()).applied).toEqual(["port"]);
    let answered = false;
    for (let i = 0; i < 50 && !answered; i++) {
      answered = await fetch(`http://127.0.0.1:${port}/live`).then((r) => r.ok, () => false);
      if (!answered) await Bun.sleep(20);
    }
    expect(answered).toBe(true);
    expect(await fetch(`${other.url}/live`).then(() => "answered", () => "refused")).toBe("refused");
  } finally {
    await other.close();
  }
});

test("/internal/shutdown unloads every model before it answers {\"status\": \"shutting down\"}, then stops the server", async () => {
  const other = await startFakeServer(["d"]);
  expect((await fetch(`${other.url}/v1/load`, { method: "POST", body: JSON.stringify({ model_name: "extra.d" }) })).status).toBe(200);
  const pid: number = (await (await fetch(`${other.url}/v1/health`)).json()).all_models_loaded[0].pid;
  const res = await fetch(`${other.url}/internal/shutdown`, { method: "POST" });
  expect(await res.json()).toEqual({ status: "shutting down" });
  // The engine is gone by the time the answer is read: signal 0 finds no such process.
  expect(() => process.kill(pid, 0)).toThrow();
  let gone = false;
  for (let i = 0; i < 50 && !gone; i++) {
    gone = await fetch(`${other.url}/live`).then(() => false, () => true);
    if (!gone) await Bun.sleep(20);
  }
  expect(gone).toBe(true);
});

test("a config.json with ctx_size -1 (Lemonade's default) starts", () => {
  const cacheDir = tempDir();
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ ctx_size: -1 }));
  expect(loadConfig({}, { LEMONADE_CACHE_DIR: cacheDir }).ctxSize).toBe(-1);
});

test("pinned: a pinned model whose engine is killed comes back pinned; saved with save_options it is pinned on its next load", async () => {
  const other = await startFakeServer(["p"]);
  try {
    const post = (path: string, body: unknown) => fetch(`${other.url}${path}`, { method: "POST", body: JSON.stringify(body) });
    const entry = async () => (await (await fetch(`${other.url}/v1/health`)).json()).all_models_loaded.find((m: any) => m.model_name === "p");
    expect((await post("/v1/load", { model_name: "extra.p", pinned: true })).status).toBe(200);
    process.kill((await entry()).pid, "SIGKILL");
    // Until the server has seen its engine go (a failure shows as the test's timeout).
    while (await entry()) await Bun.sleep(10);
    const chat = await post("/v1/chat/completions", { model: "extra.p", max_tokens: 1, messages: [{ role: "user", content: "hi" }] });
    expect(chat.status).toBe(200);
    expect((await entry()).pinned).toBe(true);
    // Unloaded on purpose, then loaded by a request: not pinned, as nothing saved it.
    await post("/v1/unload", { model_name: "extra.p" });
    await post("/v1/chat/completions", { model: "extra.p", max_tokens: 1, messages: [{ role: "user", content: "hi" }] });
    expect((await entry()).pinned).toBe(false);
    expect((await post("/v1/load", { model_name: "extra.p", pinned: true, save_options: true })).status).toBe(200);
    await post("/v1/unload", { model_name: "extra.p" });
    await post("/v1/chat/completions", { model: "extra.p", max_tokens: 1, messages: [{ role: "user", content: "hi" }] });
    expect((await entry()).pinned).toBe(true);
    const options = await (await fetch(`${other.url}/v1/models/extra.p/options`)).json();
    expect(options.saved.pinned).toBe(true);
    expect(options.effective.pinned).toBeUndefined();
    expect(Object.keys(options.effective)).toEqual(expect.arrayContaining(["auto_evict", "evict_weight_factor", "downsize_idle_timeout", "llamacpp_device"]));
  } finally {
    await other.close();
  }
});

test("an effective options object posted back to /v1/load is accepted as is; the reply names model, checkpoint and recipe", async () => {
  const options = await (await admin("/v1/models/extra.a/options")).json();
  expect(options.load_command).toContain("/v1/load");
  const res = await admin("/v1/load", options.effective);
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ status: "success", model_name: "extra.a", recipe: "llamacpp", checkpoint: expect.stringMatching(/a\.gguf$/) });
  expect((await admin("/v1/load", { model_name: "extra.a", ctx_size: 2 ** 31 })).status).toBe(400);
});

test("evict_weight_factor and downsize_idle_timeout are taken on /v1/load and on /v1/models/{id}/options, and are the model's effective options", async () => {
  const before = (await (await admin("/v1/models/extra.a/options")).json()).saved;
  const loadedWith = await admin("/v1/load", { model_name: "extra.a", evict_weight_factor: 2.5, downsize_idle_timeout: 30 });
  expect(loadedWith.status).toBe(200);
  const entry = (await (await admin("/v1/health")).json()).all_models_loaded.find((m: any) => m.model_name === "a");
  expect(entry.recipe_options).toMatchObject({ evict_weight_factor: 2.5, downsize_idle_timeout: 30 });
  const saved = await admin("/v1/models/extra.a/options", { evict_weight_factor: 4, downsize_idle_timeout: 90 });
  expect(saved.status).toBe(200);
  const options = await (await admin("/v1/models/extra.a/options")).json();
  expect(options.saved).toMatchObject({ evict_weight_factor: 4, downsize_idle_timeout: 90 });
  expect(options.effective).toMatchObject({ evict_weight_factor: 4, downsize_idle_timeout: 90 });
  const wrong = await admin("/v1/models/extra.a/options", { evict_weight_factor: "heavy" });
  expect(wrong.status).toBe(400);
  expect(await wrong.json()).toMatchObject({ code: "invalid_argument", message: "Option 'evict_weight_factor' must be a number" });
  // Left as found: the options saved before, not loaded.
  await fetch(`${server.url}/v1/models/extra.a/options`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN}` } });
  expect((await (await admin("/v1/models/extra.a/options")).json()).effective).toMatchObject({ evict_weight_factor: 1, downsize_idle_timeout: 60 });
  await admin("/v1/models/extra.a/options", before);
  await admin("/v1/unload", { model_name: "extra.a" });
});

test('"" and "auto" in a load leave a string option to the saved value, as Lemonade reads them; save_options saves neither', async () => {
  const before = (await (await admin("/v1/models/extra.a/options")).json()).saved;
  expect(before).toEqual({ llamacpp_backend: "system" });
  await admin("/v1/models/extra.a/options", { llamacpp_device: "Vulkan0" });
  expect((await admin("/v1/load", { model_name: "extra.a", llamacpp_backend: "auto", llamacpp_device: "" })).status).toBe(200);
  const entry = async () => (await (await admin("/v1/health")).json()).all_models_loaded.find((m: any) => m.model_name === "a");
  expect((await entry()).recipe_options).toMatchObject({ llamacpp_backend: "system", llamacpp_device: "Vulkan0" });
  // Saved first, as Lemonade saves it: the entry this load writes replaces the old one, so neither
  // the old entry nor the empty values answer for it.
  expect((await admin("/v1/load", { model_name: "extra.a", llamacpp_device: "", llamacpp_args: "--threads 1", save_options: true })).status).toBe(200);
  expect((await entry()).recipe_options).not.toHaveProperty("llamacpp_device");
  const options = await (await admin("/v1/models/extra.a/options")).json();
  expect(options.saved).toEqual({ llamacpp_args: "--threads 1" });
  expect(options.effective).toMatchObject({ llamacpp_backend: "auto", llamacpp_device: "" });
  await fetch(`${server.url}/v1/models/extra.a/options`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN}` } });
  await admin("/v1/models/extra.a/options", before);
  await admin("/v1/unload", { model_name: "extra.a" });
});

test("health entries carry the engine's launch command and only the options that were set", async () => {
  await load("extra.a");
  const entry = (await (await admin("/v1/health")).json()).all_models_loaded.find((m: any) => m.model_name === "a");
  // One argument per item, as Lemonade reports it: a path with spaces stays one item.
  expect(entry.launch_command).toEqual(expect.arrayContaining(["-m", "--ctx-size"]));
  expect(entry.launch_command.join(" ")).toContain("llama-server -m ");
  // The fake server saves llamacpp_backend "system": set, so shown; llamacpp_device is the default, so not.
  expect(entry.recipe_options).toMatchObject({ llamacpp_backend: "system", ctx_size: expect.any(Number) });
  expect(entry.recipe_options).not.toHaveProperty("llamacpp_device");
  expect(entry.backend).toBe("system");
});

test("config.json's llamacpp.args are server-wide recipe options; /internal/set changes them for the next load", async () => {
  const cacheDir = tempDir();
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ llamacpp: { args: "--no-mmap" }, sdcpp: { steps: 8 } }));
  expect(loadConfig({}, { LEMONADE_CACHE_DIR: cacheDir }).recipeDefaults).toEqual({ llamacpp_args: "--no-mmap", steps: 8 });
  const other = await startFakeServer(["w"]);
  try {
    const command = async () => (await (await fetch(`${other.url}/v1/health`)).json()).all_models_loaded[0].launch_command.join(" ") as string;
    const set = async (args: string) => (await (await fetch(`${other.url}/internal/set`, { method: "POST", body: JSON.stringify({ "llamacpp.args": args }) })).json()).applied;
    expect(await set("--no-mmap")).toEqual(["llamacpp.args"]);
    await fetch(`${other.url}/v1/load`, { method: "POST", body: JSON.stringify({ model_name: "extra.w" }) });
    expect(await command()).toContain("--no-mmap");
    await set("--threads 1");
    await fetch(`${other.url}/v1/unload`, { method: "POST", body: "{}" });
    await fetch(`${other.url}/v1/load`, { method: "POST", body: JSON.stringify({ model_name: "extra.w" }) });
    expect(await command()).toContain("--threads 1");
    expect(await command()).not.toContain("--no-mmap");
  } finally {
    await other.close();
  }
});

test("auto_evict and auto_evict_threshold_pct are settings (multi-model guide); the server-wide auto_evict answers for models that set none", async () => {
  const other = await startFakeServer(["ae"]);
  try {
    const set = (body: unknown) => fetch(`${other.url}/internal/set`, { method: "POST", body: JSON.stringify(body) });
    const effective = async () => (await (await fetch(`${other.url}/v1/models/extra.ae/options`)).json()).effective;
    expect((await effective()).auto_evict).toBeNull();
    const ok = await set({ auto_evict: true, auto_evict_threshold_pct: 0.8 });
    expect(await ok.json()).toEqual({ status: "success", updated: { auto_evict: true, auto_evict_threshold_pct: 0.8 }, applied: ["auto_evict", "auto_evict_threshold_pct"], saved: [] });
    expect((await effective()).auto_evict).toBe(true);
    expect(JSON.parse(readFileSync(join(other.cacheDir, "config.json"), "utf8"))).toMatchObject({ auto_evict: true, auto_evict_threshold_pct: 0.8 });
    expect(loadConfig({}, { LEMONADE_CACHE_DIR: other.cacheDir }).recipeDefaults.auto_evict).toBe(true);
    expect(loadConfig({}, { LEMONADE_CACHE_DIR: other.cacheDir }).autoEvictThresholdPct).toBe(0.8);
    for (const body of [{ auto_evict: "yes" }, { auto_evict_threshold_pct: 1.5 }]) {
      const res = await set(body);
      expect(res.status).toBe(400);
      expect((await res.json()).param).toBe(Object.keys(body)[0]);
    }
  } finally {
    await other.close();
  }
});

test("/internal/simulate-vram-pressure runs one pressure check: at the threshold with auto_evict on the idle model goes; under it, or with auto_evict off, nothing", async () => {
  const other = await startFakeServer(["vp"]);
  try {
    const post = (path: string, body: unknown) => fetch(`${other.url}${path}`, { method: "POST", body: JSON.stringify(body) });
    const names = async () => (await (await fetch(`${other.url}/v1/health`)).json()).all_models_loaded.map((m: any) => m.model_name);
    expect((await post("/v1/load", { model_name: "extra.vp" })).status).toBe(200);
    // auto_evict is off by default: pressure eviction does not run, whatever the usage.
    expect(await (await post("/internal/simulate-vram-pressure", { pct: 0.99 })).json()).toEqual({ status: "ok" });
    expect(await names()).toEqual(["vp"]);
    // A model takes the server-wide auto_evict when it loads.
    await post("/internal/set", { auto_evict: true, auto_evict_threshold_pct: 0.9 });
    await post("/v1/unload", { model_name: "extra.vp" });
    await post("/v1/load", { model_name: "extra.vp" });
    await post("/internal/simulate-vram-pressure", { pct: 0.5 });
    expect(await names()).toEqual(["vp"]);
    await post("/internal/simulate-vram-pressure", { pct: 0.95 });
    // The eviction runs in the background: wait for it (a failure shows as the test's timeout).
    while ((await names()).length) await Bun.sleep(20);
    expect((await post("/internal/simulate-vram-pressure", { pct: "high" })).status).toBe(400);
  } finally {
    await other.close();
  }
});

test("flat backend keys (vllm_args, llamacpp_backend) are their section's settings; no_broadcast is broadcast negated; two spellings that disagree are a 400", async () => {
  const other = await startFakeServer(["fk"]);
  try {
    const set = (body: unknown) => fetch(`${other.url}/internal/set`, { method: "POST", body: JSON.stringify(body) });
    const ok = await set({ llamacpp_args: "--no-mmap", vllm_args: "--enforce-eager", no_broadcast: true });
    expect(await ok.json()).toEqual({
      status: "success",
      updated: { llamacpp: { args: "--no-mmap" }, vllm: { args: "--enforce-eager" }, broadcast: false },
      applied: ["llamacpp.args", "vllm.args"],
      saved: ["broadcast"],
    });
    const file = JSON.parse(readFileSync(join(other.cacheDir, "config.json"), "utf8"));
    expect(file).toMatchObject({ llamacpp: { args: "--no-mmap" }, vllm: { args: "--enforce-eager" }, broadcast: false });
    expect(file).not.toHaveProperty("llamacpp_args");
    for (const body of [{ llamacpp_args: "-a", "llamacpp.args": "-b" }, { broadcast: true, no_broadcast: true }]) {
      const res = await set(body);
      expect(res.status).toBe(400);
      expect((await res.json()).message).toMatch(/Ambiguous config|Cannot specify both/);
    }
  } finally {
    await other.close();
  }
});

test("a load request's llamacpp_args replace the saved ones and still follow the server-wide args", async () => {
  const other = await startFakeServer(["la"]);
  try {
    const post = (path: string, body: unknown) => fetch(`${other.url}${path}`, { method: "POST", body: JSON.stringify(body) });
    expect((await post("/internal/set", { "llamacpp.args": "--no-mmap" })).status).toBe(200);
    expect((await post("/v1/models/extra.la/options", { llamacpp_args: "--threads 2" })).status).toBe(200);
    expect((await post("/v1/load", { model_name: "extra.la", llamacpp_args: "--threads 1" })).status).toBe(200);
    const command: string = (await (await fetch(`${other.url}/v1/health`)).json()).all_models_loaded[0].launch_command.join(" ");
    expect(command).toContain("--no-mmap");
    expect(command).toContain("--threads 1");
    expect(command).not.toContain("--threads 2");
  } finally {
    await other.close();
  }
});

test("/internal/pin takes `model` in place of `model_name`; a missing model or a missing or non-boolean `pinned` is a 400 in Lemonade's words", async () => {
  await load("extra.a");
  const res = await admin("/internal/pin", { model: "extra.a", pinned: true });
  expect(await res.json()).toEqual({ status: "success", model_name: "extra.a", pinned: true });
  await admin("/internal/pin", { model: "extra.a", pinned: false });
  for (const [body, message, param] of [
    [{ model: "extra.a" }, "Parameter 'pinned' is required and must be a boolean", "pinned"],
    [{ model: "extra.a", pinned: "yes" }, "Parameter 'pinned' is required and must be a boolean", "pinned"],
    [{ pinned: true }, "Parameter 'model' or 'model_name' is required", "model"],
  ] as const) {
    const bad = await admin("/internal/pin", body);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ status: "error", message, code: "missing_argument", error: { message, type: "invalid_request_error", code: "missing_argument", param } });
  }
  const malformed = await (await fetch(`${server.url}/internal/pin`, { method: "POST", body: "{", headers: { authorization: `Bearer ${ADMIN}` } })).json();
  expect(malformed.error).toMatchObject({ type: "invalid_request_error", code: "invalid_json" });
  expect(malformed.message).toStartWith("Invalid JSON body: ");
});

test("load_command leaves the API key to the caller as $LEMONADE_API_KEY on a server that needs one, and has none otherwise", async () => {
  const keyed = await startFakeServer(["lc"], { LEMONADE_API_KEY: "sk-lc" });
  try {
    const options = await (await fetch(`${keyed.url}/v1/models/extra.lc/options`, { headers: { authorization: "Bearer sk-lc" } })).json();
    expect(options.load_command).toContain('-H "Authorization: Bearer $LEMONADE_API_KEY"');
    expect(options.load_command).not.toContain("sk-lc");
  } finally {
    await keyed.close();
  }
  expect((await (await admin("/v1/models/extra.a/options")).json()).load_command).not.toContain("Authorization");
});
