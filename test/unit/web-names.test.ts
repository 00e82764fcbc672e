// The web app's model names: which row a download job is (web/api.ts isJobOf; a job names its model
// as its pull named it), the labels of shadowed sources, and which names a pull takes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { displayName, isJobOf, pullable, type Job, type Model } from "../../web/api.ts";
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

  const jobs = (await (await fetch(`${server.url}/v1/downloads`)).json()) as Job[];
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

test("a built-in's job started before a registration took its name is the builtin.<name> row's, not the registered row's", async () => {
  const name = "Qwen3-4B-GGUF";
  expect((await post("/v1/pull", { model_name: name, stream: true, subscribe: false })).status).toBe(200);
  expect((await post("/v1/models/register", { model_name: `user.${name}`, checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" })).status).toBe(200);
  const job = ((await (await fetch(`${server.url}/v1/downloads`)).json()) as Job[]).find((j) => j.id === `model:${name}`)!;
  // Named as its pull named it; its model is still the built-in.
  expect(job).toMatchObject({ model_name: name, canonical_id: `builtin.${name}` });
  const listed = ((await (await fetch(`${server.url}/v1/models?show_all=true`)).json()) as { data: Model[] }).data;
  const builtin = listed.find((m) => m.canonical_id === `builtin.${name}` && m.id === `builtin.${name}`)!;
  const user = listed.find((m) => m.canonical_id === `user.${name}`)!;
  expect(user.id).toBe(name);
  expect(isJobOf(job, builtin)).toBe(true);
  expect(isJobOf(job, user)).toBe(false);
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
  // The alias is a name a pull takes; its job is the alias's row and the built-in's, not the registered model's.
  expect(pullable(alias)).toBe(true);
  expect((await post("/v1/pull", { model_name: alias.id, stream: true, subscribe: false })).status).toBe(200);
  const job = ((await (await fetch(`${server.url}/v1/downloads`)).json()) as Job[]).find((j) => j.model_name === "web-fast")!;
  expect(job.canonical_id).toBe(`builtin.${BUILTIN}`);
  expect(isJobOf(job, alias)).toBe(true);
  expect(isJobOf(job, listed.find((m) => m.id === `builtin.${BUILTIN}`)!)).toBe(true);
  expect(isJobOf(job, listed.find((m) => m.id === BUILTIN)!)).toBe(false);
});

test("isJobOf: the job's model by canonical id, on that model's own row (bare or canonical) or the alias row its pull named", () => {
  expect(isJobOf({ model_name: "extra.X", canonical_id: "extra.X" }, { id: "X", canonical_id: "extra.X" })).toBe(true);
  expect(isJobOf({ model_name: "X", canonical_id: "extra.X" }, { id: "X", canonical_id: "extra.X" })).toBe(true);
  expect(isJobOf({ model_name: "Y", canonical_id: "extra.Y" }, { id: "X", canonical_id: "extra.X" })).toBe(false);
  expect(isJobOf({ model_name: "extra.X", canonical_id: "extra.X" }, { id: "builtin.X", canonical_id: "builtin.X" })).toBe(false);
  expect(isJobOf({ model_name: "user.X", canonical_id: "user.X" }, { id: "X", canonical_id: "user.X" })).toBe(true);
  expect(isJobOf({ model_name: "X", canonical_id: "builtin.X" }, { id: "X", canonical_id: "builtin.X" })).toBe(true);
  // The built-in's job under the name a registration has since taken.
  expect(isJobOf({ model_name: "X", canonical_id: "builtin.X" }, { id: "X", canonical_id: "user.X" })).toBe(false);
  expect(isJobOf({ model_name: "X", canonical_id: "builtin.X" }, { id: "builtin.X", canonical_id: "builtin.X" })).toBe(true);
  // An alias row shows the job its own pull started, not one started by another name.
  expect(isJobOf({ model_name: "fast", canonical_id: "builtin.X" }, { id: "fast", canonical_id: "builtin.X" })).toBe(true);
  expect(isJobOf({ model_name: "X", canonical_id: "builtin.X" }, { id: "fast", canonical_id: "builtin.X" })).toBe(false);
  expect(isJobOf({ model_name: "provider.model", canonical_id: "provider.model" }, { id: "provider.model" })).toBe(true);
});
