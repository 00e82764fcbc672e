// The web app's model names: which row a download job is (web/api.ts isJobOf; a job names its model
// as its pull named it), the labels of shadowed sources, and which names a pull takes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { displayName, isJobOf, pullable, type Model } from "../../web/api.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const BUILTIN = "Qwen3-0.6B-GGUF";
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, undefined, { engines: false });
});
afterAll(() => server.close());

const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });

test("a download job is the row of the name its pull gave: the listed id, or the canonical id", async () => {
  const other = "Qwen3-1.7B-GGUF";
  expect((await post("/v1/pull", { model_name: other, stream: true, subscribe: false })).status).toBe(200);
  expect((await post("/v1/models/register", { model_name: "user.web-job", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" })).status).toBe(200);
  expect((await post("/v1/pull", { model_name: "user.web-job", stream: true, subscribe: false })).status).toBe(200);

  const jobs = (await (await fetch(`${server.url}/v1/downloads`)).json()) as { model_name: string }[];
  const byName = (name: string) => jobs.find((j) => j.model_name === name)!;
  const listed = ((await (await fetch(`${server.url}/v1/models?show_all=true`)).json()) as { data: Model[] }).data;
  const builtin = listed.find((m) => m.canonical_id === `builtin.${other}`)!;
  const user = listed.find((m) => m.canonical_id === "user.web-job")!;
  expect(user.id).toBe("web-job");

  expect(isJobOf(byName(other), builtin)).toBe(true);
  expect(isJobOf(byName(other), user)).toBe(false);
  expect(isJobOf(byName("user.web-job"), user)).toBe(true);
  expect(isJobOf(byName("user.web-job"), builtin)).toBe(false);
});

test("a registered model shadowing a built-in: the built-in is builtin.<name> (shown as NAME (builtin)), the bare name the registered model's", async () => {
  expect((await post("/v1/models/register", { model_name: `user.${BUILTIN}`, checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" })).status).toBe(200);
  const listed = ((await (await fetch(`${server.url}/v1/models?show_all=true`)).json()) as { data: Model[] }).data;
  const builtin = listed.find((m) => m.canonical_id === `builtin.${BUILTIN}`)!;
  const user = listed.find((m) => m.canonical_id === `user.${BUILTIN}`)!;
  expect(user.id).toBe(BUILTIN);
  expect(builtin.id).toBe(`builtin.${BUILTIN}`);
  expect(displayName(builtin)).toBe(`${BUILTIN} (builtin)`);
  expect(displayName(user)).toBe(BUILTIN);
});

test("the model manager offers a download only where a pull takes the model's name: not for a shadowed built-in", async () => {
  const listed = ((await (await fetch(`${server.url}/v1/models?show_all=true`)).json()) as { data: Model[] }).data;
  const shadowed = listed.find((m) => m.canonical_id === `builtin.${BUILTIN}`)!;
  const plain = listed.find((m) => m.canonical_id === "builtin.Qwen3-1.7B-GGUF")!;
  expect(shadowed.shadowed).toBe(true);
  expect(pullable(shadowed)).toBe(false);
  const refused = await post("/v1/pull", { model_name: shadowed.id, stream: true, subscribe: false });
  expect(refused.status).toBe(400);
  expect(pullable(plain)).toBe(true);
  const started = await post("/v1/pull", { model_name: plain.id, stream: true, subscribe: false });
  expect(started.status).toBe(200);
});

test("an alias of a shadowed built-in is shown by its own name, not as the built-in", async () => {
  expect((await post("/internal/aliases", { alias: "web-fast", target: `builtin.${BUILTIN}` })).status).toBe(200);
  const listed = ((await (await fetch(`${server.url}/v1/models?show_all=true`)).json()) as { data: Model[] }).data;
  const alias = listed.find((m) => m.id === "web-fast")!;
  expect(alias).toMatchObject({ canonical_id: `builtin.${BUILTIN}`, shadowed: true });
  expect(displayName(alias)).toBe("web-fast");
  expect(displayName(listed.find((m) => m.id === `builtin.${BUILTIN}`)!)).toBe(`${BUILTIN} (builtin)`);
  // The alias is a name a pull takes.
  expect(pullable(alias)).toBe(true);
  expect((await post("/v1/pull", { model_name: alias.id, stream: true, subscribe: false })).status).toBe(200);
});

test("isJobOf: a job named by the listed id or the canonical id, a cloud model's by its id; another model's name is no match", () => {
  expect(isJobOf({ model_name: "extra.X" }, { id: "X", canonical_id: "extra.X" })).toBe(true);
  expect(isJobOf({ model_name: "X" }, { id: "X", canonical_id: "extra.X" })).toBe(true);
  expect(isJobOf({ model_name: "Y" }, { id: "X", canonical_id: "extra.X" })).toBe(false);
  expect(isJobOf({ model_name: "extra.X" }, { id: "builtin.X", canonical_id: "builtin.X" })).toBe(false);
  expect(isJobOf({ model_name: "user.X" }, { id: "X", canonical_id: "user.X" })).toBe(true);
  expect(isJobOf({ model_name: "X" }, { id: "X", canonical_id: "builtin.X" })).toBe(true);
  expect(isJobOf({ model_name: "provider.model" }, { id: "provider.model" })).toBe(true);
});
