// The recipes' pure parts: launch plans (argv), reserved flags, and option resolution.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { splitArgs } from "../../lib/args.ts";
import { EngineConfigError, NotInstalledError, type LaunchInput } from "../../engines/engine.ts";
import { llamacpp } from "../../engines/llamacpp.ts";
import { whispercpp } from "../../engines/whispercpp.ts";
import { RECIPES, findRecipe, recipeStatuses, serverRecipes, standInOf, standInServes } from "../../engines/recipes.ts";
import { espeak } from "../../engines/espeak.ts";
import { sdCli } from "../../engines/sd-cpp.ts";
import { vllm } from "../../engines/vllm.ts";
import { LOAD_FLAGS, LOAD_FLAGS_HELP, loadOptionsFrom } from "../../cli/load-flags.ts";
import { mergeSavedOptions, optionsToSave, resolvedCtxSize, resolveOptions, OptionError } from "../../models/recipe-options.ts";
import { CONFIG_SECTIONS, enginePath, OPTION_DOCS, RECIPE_DEFAULT_KEYS, RECIPE_SPECS, serves, sharedEnginePath, type Capability } from "../../spec/recipes.ts";
import { startTestServer, tempDir } from "../helpers/server.ts";
import { hasVision, needsEmbedder, needsReranker } from "../../protocols/openai.ts";
import type { CatalogModel } from "../../models/catalog.ts";

const input = (over: Partial<LaunchInput> = {}): LaunchInput => ({
  modelId: "m",
  type: "llm",
  files: { main: "/models/m.gguf" },
  options: { llamacpp_args: "" },
  ctxSize: 4096,
  workDir: "/cache/slots/m",
  ...over,
});

describe("llamacpp", () => {
  test("argv: model, loopback port, context, the server's own flags, then the user's", () => {
    const argv = llamacpp.plan!("/bin/llama-server", input({ options: { llamacpp_args: '--parallel 2 --alias "my model"' } })).argv(4321);
    expect(argv.slice(0, 9)).toEqual(["/bin/llama-server", "-m", "/models/m.gguf", "--host", "127.0.0.1", "--port", "4321", "--ctx-size", "4096"]);
    expect(argv).toContain("--jinja");
    expect(argv).toContain("--metrics");
    expect(argv.slice(argv.indexOf("--slot-save-path"), argv.indexOf("--slot-save-path") + 2)).toEqual(["--slot-save-path", "/cache/slots/m"]);
    expect(argv.slice(-4)).toEqual(["--parallel", "2", "--alias", "my model"]);
  });

  test("the model type picks the mode; a projector file is passed", () => {
    const embed = llamacpp.plan!("b", input({ type: "embedding" })).argv(1);
    expect(embed).toContain("--embeddings");
    const rerank = llamacpp.plan!("b", input({ type: "reranking" })).argv(1);
    expect(rerank).toContain("--reranking");
    const vision = llamacpp.plan!("b", input({ files: { main: "/m.gguf", mmproj: "/mmproj.gguf" } })).argv(1);
    expect(vision.slice(vision.indexOf("--mmproj"), vision.indexOf("--mmproj") + 2)).toEqual(["--mmproj", "/mmproj.gguf"]);
    expect(llamacpp.plan!("b", input()).argv(1)).not.toContain("--embeddings");
  });

  test("flags the server sets are refused in llamacpp_args, with or without =value", () => {
    for (const args of ["--port 1", "-m x.gguf", "--ctx-size=99", "--mmproj a"]) {
      expect(() => llamacpp.checkOptions({ llamacpp_args: args })).toThrow(EngineConfigError);
    }
    expect(() => llamacpp.checkOptions({ llamacpp_args: "--parallel 2 --no-mmap" })).not.toThrow();
  });

  test("flags that write outside the model's folders, break the proxy, reach the network or run tools are refused", () => {
    for (const args of ["--log-file /etc/x", "--slot-save-path /", "--api-key k", "--api-prefix=/x", "--tools all", "-hf org/m", "--rpc 10.0.0.1:50052", "--prompt-cache /tmp/p"]) {
      expect(() => llamacpp.checkOptions({ llamacpp_args: args }), args).toThrow(EngineConfigError);
    }
    expect(() => llamacpp.checkOptions({ llamacpp_args: "--log-file x" })).toThrow(/writes or reads files/);
  });

  test("locate: an unbuilt cpu backend is installable, system needs PATH, others cannot run here", () => {
    const env = { cacheDir: tempDir(), path: tempDir() };
    expect(() => llamacpp.locate!("cpu", env)).toThrow(NotInstalledError);
    expect(() => llamacpp.locate!("system", env)).toThrow(/needs llama-server on PATH/);
    const vulkan = (() => {
      try {
        llamacpp.locate!("vulkan", env);
      } catch (err) {
        return err;
      }
    })();
    expect(vulkan).toBeInstanceOf(EngineConfigError);
    expect(vulkan).not.toBeInstanceOf(NotInstalledError);
  });
});

test("whispercpp: argv with the user's flags; reserved ones refused", () => {
  const argv = whispercpp.plan!("/bin/whisper-server", input({ options: { whispercpp_args: "--threads 2" } })).argv(99);
  expect(argv).toEqual(["/bin/whisper-server", "-m", "/models/m.gguf", "--host", "127.0.0.1", "--port", "99", "--threads", "2"]);
  expect(() => whispercpp.checkOptions({ whispercpp_args: "--port 5" })).toThrow(EngineConfigError);
});

test("every registered recipe has its spec entry, and the spec names no recipe that is not registered", () => {
  expect(RECIPES.map((r) => r.name).sort()).toEqual(Object.keys(RECIPE_SPECS).sort());
  expect(findRecipe(RECIPES, "llamacpp")).toBe(llamacpp);
  for (const r of serverRecipes(RECIPES)) {
    expect(r.backendOption, r.name).toBe(RECIPE_SPECS[r.name]!.backendOption);
    if (r.backendOption) expect(RECIPE_SPECS[r.name]!.options).toHaveProperty(r.backendOption);
  }
  for (const r of RECIPES) expect(r.kind ?? "server", r.name).toBe(RECIPE_SPECS[r.name]!.kind ?? "server");
});

describe("capabilities", () => {
  const env = { cacheDir: tempDir(), path: "" };

  test("a recipe serves what it declares, at its engine path; a stand-in names a registered recipe of another kind", () => {
    expect(serves("llamacpp", "embeddings")).toBe(true);
    expect(enginePath("llamacpp", "slots")).toBe("/slots");
    expect(enginePath("whispercpp", "transcribe")).toBe("/inference");
    expect(serves("whispercpp", "embeddings")).toBe(false);
    expect(serves("sd-cpp", "upscale")).toBe(true);
    expect(() => enginePath("sd-cpp", "upscale")).toThrow();
    expect(serves("no-such-recipe", "chat")).toBe(false);
    for (const [name, spec] of Object.entries(RECIPE_SPECS)) {
      for (const by of Object.values(spec.standIns ?? {})) {
        const recipe = RECIPES.find((r) => r.name === by);
        expect(recipe?.kind, `${name} -> ${by}`).toMatch(/^(in-process|one-shot)$/);
      }
      if ((spec.kind ?? "server") !== "server") expect(Object.values(spec.capabilities).every((p) => p === true), name).toBe(true);
    }
  });

  test("recipes that serve a capability on their engines share its path (routes that forward before the model is known use it)", () => {
    const onEngines = new Set(Object.values(RECIPE_SPECS).flatMap((r) => Object.entries(r.capabilities).flatMap(([c, p]) => (typeof p === "string" ? [c as Capability] : []))));
    for (const capability of onEngines) expect(sharedEnginePath(capability)).toStartWith("/");
    expect(sharedEnginePath("rerank")).toBe("/v1/rerank");
    expect(() => sharedEnginePath("upscale")).toThrow(/no engine path/);
  });

  test("espeak-ng speaks for kokoro until Kokoros is installed and the files are there; sd-cli always upscales for sd-cpp", () => {
    expect(standInOf(RECIPES, "kokoro", "speech")).toBe(espeak);
    expect(standInServes(RECIPES, env, "kokoro", "speech", true)).toBe(true);
    expect(standInOf(RECIPES, "sd-cpp", "upscale")).toBe(sdCli);
    expect(standInServes(RECIPES, env, "sd-cpp", "upscale", true)).toBe(true);
    expect(standInOf(RECIPES, "llamacpp", "embeddings")).toBeNull();
    expect(standInServes(RECIPES, env, "llamacpp", "embeddings", true)).toBe(false);
  });

  test("Kokoros installed and the model's files there: its own engine speaks", () => {
    const bin = join(env.cacheDir, "koko");
    writeFileSync(bin, "#!/bin/sh\n", { mode: 0o755 });
    const configured = { ...env, binaries: { kokoro: { cpu: bin } } };
    expect(standInServes(RECIPES, configured, "kokoro", "speech", true)).toBe(false);
    expect(standInServes(RECIPES, configured, "kokoro", "speech", false)).toBe(true);
  });

  test("a recipe whose upstream judges its models (cloud) passes the embedder, reranker and vision checks whatever its type; a local model is judged here", () => {
    const model = (recipe: string, type: string) => ({ id: `${recipe}.m`, recipe, type, labels: [], checkpoints: {} }) as unknown as CatalogModel;
    const named = (m: CatalogModel) => m.id;
    expect(Object.entries(RECIPE_SPECS).filter(([, r]) => r.upstreamJudgesModels).map(([name]) => name)).toEqual(["cloud"]);
    const provider = model("cloud", "llm");
    expect(needsEmbedder(provider, named)).toBeNull();
    expect(needsReranker(provider, named)).toBeNull();
    expect(hasVision(provider)).toBe(true);
    const local = model("llamacpp", "llm");
    expect(needsEmbedder(local, named)?.message).toContain("not an embedding model");
    expect(needsReranker(local, named)).not.toBeNull();
    expect(hasVision(local)).toBe(false);
  });

  test("in-process and one-shot recipes are neither launched nor listed in /v1/system-info", () => {
    expect(findRecipe(RECIPES, "espeak-ng")).toBeUndefined();
    expect(Object.keys(recipeStatuses(RECIPES, env))).not.toContain("sd-cli");
    expect(Object.keys(recipeStatuses(RECIPES, env))).toContain("kokoro");
  });
});

test("config keys, CLI flags and option docs come from the recipe list", () => {
  expect(CONFIG_SECTIONS).toEqual(expect.arrayContaining(["llamacpp", "whispercpp", "sdcpp"]));
  expect(RECIPE_DEFAULT_KEYS).toMatchObject({
    "llamacpp.backend": "llamacpp_backend",
    "llamacpp.args": "llamacpp_args",
    "whispercpp.backend": "whispercpp_backend",
    "sdcpp.args": "sdcpp_args",
    "sdcpp.steps": "steps",
    "sdcpp.height": "height",
  });
  for (const spec of Object.values(RECIPE_SPECS)) {
    for (const [name, option] of Object.entries(spec.config?.options ?? {})) expect(spec.options, `${spec.config!.section}.${name}`).toHaveProperty(option);
    for (const name of Object.keys(spec.options)) expect(OPTION_DOCS[name], name).toBeString();
    if (spec.backendOption) {
      expect(LOAD_FLAGS[spec.cliFlag!]).toEqual({ type: "string" });
      expect(LOAD_FLAGS_HELP).toContain(`--${spec.cliFlag} BACKEND`);
      expect(loadOptionsFrom({ [spec.cliFlag!]: "cpu" })).toEqual({ [spec.backendOption]: "cpu" });
    }
  }
});

describe("vllm", () => {
  test("argv: `vllm serve` on the repository's folder, loopback port, served under the model's id, then the user's flags", () => {
    const plan = vllm.plan!("/usr/bin/vllm", input({ modelId: "Qwen3.5-0.8B-FP16-vLLM", files: { main: "/hf/snapshots/abc/config.json" }, options: { vllm_args: "--max-model-len 4096" } }));
    expect(plan.argv(4321)).toEqual([
      "/usr/bin/vllm", "serve", "/hf/snapshots/abc", "--host", "127.0.0.1", "--port", "4321", "--served-model-name", "Qwen3.5-0.8B-FP16-vLLM", "--max-model-len", "4096",
    ]);
    expect(plan.healthPath).toBe("/health");
    expect(() => vllm.checkOptions({ vllm_args: "--port 5" })).toThrow(EngineConfigError);
    expect(() => vllm.checkOptions({ vllm_backend: "rocm" })).toThrow(EngineConfigError);
    expect(() => vllm.locate!("system", { cacheDir: tempDir(), path: "" })).toThrow(EngineConfigError);
  });

  test("registered by its one line: /v1/system-info lists it, its catalog models are offered, its config and flags exist", async () => {
    const bin = tempDir("lemonade-vllm-bin-");
    writeFileSync(join(bin, "vllm"), "#!/bin/sh\n", { mode: 0o755 });
    expect(findRecipe(RECIPES, "vllm")).toBe(vllm);
    expect(RECIPE_DEFAULT_KEYS["vllm.args"]).toBe("vllm_args");
    expect(loadOptionsFrom({ vllm: "system" })).toEqual({ vllm_backend: "system" });
    const server = await startTestServer({ PATH: `${bin}:${process.env.PATH}` }, tempDir(), { engines: false });
    try {
      const info = await (await fetch(`${server.url}/v1/system-info`)).json();
      expect(info.recipes.vllm).toMatchObject({ default_backend: "system", backends: { system: { state: "installed", version: `system (${join(bin, "vllm")})` } } });
      const models = await (await fetch(`${server.url}/v1/models?show_all=true`)).json();
      expect(models.data.find((m: { id: string }) => m.id === "Qwen3.5-0.8B-FP16-vLLM")).toMatchObject({ recipe: "vllm" });
    } finally {
      await server.close();
    }
  });
});

test("splitArgs splits like a shell for words and quotes, without one", () => {
  expect(splitArgs(`--a 1 --b "two \\"quoted\\" words" --c 'x y'`)).toEqual(["--a", "1", "--b", 'two "quoted" words', "--c", "x y"]);
  expect(splitArgs("  ")).toEqual([]);
});

describe("options", () => {
  const layers = { saved: {}, registry: {}, config: {} };

  test("priority: request > saved > registry > config > default; a request null skips the saved layer", () => {
    const all = { request: { ctx_size: 1 }, saved: { ctx_size: 2 }, registry: { ctx_size: 3 }, config: { ctx_size: 4 } };
    expect(resolveOptions("llamacpp", all).ctx_size).toBe(1);
    expect(resolveOptions("llamacpp", { ...all, request: {} }).ctx_size).toBe(2);
    expect(resolveOptions("llamacpp", { ...all, request: { ctx_size: null } }).ctx_size).toBe(3);
    expect(resolveOptions("llamacpp", { ...all, request: { ctx_size: null }, registry: {} }).ctx_size).toBe(4);
    // lemonade.md's defaults: every option of the recipe, auto_evict unset.
    expect(resolveOptions("llamacpp", layers)).toEqual({
      ctx_size: -1,
      llamacpp_backend: "auto",
      llamacpp_args: "",
      llamacpp_device: "",
      rpc: "",
      tensor_split: "",
      merge_args: true,
      auto_evict: null,
      evict_idle_timeout: 300,
      downsize_idle_timeout: 60,
      evict_weight_factor: 1,
    });
  });

  test("a number option's -1 is Lemonade's empty value in every layer, so the next layer answers; ctx_size's -1 is the automatic size", () => {
    const request = { downsize_idle_timeout: -1, evict_idle_timeout: -1, evict_weight_factor: -1, ctx_size: -1 };
    const saved = { downsize_idle_timeout: 5, evict_weight_factor: -1, ctx_size: 2048 };
    const resolved = resolveOptions("llamacpp", { request, saved, registry: {}, config: {} });
    expect(resolved).toMatchObject({ downsize_idle_timeout: 5, evict_idle_timeout: 300, evict_weight_factor: 1, ctx_size: -1 });
  });

  test('a string option\'s "" and "auto" are Lemonade\'s empty values in a load and the saved layer; a `*_args` "" clears the flags', () => {
    const saved = { llamacpp_backend: "system", llamacpp_device: "Vulkan0", rpc: "auto", llamacpp_args: "--threads 2" };
    const request = { llamacpp_backend: "auto", llamacpp_device: "", llamacpp_args: "" };
    const resolved = resolveOptions("llamacpp", { request, saved, registry: {}, config: { llamacpp_backend: "auto" } });
    expect(resolved).toMatchObject({ llamacpp_backend: "system", llamacpp_device: "Vulkan0", rpc: "", llamacpp_args: "" });
  });

  test("merge_args puts the server-wide args first; without it the model's own replace them", () => {
    const base = { saved: { llamacpp_args: "--b" }, registry: {}, config: { llamacpp_args: "--a" } };
    expect(resolveOptions("llamacpp", base).llamacpp_args).toBe("--a --b");
    expect(resolveOptions("llamacpp", { ...base, saved: { ...base.saved, merge_args: false } }).llamacpp_args).toBe("--b");
  });

  test("ctx_size -1 is the model's trained window, capped at 32768; a size is taken as is", () => {
    expect(resolvedCtxSize({ ctx_size: -1 }, 8192)).toBe(8192);
    expect(resolvedCtxSize({ ctx_size: -1 }, 131072)).toBe(32768);
    expect(resolvedCtxSize({ ctx_size: -1 }, undefined)).toBe(4096);
    expect(resolvedCtxSize({ ctx_size: 1000 }, 8192)).toBe(1000);
  });

  test("saving: merge, clear with null or an empty value, refuse what the recipe does not take", () => {
    expect(mergeSavedOptions("llamacpp", { ctx_size: 2 }, { llamacpp_args: "--x", model_name: "m" })).toEqual({ ctx_size: 2, llamacpp_args: "--x" });
    expect(mergeSavedOptions("llamacpp", { ctx_size: 2, llamacpp_args: "--x" }, { ctx_size: null, llamacpp_args: "" })).toEqual({});
    for (const bad of [{ whispercpp_args: "x" }, { ctx_size: 0 }, { ctx_size: 1.5 }, { merge_args: "yes" }, { pinned: true }]) {
      expect(() => mergeSavedOptions("llamacpp", {}, bad)).toThrow(OptionError);
    }
    expect(optionsToSave("llamacpp", { ctx_size: 2, llamacpp_args: "--k" }, { ctx_size: 8, llamacpp_args: null, other: 1 })).toEqual({
      ctx_size: 8,
      llamacpp_args: "--k",
    });
    // Lemonade saves no empty value ("", "auto", a number's -1), `*_args` included; ctx_size's -1 is one.
    const empties = { ctx_size: -1, llamacpp_backend: "auto", llamacpp_device: "", llamacpp_args: "", evict_idle_timeout: -1 };
    expect(optionsToSave("llamacpp", { llamacpp_device: "Vulkan0", llamacpp_args: "--k" }, empties)).toEqual({ ctx_size: -1 });
  });
});
