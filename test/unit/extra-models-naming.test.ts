// How the extra models folder is named (lemonade-docs-guide-configuration-custom-models.md, "Model
// naming spec"; the real server's discovery where the guide is silent): a top-level GGUF by its
// stem, a folder of named quantisations as one model each, a sharded GGUF as one model, the first
// mmproj of a folder, identical names in two folders kept apart, symbolic links followed. Listings
// name a model by its bare name when its source wins it (registered > extra > built-in), else by
// its canonical `<source>.<name>`; a user's collection always by its `user.` id.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const extra = tempDir("lemonade-extra-naming-");
const elsewhere = tempDir("lemonade-other-drive-");
let server: TestServer;

/** A file of that many bytes (sparse: sizes in GB cost no disk). */
const put = (path: string, bytes = 16) => {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, "");
  truncateSync(path, bytes);
};

beforeAll(async () => {
  put(join(extra, "Root-Model.gguf"), 1e9);
  put(join(extra, "mmproj-root.gguf"));
  put(join(extra, "Quants", "Quants-Q4_K_M.gguf"), 100);
  put(join(extra, "Quants", "Quants-Q8_0.gguf"), 200);
  put(join(extra, "Big", "Big-Q4_K_M-00001-of-00002.gguf"), 3e8);
  put(join(extra, "Big", "Big-Q4_K_M-00002-of-00002.gguf"), 4e8);
  put(join(extra, "Vision", "vision-model.gguf"));
  put(join(extra, "Vision", "mmproj-b-f32.gguf"));
  put(join(extra, "Vision", "mmproj-a-f16.gguf"));
  put(join(extra, "one", "Twin-Q4_0.gguf"));
  put(join(extra, "one", "Twin-Q8_0.gguf"));
  put(join(extra, "two", "Twin-Q4_0.gguf"));
  put(join(extra, "two", "Twin-Q8_0.gguf"));
  put(join(extra, "Qwen3-0.6B-GGUF.gguf"));
  // A split folder under a built-in's name; a folder whose second file is a draft companion.
  put(join(extra, "Qwen3-4B-GGUF", "Qwen3-4B-Q8_0.gguf"));
  put(join(extra, "Qwen3-4B-GGUF", "Qwen3-4B-Q4_K_M.gguf"));
  put(join(extra, "Drafted", "Drafted-Q4_K_M.gguf"));
  put(join(extra, "Drafted", "mtp-Drafted-Q8_0.gguf"));
  put(join(elsewhere, "Linked.gguf"), 5e8);
  put(join(extra, "Mid.gguf"), 5.5e9);
  put(join(extra, "Huge.gguf"), 12.5e9);
  symlinkSync(join(elsewhere, "Linked.gguf"), join(extra, "Linked.gguf"));
  symlinkSync(join(elsewhere, "gone.gguf"), join(extra, "Dangling.gguf"));
  // A link to a folder is not walked (so no link can loop the scan); links that loop are skipped.
  put(join(elsewhere, "Behind", "Behind.gguf"));
  symlinkSync(join(elsewhere, "Behind"), join(extra, "LinkedFolder"));
  symlinkSync(join(extra, "LoopB.gguf"), join(extra, "LoopA.gguf"));
  symlinkSync(join(extra, "LoopA.gguf"), join(extra, "LoopB.gguf"));
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra }, undefined, { engines: false });
});
afterAll(() => server.close());

type Listed = { id: string; size?: number; checkpoint: string; checkpoints: Record<string, string>; labels: string[]; source: string; canonical_id: string; shadowed: boolean; suggested: boolean; components: string[] };
const listed = async () => (await (await fetch(`${server.url}/v1/models?show_all=true`)).json()).data as Listed[];
const row = async (id: string) => (await listed()).find((m) => m.id === id);
const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const get = async (name: string, paths = false) => {
  const res = await fetch(`${server.url}/v1/models/${encodeURIComponent(name)}${paths ? "?include_paths=true" : ""}`);
  return { status: res.status, body: await res.json() };
};

test("a top-level GGUF is named by its stem; an mmproj at the top is no model", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids).toContain("Root-Model");
  expect(ids.filter((id) => /mmproj/.test(id))).toEqual([]);
  // Sizes in GiB, as Lemonade reports them: 1e9 bytes is 0.931.
  expect((await get("extra.Root-Model")).body.size).toBe(0.931);
});

test("sizes are GiB to 3 decimals under 1, 2 under 10 and 1 above, as Lemonade rounds them", async () => {
  expect((await get("extra.Mid")).body.size).toBe(5.12);
  expect((await get("extra.Huge")).body.size).toBe(11.6);
});

test("a folder of named quantisations is one model per quantisation", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids).toEqual(expect.arrayContaining(["Quants-Q4_K_M", "Quants-Q8_0"]));
  expect(ids.filter((id) => id.endsWith("Quants"))).toEqual([]);
  expect((await get("extra.Quants-Q8_0")).body.checkpoint).toBe("Quants/Quants-Q8_0.gguf");
});

test("a split folder's own name still reaches its first file's model, unlisted, bare or as extra.<folder>, over a built-in of that name", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids).toEqual(expect.arrayContaining(["Qwen3-4B-Q4_K_M", "Qwen3-4B-Q8_0", "Quants-Q4_K_M"]));
  expect(ids.filter((id) => /(^|\.)(Quants|Qwen3-4B-GGUF)$/.test(id))).toEqual(["builtin.Qwen3-4B-GGUF"]);
  for (const name of ["Quants", "extra.Quants"]) expect((await get(name)).body).toMatchObject({ id: "Quants-Q4_K_M", checkpoint: "Quants/Quants-Q4_K_M.gguf" });
  // The folder's old name takes the built-in's bare name; the built-in answers as builtin.<name>.
  expect((await get("Qwen3-4B-GGUF")).body).toMatchObject({ id: "Qwen3-4B-Q4_K_M", checkpoint: "Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf" });
  expect((await get("builtin.Qwen3-4B-GGUF")).body).toMatchObject({ id: "builtin.Qwen3-4B-GGUF", shadowed: true });
});

test("a folder beside a draft companion (mtp-, dflash-) stays one model, named after the folder", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids.filter((id) => /Drafted/.test(id))).toEqual(["Drafted"]);
  expect((await get("Drafted")).body.checkpoint).toBe("Drafted/Drafted-Q4_K_M.gguf");
});

test("the options views answer by the id the URL named, bare or prefixed, in model_name and in effective and defaults", async () => {
  const names = (b: { model_name: string; effective: { model_name: string }; defaults: { model_name: string } }) => [b.model_name, b.effective.model_name, b.defaults.model_name];
  for (const id of ["Mid", "extra.Mid"]) {
    const url = `${server.url}/v1/models/${id}/options`;
    expect(names(await (await fetch(url)).json())).toEqual([id, id, id]);
    expect(names(await (await post(`/v1/models/${id}/options`, { ctx_size: 2048 })).json())).toEqual([id, id, id]);
    expect(names(await (await fetch(url, { method: "DELETE" })).json())).toEqual([id, id, id]);
  }
});

test("a sharded GGUF stays one model: the first shard, the sizes summed", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids.filter((id) => /^(extra\.)?Big/.test(id))).toEqual(["Big"]);
  const big = (await get("extra.Big")).body;
  expect(big.checkpoint).toBe("Big/Big-Q4_K_M-00001-of-00002.gguf");
  expect(big.size).toBe(0.652);
});

test("a folder's mmproj is its first alphabetically, and makes the model a vision model", async () => {
  const vision = (await get("extra.Vision")).body;
  expect(vision.checkpoints).toEqual({ main: "Vision/vision-model.gguf", mmproj: "Vision/mmproj-a-f16.gguf" });
  expect(vision.labels).toContain("vision");
});

test("identical names in two folders stay two models; the second is qualified by its folder", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids).toEqual(expect.arrayContaining(["Twin-Q4_0", "Twin-Q8_0", "two-Twin-Q4_0", "two-Twin-Q8_0"]));
  expect((await get("extra.Twin-Q4_0")).body.checkpoint).toBe("one/Twin-Q4_0.gguf");
  expect((await get("extra.two-Twin-Q4_0")).body.checkpoint).toBe("two/Twin-Q4_0.gguf");
});

test("a symbolic link to a GGUF is followed; a dangling one, links that loop and a link to a folder are skipped", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids.filter((id) => /Dangling|Loop|Behind|LinkedFolder/.test(id))).toEqual([]);
  const linked = await get("extra.Linked");
  expect(linked.status).toBe(200);
  expect(linked.body.downloaded).toBe(true);
  expect(linked.body.size).toBe(0.466);
});

test("an extra model that wins its bare name is listed by it, on /v1/models, /api/tags and MCP; every form of the name reaches it", async () => {
  expect(await row("Root-Model")).toMatchObject({ source: "extra_models_dir", canonical_id: "extra.Root-Model", shadowed: false });
  expect(await row("extra.Root-Model")).toBeUndefined();
  for (const name of ["Root-Model", "extra.Root-Model"]) expect((await get(name)).body).toMatchObject({ id: "Root-Model", checkpoint: "Root-Model.gguf" });
  const tags = ((await (await fetch(`${server.url}/api/tags`)).json()).models as { name: string }[]).map((m) => m.name);
  expect(tags).toContain("Root-Model:latest");
  expect(tags.filter((t) => t.startsWith("extra."))).toEqual([]);
  const mcp = await (await post("/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "lemonade_list_models", arguments: {} } })).json();
  const available = JSON.parse(mcp.result.content[1].text).available.map((m: { model_name: string }) => m.model_name);
  expect(available).toEqual(expect.arrayContaining(["Root-Model", "Big", "Quants-Q8_0"]));
  expect(available.filter((n: string) => n.startsWith("extra."))).toEqual([]);
});

test("an alias of an extra model, named in any form, is listed beside it", async () => {
  expect((await post("/internal/aliases", { alias: "my-root", target: "extra.Root-Model" })).status).toBe(200);
  expect(await row("my-root")).toMatchObject({ checkpoint: "Root-Model.gguf", canonical_id: "extra.Root-Model" });
});

test("a prefixed name reaches only a model of that source: another source's is a 404", async () => {
  for (const name of ["user.Root-Model", "builtin.Root-Model", "extra.Qwen3-1.7B-GGUF", "user.Qwen3-1.7B-GGUF"]) {
    const res = await get(name);
    expect(res.status, name).toBe(404);
    expect(res.body.error.code, name).toBe("model_not_found");
  }
  expect((await get("builtin.Qwen3-1.7B-GGUF")).body.id).toBe("Qwen3-1.7B-GGUF");
});

test("an extra model shadows the built-in of its name, which answers as builtin.<name>", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids).toEqual(expect.arrayContaining(["Qwen3-0.6B-GGUF", "builtin.Qwen3-0.6B-GGUF"]));
  expect(ids).not.toContain("extra.Qwen3-0.6B-GGUF");
  const bare = (await get("Qwen3-0.6B-GGUF")).body;
  expect(bare).toMatchObject({ id: "Qwen3-0.6B-GGUF", source: "extra_models_dir", checkpoint: "Qwen3-0.6B-GGUF.gguf", canonical_id: "extra.Qwen3-0.6B-GGUF", shadowed: false });
  expect((await get("extra.Qwen3-0.6B-GGUF")).body.source).toBe("extra_models_dir");
  const builtin = (await get("builtin.Qwen3-0.6B-GGUF")).body;
  expect(builtin).toMatchObject({ id: "builtin.Qwen3-0.6B-GGUF", checkpoint: "unsloth/Qwen3-0.6B-GGUF:Q4_0", canonical_id: "builtin.Qwen3-0.6B-GGUF", shadowed: true });
});

test("a sharded extra model's files are one entry per role, its first shard at that shard's size; the model's size sums the shards", async () => {
  const res = await fetch(`${server.url}/v1/models/extra.Big/files`);
  expect(await res.json()).toEqual({
    model_id: "Big",
    files: [{ name: "Big-Q4_K_M-00001-of-00002.gguf", role: "main", size_bytes: 3e8, exists: true }],
  });
  expect((await get("Big")).body.size).toBe(0.652);
});

test("a user model takes the bare name from an extra one, which is then listed as extra.<name>", async () => {
  const register = (model_name: string) => post("/v1/models/register", { model_name, checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" });
  expect((await register("user.Root-Model")).status).toBe(200);
  expect(await row("Root-Model")).toMatchObject({ checkpoint: "test-org/tiny-GGUF:Q4_0", canonical_id: "user.Root-Model", shadowed: false });
  expect(await row("extra.Root-Model")).toMatchObject({ source: "extra_models_dir", checkpoint: "Root-Model.gguf", canonical_id: "extra.Root-Model", shadowed: true });
  expect((await get("user.Root-Model")).body).toMatchObject({ id: "Root-Model", checkpoint: "test-org/tiny-GGUF:Q4_0" });
  expect((await get("extra.Root-Model")).body).toMatchObject({ id: "extra.Root-Model", checkpoint: "Root-Model.gguf" });
  const tags = ((await (await fetch(`${server.url}/api/tags`)).json()).models as { name: string }[]).map((m) => m.name);
  expect(tags).toContain("extra.Root-Model:latest");
  // All three sources on one name: one bare row, one row per shadowed source (the guide's third case).
  expect((await register("user.Qwen3-0.6B-GGUF")).status).toBe(200);
  const ids = (await listed()).map((m) => m.id).filter((id) => id.endsWith("Qwen3-0.6B-GGUF"));
  expect(ids.sort()).toEqual(["Qwen3-0.6B-GGUF", "builtin.Qwen3-0.6B-GGUF", "extra.Qwen3-0.6B-GGUF"]);
  expect((await get("Qwen3-0.6B-GGUF")).body.checkpoint).toBe("test-org/tiny-GGUF:Q4_0");
  expect((await get("extra.Qwen3-0.6B-GGUF")).body.checkpoint).toBe("Qwen3-0.6B-GGUF.gguf");
  expect((await get("builtin.Qwen3-0.6B-GGUF")).body.checkpoint).toBe("unsloth/Qwen3-0.6B-GGUF:Q4_0");
});

test("a user's collection is listed by its user. id even when it wins its name; a built-in collection stays bare", async () => {
  expect((await post("/v1/models/register", { model_name: "user.Kit", recipe: "collection.omni", components: ["Quants-Q4_K_M"] })).status).toBe(200);
  const ids = (await listed()).map((m) => m.id);
  expect(ids).toContain("user.Kit");
  expect(ids).not.toContain("Kit");
  expect(await row("user.Kit")).toMatchObject({ canonical_id: "user.Kit", shadowed: false });
  expect((await get("Kit")).body.id).toBe("user.Kit");
  expect(ids).toContain("LMX-Omni-5.5B-Lite");
  expect(ids).not.toContain("builtin.LMX-Omni-5.5B-Lite");
});

test("an extra model is labelled and suggested as Lemonade's are: `custom` first, then its mode (and vision), suggested true, on /v1/models and /v1/models/{id} alike", async () => {
  for (const [id, labels] of [["Quants-Q8_0", ["custom", "chat"]], ["Vision", ["custom", "chat", "vision"]]] as const) {
    const one = (await get(`extra.${id}`)).body;
    expect(one).toMatchObject({ id, labels, suggested: true });
    expect(await row(id)).toMatchObject({ labels, suggested: true, checkpoint: one.checkpoint });
  }
  // The checkpoint stays relative to the folder unless paths are asked for (the include_paths privacy rule).
  expect((await get("extra.Quants-Q8_0")).body.checkpoint).toBe("Quants/Quants-Q8_0.gguf");
  expect((await get("extra.Quants-Q8_0", true)).body.checkpoint).toBe(join(extra, "Quants", "Quants-Q8_0.gguf"));
});

test("a collection's components, and the models embedded with them, are listed by the ids listings show them by, as Lemonade lists them", async () => {
  // By then user.Root-Model holds its bare name and builtin.Qwen3-0.6B-GGUF is shadowed.
  const components = ["extra.Quants-Q4_K_M", "builtin.Qwen3-0.6B-GGUF", "user.Root-Model"];
  expect((await post("/v1/models/register", { model_name: "user.Mixed", recipe: "collection.omni", components })).status).toBe(200);
  const shown = ["Quants-Q4_K_M", "builtin.Qwen3-0.6B-GGUF", "Root-Model"];
  const kit = (await get("user.Mixed")).body;
  expect(kit.components).toEqual(shown);
  expect(kit.models.map((m: { id: string }) => m.id)).toEqual(shown);
  expect((await row("user.Mixed"))?.components).toEqual(shown);
});
