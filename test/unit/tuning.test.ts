// Auto-tune: the profile schema, the layer merge and each value's provenance, the fallback spec,
// the launcher's fallback-once on a tuned value that fails the engine, and profile distribution.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { loadConfig } from "../../config/config.ts";
import { join } from "node:path";
import { archetypeOf, type Archetype } from "../../lib/archetype.ts";
import { OptionResolver, RecipeOptionsStore, type TuningContext } from "../../models/recipe-options.ts";
import { bundledProfiles, documentProblem, LocalTuneStore, PROFILE_MAX_AGE_MS, ProfileSource, profileFor, type LocalTune } from "../../models/tuning.ts";
import type { CatalogModel } from "../../models/catalog.ts";
import { Launcher } from "../../runtime/launcher.ts";
import { EngineConfigError, type Recipe } from "../../engines/engine.ts";
import { LLAMACPP, type Options } from "../../spec/recipes.ts";
import type { ArchetypeProfileT } from "../../spec/tuning.ts";
import { FakeClock } from "../helpers/fake-clock.ts";
import { FAKE_LLAMA_SERVER } from "../helpers/fake-engine.ts";
import { tempDir } from "../helpers/temp.ts";
import { sweep, sweepSpace, type SweepParams } from "../../lib/sweep.ts";

const CPU: Archetype = archetypeOf(JSON.parse(readFileSync(join(import.meta.dir, "..", "fixtures", "system-info", "cpu-only-box.json"), "utf8")));

const model = (id = "tiny"): CatalogModel => ({ id, recipe: LLAMACPP, type: "llm", labels: [], checkpoints: { main: "/m/tiny.gguf" }, suggested: false, source: "extra_models_dir", registryOptions: {} });

const PROFILE: ArchetypeProfileT = {
  archetype: CPU.family,
  source: "test",
  recommended_backend: { [LLAMACPP]: "vulkan" },
  backends: { [LLAMACPP]: { threads: "physical-cores", batch_size: 1024, flash_attn: "on" }, [`${LLAMACPP}:vulkan`]: { gpu_layers: 99 } },
  models: { tiny: { [LLAMACPP]: { batch_size: 256, kv_cache_type: "q8_0" } } },
};

function resolver(opts: { saved?: Options; config?: Options; enabled?: boolean; local?: LocalTune; available?: string[]; profile?: ArchetypeProfileT } = {}) {
  const store = new RecipeOptionsStore(tempDir());
  if (opts.saved) store.replace("tiny", opts.saved);
  const ctx: TuningContext = {
    enabled: () => opts.enabled ?? true,
    archetype: () => CPU,
    profile: () => opts.profile ?? PROFILE,
    localFor: (_m, _a, backend) => (opts.local && opts.local.backend === backend ? opts.local : undefined),
    resolveBackend: (_r, asked) => (asked === "auto" ? "cpu" : asked),
    available: (_r, backend) => (opts.available ?? ["cpu"]).includes(backend),
  };
  return new OptionResolver<CatalogModel>(store, () => ({ ctx_size: 4096, ...opts.config }), () => undefined, () => undefined, ctx);
}

describe("the profile schema", () => {
  test("the bundled profiles are valid, and each says where its numbers came from", () => {
    expect(documentProblem(bundledProfiles())).toBeNull();
    for (const p of bundledProfiles().profiles) expect(p.source.length, p.archetype).toBeGreaterThan(10);
  });

  test("a profile without a source, an unknown parameter or a bad KV type is refused", () => {
    const doc = (profile: unknown) => ({ schema_version: 1, version: "x", profiles: [profile] });
    expect(documentProblem(doc({ archetype: "a", backends: {} }))).toContain("source");
    expect(documentProblem(doc({ archetype: "a", source: "s", backends: { [LLAMACPP]: { turbo: true } } }))).not.toBeNull();
    expect(documentProblem(doc({ archetype: "a", source: "s", backends: { [LLAMACPP]: { kv_cache_type: "q3" } } }))).not.toBeNull();
    expect(documentProblem({ schema_version: 2, version: "x", profiles: [] })).not.toBeNull();
    expect(documentProblem(doc({ archetype: "a", source: "s", backends: { [LLAMACPP]: { threads: 4, gpu_layers: "all", flash_attn: "off" } } }))).toBeNull();
  });

  test("an exact archetype id wins over its family, a family over a wildcard", () => {
    const p = (archetype: string) => ({ archetype, source: "s", backends: {} });
    const doc = { schema_version: 1 as const, version: "1", profiles: [p("cpu-*"), p(CPU.family), p(CPU.id)] };
    expect(profileFor(doc, CPU)?.archetype).toBe(CPU.id);
    expect(profileFor({ ...doc, profiles: [p("cpu-*"), p(CPU.family)] }, CPU)?.archetype).toBe(CPU.family);
    expect(profileFor({ ...doc, profiles: [p("cpu-*"), p("cpu-avx512-*")] }, CPU)?.archetype).toBe("cpu-avx512-*");
    expect(profileFor({ ...doc, profiles: [p("nvidia-*")] }, CPU)).toBeUndefined();
  });
});

describe("the layer merge", () => {
  test("model overlay over backend defaults; physical-cores is the archetype's; each value names its layer", () => {
    const r = resolver().resolution(model());
    expect(r.tuning?.params).toEqual({
      threads: { value: CPU.cores, source: "profile" },
      batch_size: { value: 256, source: "profile_model" },
      flash_attn: { value: "on", source: "profile" },
      kv_cache_type: { value: "q8_0", source: "profile_model" },
    });
    expect(r.tuning?.args).toEqual(["-t", String(CPU.cores), "-b", "256", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0"]);
    expect(r.tuning?.profileSource).toBe("test");
    // vulkan is not installed here, so the recommendation does not apply.
    expect(r.options.llamacpp_backend).toBe("auto");
    expect(r.sources.llamacpp_backend).toBe("default");
    expect(r.sources.ctx_size).toBe("config");
  });

  test("request > saved > local overlay > profile: flags in the model's own args are that layer's and are not added again", () => {
    const local: LocalTune = { archetype: CPU.id, backend: `${LLAMACPP}:cpu`, params: { batch_size: 64, ubatch_size: 32 }, tokens_per_second: 40, tuned_at: 1 };
    const r = resolver({ saved: { llamacpp_args: "--threads 3" }, local }).resolution(model(), { tuning: { kv_cache_type: "f16", flash_attn: "off" } });
    expect(r.tuning?.params).toEqual({
      threads: { value: "3", source: "saved" },
      batch_size: { value: 64, source: "local_tune" },
      ubatch_size: { value: 32, source: "local_tune" },
      flash_attn: { value: "off", source: "request" },
      kv_cache_type: { value: "f16", source: "request" },
    });
    expect(r.tuning?.args).toEqual(["-b", "64", "-ub", "32", "-fa", "off", "-ctk", "f16", "-ctv", "f16"]);
    expect(r.tuning?.expectedTokensPerSecond).toBe(40);
    expect(r.sources.llamacpp_args).toBe("saved");
    // The request's own args replace the saved ones, and their flags are the request's.
    const req = resolver({ saved: { llamacpp_args: "--threads 3" }, local }).resolution(model(), { llamacpp_args: "-fa=off" });
    expect(req.tuning?.params.flash_attn).toEqual({ value: "off", source: "request" });
    expect(req.tuning?.params.threads).toEqual({ value: CPU.cores, source: "profile" });
    expect(req.sources.llamacpp_args).toBe("request");
  });

  test("server-wide args (config) count as the config layer", () => {
    const r = resolver({ config: { llamacpp_args: "-t 1" } }).resolution(model());
    expect(r.tuning?.params.threads).toEqual({ value: "1", source: "config" });
    expect(r.tuning?.args).not.toContain("-t");
  });

  test("a recommended backend that is installed applies, with the parameters for that backend", () => {
    const r = resolver({ available: ["cpu", "vulkan"] }).resolution(model());
    expect(r.options.llamacpp_backend).toBe("vulkan");
    expect(r.sources.llamacpp_backend).toBe("profile");
    expect(r.tuning?.backend).toBe("vulkan");
    expect(r.tuning?.params.gpu_layers).toEqual({ value: 99, source: "profile" });
    // The model overlay is by recipe, so it still applies on vulkan; the recipe-wide defaults do not.
    expect(r.tuning?.params.threads).toBeUndefined();
  });

  test("a config.json backend of auto leaves the choice to the recommended backend; a named one wins over it", () => {
    const auto = resolver({ available: ["cpu", "vulkan"], config: { llamacpp_backend: "auto" } }).resolution(model());
    expect([auto.options.llamacpp_backend, auto.sources.llamacpp_backend, auto.tuning?.backend]).toEqual(["vulkan", "profile", "vulkan"]);
    const named = resolver({ available: ["cpu", "vulkan"], config: { llamacpp_backend: "cpu" } }).resolution(model());
    expect([named.options.llamacpp_backend, named.sources.llamacpp_backend, named.tuning?.backend]).toEqual(["cpu", "config", "cpu"]);
    // With nothing recommended (vulkan not installed), the configuration's auto stands.
    const none = resolver({ config: { llamacpp_backend: "auto" } }).resolution(model());
    expect([none.options.llamacpp_backend, none.sources.llamacpp_backend]).toEqual(["auto", "config"]);
  });

  test("auto-tune off: no profile and no overlay, only the user's own flags", () => {
    const local: LocalTune = { archetype: CPU.id, backend: `${LLAMACPP}:cpu`, params: { batch_size: 64 }, tuned_at: 1 };
    const r = resolver({ enabled: false, local, saved: { llamacpp_args: "-b 8" } }).resolution(model());
    expect(r.tuning?.enabled).toBe(false);
    expect(r.tuning?.params).toEqual({ batch_size: { value: "8", source: "saved" } });
    expect(r.tuning?.args).toEqual([]);
    expect(resolver({ enabled: false }).spec(model()).fallback).toBeUndefined();
  });

  test("the fallback spec takes each auto-tuned value from the next layer down", () => {
    const local: LocalTune = { archetype: CPU.id, backend: `${LLAMACPP}:vulkan`, params: { gpu_layers: 20 }, tuned_at: 1 };
    const spec = resolver({ available: ["cpu", "vulkan"], local }).spec(model());
    expect(spec.options.llamacpp_backend).toBe("vulkan");
    expect(spec.tuning?.params.gpu_layers).toEqual({ value: 20, source: "local_tune" });
    const fb = spec.fallback!;
    // The profile's recommended backend gives way to the recipe's default (auto: cpu here) ...
    expect(fb.options.llamacpp_backend).toBe("auto");
    expect(fb.tuning?.backend).toBe("cpu");
    // ... and on cpu each auto-tuned winner gives way to the next layer's: the model overlay's
    // batch size to the backend default's; values only the profile set, to llama.cpp's own.
    expect(fb.tuning?.params).toEqual({ batch_size: { value: 1024, source: "profile" } });
    expect(fb.fallback).toBeUndefined();
  });

  test("a user's own choice is never replaced by the fallback", () => {
    const spec = resolver({ saved: { llamacpp_args: "-b 4 -t 1 -fa off -ctk f16 -ctv f16" } }).spec(model());
    expect(spec.fallback).toBeUndefined();
    expect(spec.tuning?.args).toEqual([]);
  });
});

describe("the launcher's fallback", () => {
  // A recipe on the FAKE llama-server that exits at start whenever the tuned flags set the KV type.
  const recipe: Recipe = {
    name: LLAMACPP,
    displayName: "fake",
    backendOption: "llamacpp_backend",
    status: () => ({ backends: {} }) as unknown as ReturnType<Recipe["status"]>,
    checkOptions: () => {},
    locate: (backend) => {
      if (backend === "vulkan") throw new EngineConfigError("vulkan is not here");
      return FAKE_LLAMA_SERVER;
    },
    plan: (binary, input) => ({
      argv: (port) => [process.execPath, binary, "-m", input.modelId, "--port", String(port), ...(input.tuningArgs ?? []), ...(input.tuningArgs?.includes("-ctk") ? ["--fake-exit", "3"] : [])],
      healthPath: "/health",
      readyTimeoutMs: 10_000,
      slots: 1,
    }),
  };
  const warnings: string[] = [];
  const launcher = new Launcher({
    recipes: [recipe],
    env: { cacheDir: tempDir(), path: "" },
    files: () => [{ role: "main", path: "/m/tiny.gguf", exists: true, sizeBytes: 1 }] as ReturnType<ConstructorParameters<typeof Launcher>[0]["files"]>,
    install: async () => {},
    name: (m) => m.id,
    log: { info: () => {}, warn: (_t, m) => warnings.push(m), error: () => {}, debug: () => {} },
  });
  const start = launcher.effects(async () => {}).start;
  const engines: { stop(): Promise<unknown> }[] = [];
  afterAll(async () => {
    for (const e of engines) await e.stop();
  });

  test("a tuned value that makes the engine exit is retried once with the next layer, logged", async () => {
    const spec = resolver().spec(model());
    expect(spec.tuning?.args).toContain("-ctk");
    const engine = await start(model(), spec);
    engines.push(engine);
    expect(engine.argv).not.toContain("-ctk");
    // The fallback is the next layer's batch size, not none.
    expect(engine.argv.join(" ")).toContain("-b 1024");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("kv_cache_type=q8_0 (profile_model)");
    expect(warnings[0]).toContain("falling back to the next layer");
  });

  test("a recommended backend that cannot run falls back to the default one", async () => {
    warnings.length = 0;
    const profile = { ...PROFILE, models: {}, backends: { [LLAMACPP]: { threads: 1 } } };
    // The context reports vulkan as available, but the engine refuses it at start.
    const spec = resolver({ available: ["cpu", "vulkan"], profile }).spec(model());
    expect(spec.options.llamacpp_backend).toBe("vulkan");
    const engine = await start(model(), spec);
    engines.push(engine);
    expect(engine.backend).toBe("auto");
    expect(warnings).toHaveLength(1);
  });

  test("without tuned values a failing engine fails the load as before", async () => {
    const spec = resolver({ enabled: false }).spec(model());
    await expect(start(model(), { ...spec, tuning: { ...spec.tuning!, args: ["-ctk", "f16"] } })).rejects.toThrow("Failed to load tiny");
  });
});

describe("profile distribution", () => {
  const doc = { schema_version: 1, version: "2027.1", profiles: [{ archetype: CPU.family, source: "a contribution", backends: { [LLAMACPP]: { threads: 1 } } }] };
  let served: unknown = doc;
  let hits = 0;
  const stand = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => {
      hits++;
      return Response.json(served);
    },
  });
  afterAll(() => stand.stop(true));
  const url = `http://127.0.0.1:${stand.port}/profiles.json`;
  const logs: string[] = [];
  const source = (cacheDir: string, clock: FakeClock, opts: { url?: string | null; offline?: boolean } = {}) =>
    new ProfileSource({ cacheDir, url: () => (opts.url === undefined ? url : opts.url), offline: () => opts.offline ?? false, clock, log: { info: (m) => logs.push(m), warn: (m) => logs.push(m) } });

  test("fetched from the URL, cached with its version and age, re-fetched only when stale", async () => {
    const dir = tempDir();
    const clock = new FakeClock();
    const s = source(dir, clock);
    expect(s.current().source).toBe("bundled");
    await s.refresh();
    expect(hits).toBe(1);
    expect(s.current()).toEqual({ document: doc as never, source: "cache", ageMs: 0 });
    expect(existsSync(join(dir, "tuning_profiles.json"))).toBe(true);
    await clock.advance(1000);
    expect(s.current().ageMs).toBe(1000);
    // A new process reads the cache and does not fetch while it is fresh.
    const again = source(dir, clock);
    await again.refresh();
    expect(hits).toBe(1);
    expect(again.current().document.version).toBe("2027.1");
    await clock.advance(PROFILE_MAX_AGE_MS);
    await again.refresh();
    expect(hits).toBe(2);
  });

  test("offline or no URL: nothing is fetched and the bundled set applies", async () => {
    const before = hits;
    const offline = source(tempDir(), new FakeClock(), { offline: true });
    await offline.refresh();
    const unset = source(tempDir(), new FakeClock(), { url: null });
    await unset.refresh();
    expect(hits).toBe(before);
    expect(offline.current().source).toBe("bundled");
    expect(unset.current().document).toBe(bundledProfiles());
  });

  test("a cache file that is not JSON is ignored (and fetched again), not a reason not to start", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "tuning_profiles.json"), "{nope");
    expect(source(dir, new FakeClock()).current().source).toBe("bundled");
    expect(logs.at(-1)).toContain("is not JSON");
  });

  test("an invalid document is refused and what there was stays", async () => {
    const dir = tempDir();
    const clock = new FakeClock();
    const s = source(dir, clock);
    served = { schema_version: 1, version: "bad", profiles: [{ archetype: "x", backends: {} }] };
    await s.refresh(true);
    expect(s.current().source).toBe("bundled");
    expect(logs.at(-1)).toContain("not a profile document");
    served = doc;
  });

  test("the local overlay store keeps each model's entry, and drops invalid ones on read", () => {
    const dir = tempDir();
    const store = new LocalTuneStore(dir);
    store.set("tiny", { archetype: CPU.id, backend: `${LLAMACPP}:cpu`, params: { threads: 2 }, tokens_per_second: 12, tuned_at: 5 });
    store.set("other", { archetype: CPU.id, backend: `${LLAMACPP}:cpu`, params: { threads: 0 }, tuned_at: 5 });
    const reread = new LocalTuneStore(dir);
    expect(reread.get("tiny", CPU.id, `${LLAMACPP}:cpu`)?.params).toEqual({ threads: 2 });
    expect(reread.get("tiny", "another-machine", `${LLAMACPP}:cpu`)).toBeUndefined();
    expect(reread.any("other")).toBeUndefined();
  });
});

describe("the sweep", () => {
  // A machine where one thread and a 512 batch are fastest, and a q8_0 KV cache fails without flash attention.
  const speed = (p: SweepParams) => {
    if (p.kv_cache_type === "q8_0" && p.flash_attn !== "on") throw new Error("V cache quantization requires flash_attn");
    return 100 + (p.threads === 1 ? 50 : 0) + (p.batch_size === 512 ? 20 : 0) + (p.kv_cache_type === "q8_0" ? 1 : 0);
  };
  const measure = async (p: SweepParams) => ({ tokensPerSecond: speed(p), ttftMs: 1 });

  test("keeps a value only when it is clearly faster, one parameter at a time from the best", async () => {
    const seen: number[] = [];
    const r = await sweep({ start: { threads: 2 }, space: { threads: [2, 1], batch_size: [2048, 512], kv_cache_type: ["f16", "q8_0"] }, backends: [], measure, within: () => true, onTrial: (_t, i) => seen.push(i) });
    expect(r.baseline.tokensPerSecond).toBe(100);
    // q8_0 is tried with flash attention on, and 1% faster is noise: the best stays without it.
    expect(r.best.params).toEqual({ threads: 1, batch_size: 512 });
    expect(r.trials.map((t) => t.params)).toContainEqual({ threads: 1, batch_size: 512, kv_cache_type: "q8_0", flash_attn: "on" });
    expect(r.trials.every((t) => !t.error)).toBe(true);
    expect(seen).toEqual(r.trials.map((_t, i) => i + 1));
    expect(r.exhausted).toBe(false);
  });

  test("no trial starts once the time is up; a failing candidate is recorded and passed over", async () => {
    let left = 2;
    const r = await sweep({
      start: {},
      space: { threads: [1, 3], batch_size: [512] },
      backends: [],
      measure: async (p) => {
        if (p.threads === 3) throw new Error("boom\nmore");
        return measure(p);
      },
      within: () => left-- > 0,
    });
    expect(r.trials).toHaveLength(3);
    expect(r.trials[2]!.error).toBe("boom");
    expect(r.best.params).toEqual({ threads: 1 });
    expect(r.exhausted).toBe(true);
  });

  test("several installed backends are compared first", async () => {
    const r = await sweep({ start: {}, space: {}, backends: ["cpu", "vulkan"], measure: async (_p, b) => ({ tokensPerSecond: b === "vulkan" ? 300 : 100, ttftMs: 1 }), within: () => true });
    expect(r.best.backend).toBe("vulkan");
  });

  test("the space: GPU layers and larger batches only where there is a GPU", () => {
    expect(sweepSpace({ accelerator: "cpu", cores: 8 }, 16)).toMatchObject({ threads: [8, 16, 4], batch_size: [2048, 512] });
    expect(sweepSpace({ accelerator: "cpu", cores: 2 }, 2).gpu_layers).toBeUndefined();
    expect(sweepSpace({ accelerator: "nvidia", cores: 16 }, 32).gpu_layers).toEqual(["all", 0]);
  });
});

describe("the auto-tune settings", () => {
  test("on by default; off by config.json's auto_tune or LEMONADE_AUTO_TUNE; the profiles URL from either", () => {
    const dir = tempDir();
    expect(loadConfig({ cacheDir: dir }, {})).toMatchObject({ autoTune: true, autoTuneProfilesUrl: null });
    expect(loadConfig({ cacheDir: dir }, { LEMONADE_AUTO_TUNE: "off" }).autoTune).toBe(false);
    writeFileSync(join(dir, "config.json"), JSON.stringify({ auto_tune: false, auto_tune_profiles_url: "http://127.0.0.1:1/p.json" }));
    expect(loadConfig({ cacheDir: dir }, {})).toMatchObject({ autoTune: false, autoTuneProfilesUrl: "http://127.0.0.1:1/p.json" });
    expect(loadConfig({ cacheDir: dir }, { LEMONADE_AUTO_TUNE: "1" }).autoTune).toBe(true);
    writeFileSync(join(dir, "config.json"), JSON.stringify({ auto_tune: "no" }));
    expect(() => loadConfig({ cacheDir: dir }, {})).toThrow('"auto_tune" must be a boolean');
  });
});
