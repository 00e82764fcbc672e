// How the extra models folder is named (lemonade-docs-guide-configuration-custom-models.md, "Model
// naming spec"; the real server's discovery where the guide is silent): a top-level GGUF by its
// stem, a folder of named quantisations as one model each, a sharded GGUF as one model, the first
// mmproj of a folder, identical names in two folders kept apart, symbolic links followed, and an
// extra model shadowing a built-in of its name, which then answers as `builtin.<name>`.
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
  put(join(elsewhere, "Linked.gguf"), 5e8);
  put(join(extra, "Mid.gguf"), 5.5e9);
  put(join(extra, "Huge.gguf"), 12.5e9);
  symlinkSync(join(elsewhere, "Linked.gguf"), join(extra, "Linked.gguf"));
  symlinkSync(join(elsewhere, "gone.gguf"), join(extra, "Dangling.gguf"));
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra }, undefined, { engines: false });
});
afterAll(() => server.close());

const listed = async () => (await (await fetch(`${server.url}/v1/models?show_all=true`)).json()).data as { id: string; size?: number; checkpoint: string; checkpoints: Record<string, string>; labels: string[] }[];
const get = async (name: string, paths = false) => {
  const res = await fetch(`${server.url}/v1/models/${encodeURIComponent(name)}${paths ? "?include_paths=true" : ""}`);
  return { status: res.status, body: await res.json() };
};

test("a top-level GGUF is named by its stem; an mmproj at the top is no model", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids).toContain("extra.Root-Model");
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
  expect(ids).toEqual(expect.arrayContaining(["extra.Quants-Q4_K_M", "extra.Quants-Q8_0"]));
  expect(ids).not.toContain("extra.Quants");
  expect((await get("extra.Quants-Q8_0")).body.checkpoint).toBe("Quants/Quants-Q8_0.gguf");
});

test("a sharded GGUF stays one model: the first shard, the sizes summed", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids).toContain("extra.Big");
  expect(ids.filter((id) => id.startsWith("extra.Big"))).toEqual(["extra.Big"]);
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
  expect(ids).toEqual(expect.arrayContaining(["extra.Twin-Q4_0", "extra.Twin-Q8_0", "extra.two-Twin-Q4_0", "extra.two-Twin-Q8_0"]));
  expect((await get("extra.Twin-Q4_0")).body.checkpoint).toBe("one/Twin-Q4_0.gguf");
  expect((await get("extra.two-Twin-Q4_0")).body.checkpoint).toBe("two/Twin-Q4_0.gguf");
});

test("a symbolic link to a GGUF is followed; a dangling one is skipped", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids).not.toContain("extra.Dangling");
  const linked = await get("extra.Linked");
  expect(linked.status).toBe(200);
  expect(linked.body.downloaded).toBe(true);
  expect(linked.body.size).toBe(0.466);
});

test("an extra model shadows the built-in of its name, which answers as builtin.<name>", async () => {
  const ids = (await listed()).map((m) => m.id);
  expect(ids).toEqual(expect.arrayContaining(["Qwen3-0.6B-GGUF", "builtin.Qwen3-0.6B-GGUF"]));
  expect(ids).not.toContain("extra.Qwen3-0.6B-GGUF");
  const bare = (await get("Qwen3-0.6B-GGUF")).body;
  expect(bare).toMatchObject({ id: "Qwen3-0.6B-GGUF", source: "extra_models_dir", checkpoint: "Qwen3-0.6B-GGUF.gguf" });
  expect((await get("extra.Qwen3-0.6B-GGUF")).body.source).toBe("extra_models_dir");
  const builtin = (await get("builtin.Qwen3-0.6B-GGUF")).body;
  expect(builtin).toMatchObject({ id: "builtin.Qwen3-0.6B-GGUF", checkpoint: "unsloth/Qwen3-0.6B-GGUF:Q4_0" });
});
