// lemonade-docs-guide-configuration-custom-models.md: recipe_options.json keyed by canonical id
// (`builtin.NAME`, `user.NAME`, `extra.NAME`) for every reader and writer, with the migration of
// older bare built-in keys; a user model's automatic labels; an extra model's size in GiB.
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const BUILTIN = "Qwen3-0.6B-GGUF";
const OTHER_BUILTIN = "Qwen3-1.7B-GGUF";

const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
const optionsFile = (s: TestServer) => join(s.cacheDir, "recipe_options.json");
const migrationLines = (s: TestServer) => s.ctx.logger.snapshot().filter((e) => e.line.includes("recipe_options.json") && /Migrated/.test(e.line));
const savedOf = async (s: TestServer, id: string) => (await (await fetch(`${s.url}/v1/models/${encodeURIComponent(id)}/options`)).json()).saved;

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});
async function start(env: Record<string, string>, cacheDir?: string, engines = false): Promise<TestServer> {
  const s = await startTestServer(env, cacheDir, { engines });
  servers.push(s);
  return s;
}

describe("recipe_options.json migration", () => {
  test("a bare key naming a built-in is rewritten to builtin.<name> where it stood, once, with one INFO line; a bare key naming no built-in is kept", async () => {
    const cacheDir = tempDir();
    mkdirSync(cacheDir, { recursive: true });
    const seeded = {
      "user.Mine": { ctx_size: 1024 },
      [BUILTIN]: { ctx_size: 8192 },
      "Gone-Model": { ctx_size: 2048 },
      [OTHER_BUILTIN]: { ctx_size: 4096 },
      "extra.local": { ctx_size: 512 },
    };
    writeFileSync(join(cacheDir, "recipe_options.json"), JSON.stringify(seeded));
    const s = await start({ LEMONADE_LOG_LEVEL: "info" }, cacheDir);
    const file = JSON.parse(readFileSync(optionsFile(s), "utf8"));
    expect(Object.entries(file)).toEqual([
      ["user.Mine", { ctx_size: 1024 }],
      [`builtin.${BUILTIN}`, { ctx_size: 8192 }],
      ["Gone-Model", { ctx_size: 2048 }],
      [`builtin.${OTHER_BUILTIN}`, { ctx_size: 4096 }],
      ["extra.local", { ctx_size: 512 }],
    ]);
    const lines = migrationLines(s);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.severity).toBe("Info");
    expect(lines[0]!.line).toContain("Migrated 2 ");
    // The migrated entry is the built-in's saved layer, by either name.
    expect(await savedOf(s, BUILTIN)).toEqual({ ctx_size: 8192 });
    expect(await savedOf(s, `builtin.${OTHER_BUILTIN}`)).toEqual({ ctx_size: 4096 });
    const listed = (await (await fetch(`${s.url}/v1/models/${BUILTIN}`)).json()).recipe_options;
    expect(listed.ctx_size).toBe(8192);
  });

  test("with nothing to migrate the file is not written and no line is logged", async () => {
    const cacheDir = tempDir();
    mkdirSync(cacheDir, { recursive: true });
    const text = JSON.stringify({ [`builtin.${BUILTIN}`]: { ctx_size: 8192 }, "Gone-Model": { ctx_size: 2048 } });
    const path = join(cacheDir, "recipe_options.json");
    writeFileSync(path, text);
    const before = statSync(path);
    const s = await start({ LEMONADE_LOG_LEVEL: "info" }, cacheDir);
    expect(readFileSync(path, "utf8")).toBe(text);
    const after = statSync(path);
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
    expect(migrationLines(s)).toEqual([]);
  });

  test("an entry already under builtin.<name> wins over the bare key of the same built-in", async () => {
    const cacheDir = tempDir();
    mkdirSync(cacheDir, { recursive: true });
    writeFileSync(join(cacheDir, "recipe_options.json"), JSON.stringify({ [BUILTIN]: { ctx_size: 1111 }, [`builtin.${BUILTIN}`]: { ctx_size: 2222 } }));
    const s = await start({ LEMONADE_LOG_LEVEL: "info" }, cacheDir);
    expect(JSON.parse(readFileSync(optionsFile(s), "utf8"))).toEqual({ [`builtin.${BUILTIN}`]: { ctx_size: 2222 } });
    expect(await savedOf(s, BUILTIN)).toEqual({ ctx_size: 2222 });
  });
});

describe("options under the canonical id of the model a name resolves to", () => {
  test("built-in, extra and user models of one bare name each keep their own entry; the bare name writes and reads the winner's", async () => {
    const extra = tempDir("lemonade-extra-");
    // The tiny chat model in the extra folder under a built-in's name: the extra model takes the bare name.
    copyFileSync(join(testModelsDir(), MODELS.chat), join(extra, `${BUILTIN}.gguf`));
    const s = await start({ LEMONADE_EXTRA_MODELS_DIR: extra }, undefined, true);

    // A load by the bare name with save_options saves under the winner's id, extra.<name>.
    const load = await fetch(`${s.url}/v1/load`, json({ model_name: BUILTIN, ctx_size: 1024, save_options: true }));
    expect(load.status).toBe(200);
    expect(JSON.parse(readFileSync(optionsFile(s), "utf8"))).toEqual({ [`extra.${BUILTIN}`]: { ctx_size: 1024 } });
    expect(await savedOf(s, BUILTIN)).toEqual({ ctx_size: 1024 });
    expect(await savedOf(s, `builtin.${BUILTIN}`)).toEqual({});

    // The shadowed built-in's options, by its builtin. name, stay apart.
    expect((await fetch(`${s.url}/v1/models/builtin.${BUILTIN}/options`, json({ ctx_size: 4096 }))).status).toBe(200);
    expect(await savedOf(s, `extra.${BUILTIN}`)).toEqual({ ctx_size: 1024 });

    // A registered model takes the bare name: the bare name's writes are the user model's from now on.
    const register = await fetch(`${s.url}/v1/models/register`, json({ model_name: `user.${BUILTIN}`, checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" }));
    expect(register.status).toBe(200);
    expect(await savedOf(s, BUILTIN)).toEqual({});
    expect((await fetch(`${s.url}/v1/models/${BUILTIN}/options`, json({ ctx_size: 2048 }))).status).toBe(200);
    expect(JSON.parse(readFileSync(optionsFile(s), "utf8"))).toEqual({
      [`extra.${BUILTIN}`]: { ctx_size: 1024 },
      [`builtin.${BUILTIN}`]: { ctx_size: 4096 },
      [`user.${BUILTIN}`]: { ctx_size: 2048 },
    });

    // Listings show each source's row with its own saved options.
    const rows = (await (await fetch(`${s.url}/v1/models?show_all=true`)).json()).data as { id: string; recipe_options: { ctx_size?: number } }[];
    const ctxOf = (id: string) => rows.find((m) => m.id === id)?.recipe_options.ctx_size;
    expect([ctxOf(BUILTIN), ctxOf(`extra.${BUILTIN}`), ctxOf(`builtin.${BUILTIN}`)]).toEqual([2048, 1024, 4096]);

    // DELETE by the bare name resets the winner only.
    expect((await fetch(`${s.url}/v1/models/${BUILTIN}/options`, { method: "DELETE" })).status).toBe(200);
    expect(Object.keys(JSON.parse(readFileSync(optionsFile(s), "utf8"))).sort()).toEqual([`builtin.${BUILTIN}`, `extra.${BUILTIN}`]);
  });
});

describe("a user model's labels", () => {
  test("an entry written into user_models.json by hand gets `custom` and, naming no deployment label, its recipe's default", async () => {
    const cacheDir = tempDir();
    mkdirSync(cacheDir, { recursive: true });
    writeFileSync(
      join(cacheDir, "user_models.json"),
      JSON.stringify({
        "Hand-Chat": { checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" },
        "Hand-Coder": { checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp", labels: ["tool-calling", "coding"] },
        "Hand-Embed": { checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp", labels: ["embeddings"] },
        "Hand-Image": { checkpoint: "test-org/tiny-sd:model.safetensors", recipe: "sd-cpp" },
        "Hand-Whisper": { checkpoint: "ggerganov/whisper.cpp:ggml-tiny.bin", recipe: "whispercpp" },
      }),
    );
    const s = await start({}, cacheDir);
    const labelsOf = async (id: string) => (await (await fetch(`${s.url}/v1/models/${id}`)).json()).labels;
    expect(await labelsOf("Hand-Chat")).toEqual(["chat", "custom"]);
    expect(await labelsOf("user.Hand-Coder")).toEqual(["chat", "coding", "custom", "tool-calling"]);
    expect(await labelsOf("Hand-Embed")).toEqual(["custom", "embeddings"]);
    expect(await labelsOf("Hand-Image")).toEqual(["custom", "image"]);
    // whisper.cpp models also carry Lemonade's realtime-transcription capability.
    expect(await labelsOf("Hand-Whisper")).toEqual(["custom", "realtime-transcription", "transcription"]);
  });
});

describe("an extra model's size", () => {
  const extra = tempDir("lemonade-extra-sizes-");
  /** A sparse file of that many bytes. */
  const put = (path: string, bytes: number) => {
    mkdirSync(join(extra, path, ".."), { recursive: true });
    writeFileSync(join(extra, path), "");
    truncateSync(join(extra, path), bytes);
  };

  test("is GiB, rounded as Lemonade rounds: the main file or its whole shard series, plus the model's mmproj", async () => {
    put("Top-00001-of-00002.gguf", 3e8);
    put("Top-00002-of-00002.gguf", 4e8);
    put("Vis/vis-model.gguf", 2e9);
    put("Vis/mmproj-a.gguf", 6e8);
    put("Vis/mmproj-b.gguf", 5e8);
    put("Q/Q-Q4_K_M-00001-of-00002.gguf", 1e8);
    put("Q/Q-Q4_K_M-00002-of-00002.gguf", 1e8);
    put("Q/Q-Q8_0.gguf", 3e8);
    put("Q/mmproj-q.gguf", 5e7);
    put("Mixed/alpha.gguf", 1e9);
    put("Mixed/beta.gguf", 1e9);
    const s = await start({ LEMONADE_EXTRA_MODELS_DIR: extra });
    const sizeOf = async (id: string) => (await (await fetch(`${s.url}/v1/models/extra.${id}`)).json()).size;
    // A top-level shard is a model of its own, sized as its whole series (7e8 bytes).
    expect(await sizeOf("Top-00001-of-00002")).toBe(0.652);
    // The main file and the first mmproj only (2.6e9 bytes), not every mmproj in the folder.
    expect(await sizeOf("Vis")).toBe(2.42);
    // Each quantisation of a split folder: its shards and the folder's mmproj (2.5e8 and 3.5e8 bytes).
    expect(await sizeOf("Q-Q4_K_M")).toBe(0.233);
    expect(await sizeOf("Q-Q8_0")).toBe(0.326);
    // A folder that stays one model is its main file's size (1e9 bytes), not the folder's.
    expect(await sizeOf("Mixed")).toBe(0.931);
  });
});

describe("the extra folder, scanned once per change rather than per request", () => {
  test("a file dropped in is found at once, by name, and a file removed leaves the listings", async () => {
    const extra = tempDir("lemonade-extra-scan-");
    const gguf = join(testModelsDir(), MODELS.chat);
    copyFileSync(gguf, join(extra, "first.gguf"));
    const s = await start({ LEMONADE_EXTRA_MODELS_DIR: extra });
    const status = async (id: string) => (await fetch(`${s.url}/v1/models/${id}`)).status;
    const listed = async () => ((await (await fetch(`${s.url}/v1/models`)).json()).data as { id: string }[]).map((m) => m.id);
    expect(await status("extra.first")).toBe(200);
    expect(await listed()).toContain("first");
    // Asked for by name straight after the copy: no wait for the folder's watcher.
    copyFileSync(gguf, join(extra, "second.gguf"));
    expect(await status("extra.second")).toBe(200);
    // Removed: gone from the listings once the watcher (or the scan's short lifetime) tells.
    rmSync(join(extra, "first.gguf"));
    let ids = await listed();
    for (let i = 0; i < 60 && ids.includes("first"); i++) {
      await Bun.sleep(100);
      ids = await listed();
    }
    expect(ids).not.toContain("first");
    expect(ids).toContain("second");
    expect(await status("extra.first")).toBe(404);
  });
});
