import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync, readdirSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { internal } from "../../spec/index.ts";
import { loadConfig } from "../../config/config.ts";
import { CorruptStateFileError, writeJsonFileAtomic } from "../../lib/json-file.ts";
import { generation } from "../../lib/generation.ts";
import { expectMatches, startTestServer, tempDir } from "../helpers/server.ts";

describe("aliases", () => {
  test("bind, list, persist across a restart, remove", async () => {
    const cacheDir = tempDir();
    let server = await startTestServer({}, cacheDir);
    const post = (body: unknown) =>
      fetch(`${server.url}/internal/aliases`, { method: "POST", body: JSON.stringify(body) });
    expect((await post({ alias: "prod", target: "Qwen3-0.6B-GGUF" })).status).toBe(200);
    expect((await post({ alias: "embed", model: "nomic-embed-text-v1-GGUF" })).status).toBe(200);
    expect((await post({ alias: "prod", target: "Llama-3.2-1B-Instruct-GGUF" })).status).toBe(200);
    expect((await post({ alias: "Zed", target: "Qwen3-0.6B-GGUF" })).status).toBe(200);
    await server.close(true);

    server = await startTestServer({}, cacheDir);
    const list = await (await fetch(`${server.url}/internal/aliases`)).json();
    expectMatches(internal.aliasesList.response, list);
    // In code-unit order (capitals first), not a locale's.
    expect(list.aliases.map((a: any) => [a.alias, a.target, a.recipe, a.downloaded])).toEqual([
      ["Zed", "Qwen3-0.6B-GGUF", "llamacpp", false],
      ["embed", "nomic-embed-text-v1-GGUF", "llamacpp", false],
      ["prod", "Llama-3.2-1B-Instruct-GGUF", "llamacpp", false],
    ]);

    const del = await fetch(`${server.url}/internal/aliases/prod`, { method: "DELETE" });
    expect(await del.json()).toEqual({ status: "deleted", alias: "prod" });
    const again = await fetch(`${server.url}/internal/aliases/prod`, { method: "DELETE" });
    expect(again.status).toBe(404);
    expect((await again.json()).code).toBe("alias_not_found");
    expect(JSON.parse(readFileSync(join(cacheDir, "aliases.json"), "utf8"))).toEqual({ embed: "nomic-embed-text-v1-GGUF", Zed: "Qwen3-0.6B-GGUF" });
    await server.close();
  });

  test("a corrupt aliases.json stops start-up with a clear error and is left untouched", async () => {
    const cacheDir = tempDir();
    writeFileSync(join(cacheDir, "aliases.json"), '{"prod": "Qwen3');
    await expect(startTestServer({}, cacheDir)).rejects.toThrow(/aliases\.json is not valid JSON/);
    expect(readFileSync(join(cacheDir, "aliases.json"), "utf8")).toBe('{"prod": "Qwen3');
  });
});

describe("atomic writes", () => {
  test("a write leaves no temp file and replaces the whole content", () => {
    const dir = tempDir();
    const file = join(dir, "state.json");
    writeJsonFileAtomic(file, { a: 1, long: "x".repeat(10000) });
    writeJsonFileAtomic(file, { b: 2 });
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ b: 2 });
    expect(readdirSync(dir)).toEqual(["state.json"]);
  });

  test("a state file's write counts as a change to the cached views, a quiet (cache) one does not; compact is one line", () => {
    const file = join(tempDir(), "state.json");
    const before = generation();
    writeJsonFileAtomic(file, { a: [1, 2] });
    expect(generation()).toBe(before + 1);
    expect(readFileSync(file, "utf8")).toContain("\n  ");
    writeJsonFileAtomic(file, { a: [1, 2] }, { compact: true, quiet: true });
    expect(generation()).toBe(before + 1);
    expect(readFileSync(file, "utf8")).toBe('{"a":[1,2]}\n');
  });

  test("a failed write keeps the old file", () => {
    const dir = tempDir();
    const file = join(dir, "state.json");
    writeJsonFileAtomic(file, { keep: true });
    // JSON.stringify throws on a BigInt, standing in for any failure mid-write.
    expect(() => writeJsonFileAtomic(file, { n: 1n })).toThrow();
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ keep: true });
  });
});

describe("configuration", () => {
  test("defaults: loopback, port 13305, one model per type", () => {
    const cacheDir = tempDir();
    const c = loadConfig({}, { LEMONADE_CACHE_DIR: cacheDir });
    expect(c.host).toBe("127.0.0.1");
    expect(c.port).toBe(13305);
    expect(c.cacheDir).toBe(cacheDir);
    expect(c.maxLoadedModels).toBe(1);
    expect(c.apiKey).toBeNull();
  });

  test("flags beat environment, environment beats config.json", () => {
    const cacheDir = tempDir();
    writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ port: 9000, host: "0.0.0.0", max_loaded_models: 2 }));
    expect(loadConfig({}, { LEMONADE_CACHE_DIR: cacheDir }).port).toBe(9000);
    expect(loadConfig({}, { LEMONADE_CACHE_DIR: cacheDir }).maxLoadedModels).toBe(2);
    const env = { LEMONADE_CACHE_DIR: cacheDir, LEMONADE_PORT: "9100", LEMONADE_MAX_LOADED_MODELS: "-1" };
    expect(loadConfig({}, env).port).toBe(9100);
    expect(loadConfig({}, env).maxLoadedModels).toBe(-1);
    expect(loadConfig({ port: 9200, host: "127.0.0.2" }, env)).toMatchObject({ port: 9200, host: "127.0.0.2" });
  });

  test("bad values are refused with the setting's name", () => {
    const cacheDir = tempDir();
    expect(() => loadConfig({}, { LEMONADE_CACHE_DIR: cacheDir, LEMONADE_PORT: "http" })).toThrow(/port/);
    expect(() => loadConfig({}, { LEMONADE_CACHE_DIR: cacheDir, LEMONADE_MAX_LOADED_MODELS: "0" })).toThrow(/max_loaded_models/);
    expect(() => loadConfig({}, { LEMONADE_CACHE_DIR: cacheDir, LEMONADE_LOG_LEVEL: "loud" })).toThrow(/log level/);
  });

  test("a corrupt config.json is reported and left untouched", () => {
    const cacheDir = tempDir();
    mkdirSync(cacheDir, { recursive: true });
    writeFileSync(join(cacheDir, "config.json"), "{port: 1}");
    expect(() => loadConfig({}, { LEMONADE_CACHE_DIR: cacheDir })).toThrow(CorruptStateFileError);
    expect(readFileSync(join(cacheDir, "config.json"), "utf8")).toBe("{port: 1}");
  });

  test("a config.json value of the wrong type stops start-up naming the file and the key", () => {
    const cacheDir = tempDir();
    mkdirSync(cacheDir, { recursive: true });
    for (const [key, value] of [["extra_models_dir", 5], ["host", 5], ["port", "80"], ["offline", "yes"]] as const) {
      writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ [key]: value }));
      let message = "";
      try {
        loadConfig({}, { LEMONADE_CACHE_DIR: cacheDir });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toContain(join(cacheDir, "config.json"));
      expect(message).toContain(`"${key}"`);
    }
  });
});

describe("the built-in catalog", () => {
  test("image models are listed with their image_defaults even where sd-server cannot be had, as Lemonade lists them", async () => {
    const bare = await startTestServer({ PATH: "/nonexistent" }, undefined, { engines: false });
    try {
      const models = (await (await fetch(`${bare.url}/v1/models?show_all=true`)).json()).data as { id: string; recipe: string; labels: string[]; recipe_options: Record<string, unknown> }[];
      const turbo = models.find((m) => m.id === "SD-Turbo");
      expect(turbo).toMatchObject({
        recipe: "sd-cpp",
        labels: expect.arrayContaining(["image"]),
        recipe_options: { steps: 4, cfg_scale: 1, width: 512, height: 512 },
        image_defaults: { steps: 4, cfg_scale: 1, width: 512, height: 512 },
      });
      // The sampler and flow shift are listed where the entry sets them, and only there.
      expect((turbo as any).image_defaults).not.toHaveProperty("sampling_method");
      expect((models.find((m) => m.id === "Qwen-Image-GGUF") as any).image_defaults).toEqual({ steps: 20, cfg_scale: 2.5, width: 512, height: 512, sampling_method: "euler", flow_shift: 3 });
      // A model that is no image model has none.
      expect(Object.keys(models.find((m) => m.id === "Qwen3-0.6B-GGUF")!)).not.toContain("image_defaults");
      // Loading one says what is missing, rather than that the model does not exist here.
      const load = await fetch(`${bare.url}/v1/load`, { method: "POST", body: JSON.stringify({ model_name: "SD-Turbo" }) });
      expect((await load.json()).code).not.toBe("model_not_supported");
    } finally {
      await bare.close();
    }
  });

  test("all 220 Lemonade models; show_all lists those this machine can run, disable_model_filtering all of them", async () => {
    const listed = async (s: { url: string }) => (await (await fetch(`${s.url}/v1/models?show_all=true`)).json()).data.map((m: any) => m.id) as string[];
    const filtered = await startTestServer({}, undefined, { engines: false });
    const cacheDir = tempDir();
    mkdirSync(cacheDir, { recursive: true });
    writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ disable_model_filtering: true }));
    const everything = await startTestServer({}, cacheDir, { engines: false });
    try {
      const some = await listed(filtered);
      expect(some).toEqual(expect.arrayContaining(["Qwen3-0.6B-GGUF", "Whisper-Tiny", "kokoro-v1"]));
      // An NPU model is filtered out here, and says so when named.
      expect(some).not.toContain("Llama-3.2-1B-Instruct-CPU");
      const npu = await fetch(`${filtered.url}/v1/models/Llama-3.2-1B-Instruct-CPU`);
      expect((await npu.json()).error.code).toBe("model_not_supported");
      const all = await listed(everything);
      expect(all).toHaveLength(220);
      expect(all).toContain("Llama-3.2-1B-Instruct-CPU");
    } finally {
      await filtered.close();
      await everything.close();
    }
  });
});
