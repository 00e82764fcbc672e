// The web app's join of a download job to its model's row (web/api.ts isJobOf): a job names its
// model by the catalog's id, and once a registered model shadows a built-in, the bare name the
// job carries is the registered model's listed id, so matching the listed id gave the built-in's
// download to the wrong row.
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

test("a built-in's download job is its row's, not the row of the registered model that shadows it", async () => {
  // The job starts before the shadowing model is registered (a shadowed built-in cannot be pulled).
  const started = await post("/v1/pull", { model_name: BUILTIN, stream: true, subscribe: false });
  expect(started.status).toBe(200);
  const registered = await post("/v1/models/register", { model_name: `user.${BUILTIN}`, checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" });
  expect(registered.status).toBe(200);

  const jobs = ((await (await fetch(`${server.url}/v1/downloads`)).json()) as { model_name: string }[]).filter((j) => j.model_name === BUILTIN);
  expect(jobs).toHaveLength(1);
  const listed = ((await (await fetch(`${server.url}/v1/models?show_all=true`)).json()) as { data: Model[] }).data;
  const builtin = listed.find((m) => m.canonical_id === `builtin.${BUILTIN}`)!;
  const user = listed.find((m) => m.canonical_id === `user.${BUILTIN}`)!;
  expect(user.id).toBe(BUILTIN);
  expect(builtin.id).toBe(`builtin.${BUILTIN}`);
  expect(displayName(builtin)).toBe(`${BUILTIN} (builtin)`);

  expect(isJobOf(jobs[0]!, builtin)).toBe(true);
  expect(isJobOf(jobs[0]!, user)).toBe(false);
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

test("isJobOf: a job named by the canonical id, a built-in's by its bare name, a cloud model's by its id", () => {
  expect(isJobOf({ model_name: "extra.X" }, { id: "X", canonical_id: "extra.X" })).toBe(true);
  expect(isJobOf({ model_name: "X" }, { id: "X", canonical_id: "extra.X" })).toBe(false);
  expect(isJobOf({ model_name: "user.X" }, { id: "X", canonical_id: "user.X" })).toBe(true);
  expect(isJobOf({ model_name: "X" }, { id: "X", canonical_id: "builtin.X" })).toBe(true);
  expect(isJobOf({ model_name: "provider.model" }, { id: "provider.model" })).toBe(true);
});
