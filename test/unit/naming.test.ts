// Model naming as lemonade.md has it: user models by their bare name (and `user.<name>`), a
// shadowed built-in as `builtin.<name>`, reserved prefixes, aliases of aliases.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, undefined, { engines: false });
});
afterAll(() => server.close());

const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const register = (model_name: string, checkpoint = "test-org/tiny-GGUF:Q4_0") => post("/v1/models/register", { model_name, checkpoint, recipe: "llamacpp" });
const get = async (name: string) => (await fetch(`${server.url}/v1/models/${encodeURIComponent(name)}`)).json();

test("registration answers the public and canonical names; the model answers to both", async () => {
  const res = await register("user.Phi-Test");
  expect(await res.json()).toMatchObject({
    status: "success",
    model_name: "Phi-Test",
    canonical_model_name: "user.Phi-Test",
    model: { id: "Phi-Test", recipe: "llamacpp", downloaded: false },
  });
  expect((await get("Phi-Test")).id).toBe("Phi-Test");
  expect((await get("user.Phi-Test")).checkpoint).toBe("test-org/tiny-GGUF:Q4_0");
  const listed = (await (await fetch(`${server.url}/v1/models?show_all=true`)).json()).data.map((m: any) => m.id);
  expect(listed).toContain("Phi-Test");
  expect(listed).not.toContain("user.Phi-Test");
});

test("a failed load quotes the name the request gave, as Lemonade does, and its reason names the model as /v1/models lists it", async () => {
  const load = await post("/v1/load", { model_name: "user.Phi-Test" });
  expect(load.status).toBe(500);
  expect((await load.json()).message).toStartWith("Failed to load model 'user.Phi-Test': Phi-Test is not downloaded and the download failed: ");
});

test("a model's tuning answers name it by its listed id, whichever name the path used", async () => {
  const saved = await post("/v1/models/user.Phi-Test/tuning", { backend: "cpu", params: { threads: 2 } });
  expect(saved.status).toBe(200);
  expect((await saved.json()).model_name).toBe("Phi-Test");
  const removed = await fetch(`${server.url}/v1/models/user.Phi-Test/tuning`, { method: "DELETE" });
  expect((await removed.json()).model_name).toBe("Phi-Test");
});

test("a user model that shadows a built-in takes its name; the built-in stays reachable as builtin.<name>", async () => {
  expect((await register("user.Qwen3-0.6B-GGUF", "someone/other-GGUF:Q8_0")).status).toBe(200);
  expect((await get("Qwen3-0.6B-GGUF")).checkpoint).toBe("someone/other-GGUF:Q8_0");
  const builtin = await get("builtin.Qwen3-0.6B-GGUF");
  expect(builtin.checkpoint).toBe("unsloth/Qwen3-0.6B-GGUF:Q4_0");
  expect(builtin.id).toBe("builtin.Qwen3-0.6B-GGUF");
  const listed = (await (await fetch(`${server.url}/v1/models?show_all=true`)).json()).data.map((m: any) => m.id);
  expect(listed).toEqual(expect.arrayContaining(["Qwen3-0.6B-GGUF", "builtin.Qwen3-0.6B-GGUF"]));
});

test("lemonade_list_models suggests a shadowed built-in by its builtin. name, as Lemonade does, and a load takes that name", async () => {
  const mcp = await (await post("/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "lemonade_list_models", arguments: {} } })).json();
  const suggested = JSON.parse(mcp.result.content[1].text).suggested_to_pull.map((m: any) => m.model_name);
  // The user's model takes the bare name and is suggested too (Lemonade suggests every user model).
  expect(suggested).toEqual(expect.arrayContaining(["Qwen3-0.6B-GGUF", "builtin.Qwen3-0.6B-GGUF"]));
  // /v1/pull refuses the prefix as one no registration may take; the tools reach the model by a
  // load, which takes it (here failing only at the download, no hub being reachable).
  const load = await post("/v1/load", { model_name: "builtin.Qwen3-0.6B-GGUF" });
  expect(load.status).toBe(500);
  expect((await load.json()).message).toStartWith("Failed to load model 'builtin.Qwen3-0.6B-GGUF': ");
});

test("a registration is stored and listed with the custom label and its recipe's deployment label, as a sorted set, and suggested, as Lemonade stores it", async () => {
  expect((await post("/v1/models/register", { model_name: "user.Labeled", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp", reasoning: true, labels: ["vision"] })).status).toBe(200);
  expect(await get("Labeled")).toMatchObject({ labels: ["chat", "custom", "reasoning", "vision"], suggested: true });
  const stored = JSON.parse(readFileSync(join(server.cacheDir, "user_models.json"), "utf8")).Labeled;
  expect(stored).toMatchObject({ labels: ["chat", "custom", "reasoning", "vision"], suggested: true });
});

test("a user_models.json entry written by hand is listed with its own labels, custom and its deployment label added, suggested, and the file is left as written", async () => {
  const cacheDir = tempDir();
  mkdirSync(cacheDir, { recursive: true });
  const written = JSON.stringify({ Hand: { checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp", labels: ["reasoning"] } });
  writeFileSync(join(cacheDir, "user_models.json"), written);
  const other = await startTestServer({}, cacheDir, { engines: false });
  try {
    const model = await (await fetch(`${other.url}/v1/models/Hand`)).json();
    expect(model).toMatchObject({ labels: ["chat", "custom", "reasoning"], suggested: true });
    expect(readFileSync(join(cacheDir, "user_models.json"), "utf8")).toBe(written);
  } finally {
    await other.close();
  }
});

test("extra. and builtin. are reserved prefixes", async () => {
  for (const name of ["extra.mine", "builtin.mine", "user.extra.mine", "user.builtin.mine"]) {
    const res = await register(name);
    expect(res.status, name).toBe(400);
    expect((await res.json()).message).toContain("reserved");
  }
});

test("an alias may point at another alias and resolves to the end; a cycle is refused", async () => {
  expect((await post("/internal/aliases", { alias: "first", target: "Phi-Test" })).status).toBe(200);
  expect((await post("/internal/aliases", { alias: "second", target: "first" })).status).toBe(200);
  expect((await get("second")).checkpoint).toBe("test-org/tiny-GGUF:Q4_0");
  const cycle = await post("/internal/aliases", { alias: "first", target: "second" });
  // Lemonade answers a cycle as a conflict, naming it.
  expect(cycle.status).toBe(409);
  expect((await cycle.json()).message).toBe("Circular alias dependency detected: first -> second");
});

test("pull, delete and unload take `model` in place of `model_name`", async () => {
  const unload = await post("/v1/unload", { model: "Phi-Test" });
  expect(unload.status).toBe(404);
  expect((await unload.json()).message).toContain("Phi-Test");
  expect((await post("/v1/delete", { model: "no-such-model" })).status).toBe(422);
  // The hub is a closed port here: the pull gets as far as downloading the model it named.
  const pull = await post("/v1/pull", { model: "Phi-Test" });
  expect((await pull.json()).message).toContain("tiny-GGUF");
});

test("the catalog's model list is one frozen array until a part of it changes, and lookups follow the change", async () => {
  const catalog = server.ctx.catalog;
  const before = catalog.all();
  expect(catalog.all()).toBe(before);
  expect(Object.isFrozen(before)).toBe(true);
  // Looked up once against the old list (a name matched by case only), then registered: the new
  // model is found at once, and the list is a new array.
  expect(catalog.find("PHI-TEST")?.id).toBe("user.Phi-Test");
  expect(catalog.find("Index-Probe")).toBeUndefined();
  expect((await register("user.Index-Probe")).status).toBe(200);
  expect(catalog.all()).not.toBe(before);
  expect(catalog.find("index-probe")?.id).toBe("user.Index-Probe");
  expect(catalog.publicIdOf("user.Index-Probe")).toBe("Index-Probe");
});
