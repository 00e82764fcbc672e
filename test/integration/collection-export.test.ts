// A user collection exported and imported again is itself (custom-models guide, "Share a
// collection"): `lemonade export` writes its /v1/models object as an import-ready /v1/pull body,
// and after the collection is deleted, `lemonade import` of that file registers what was there.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { tempDir, type TestServer } from "../helpers/server.ts";

const root = join(import.meta.dir, "..", "..");
let server: TestServer;
beforeAll(async () => {
  server = await startFakeServer(["coder", "chat"]);
});
afterAll(() => server.close());

const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const modelObject = async (id: string) => (await fetch(`${server.url}/v1/models/${encodeURIComponent(id)}`)).json();

async function lemonade(args: string[]) {
  const child = Bun.spawn([process.execPath, "cli/main.ts", ...args], { cwd: root, env: { ...process.env, LEMONADE_CACHE_DIR: tempDir(), LEMONADE_HOST: server.url }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { out, err, code };
}

/** Exports the model, deletes it, imports the file; answers its /v1/models object before and after. */
async function roundTrip(id: string) {
  const before = await modelObject(id);
  const file = join(tempDir(), `${id}.json`);
  const exported = await lemonade(["export", id, "-o", file]);
  expect(exported.code, exported.err).toBe(0);
  expect((await post("/v1/delete", { model_name: id })).status).toBe(200);
  expect((await fetch(`${server.url}/v1/models/${encodeURIComponent(id)}`)).status).toBe(404);
  const imported = await lemonade(["import", file]);
  expect(imported.code, imported.err).toBe(0);
  return { before, after: await modelObject(id), file: await Bun.file(file).json() };
}

test("a user router exported and imported again is itself: candidates, version, rules, outputs and labels", async () => {
  const routing = {
    candidates: ["extra.coder", "extra.chat"],
    default_model: "extra.chat",
    rules: [{ id: "code", match: { any: [{ keywords_any: ["python"] }, { metadata: { key: "task", equals: "code" } }] }, route_to: "extra.coder", outputs: { tier: "code" } }],
  };
  expect((await post("/v1/pull", { model_name: "user.Dispatch", recipe: "collection.router", version: "1", components: ["extra.coder", "extra.chat"], routing })).status).toBe(200);
  const { before, after, file } = await roundTrip("user.Dispatch");
  // Its components by their listed ids, their definitions embedded, as an omni collection's are.
  expect(file).toMatchObject({ model_name: "user.Dispatch", recipe: "collection.router", version: "1", components: ["coder", "chat"], routing });
  expect(file.models.map((m: { model_name: string }) => m.model_name)).toEqual(["coder", "chat"]);
  // Runtime fields stay out of the file; the server makes them again.
  for (const key of ["created", "downloaded", "suggested", "id"]) expect(file).not.toHaveProperty(key);
  expect(after).toEqual(before);
});

test("a user omni collection exported and imported again is itself, its component definitions embedded", async () => {
  expect((await post("/v1/pull", { model_name: "user.Kit", recipe: "collection.omni", components: ["extra.chat", "kokoro-v1"], system_prompt: "Be brief." })).status).toBe(200);
  const { before, after, file } = await roundTrip("user.Kit");
  // The components, and their definitions, by the ids the collection lists them by.
  expect(file).toMatchObject({ model_name: "user.Kit", recipe: "collection.omni", components: ["chat", "kokoro-v1"], system_prompt: "Be brief." });
  expect(file.models.map((m: { model_name: string }) => m.model_name)).toEqual(["chat", "kokoro-v1"]);
  expect(after).toEqual(before);
});
