// Turns a catalog model and its resolved options into a running engine, through the recipe
// interface alone: check the options, find the files, locate (or install) the backend's binary,
// ask the recipe for its launch plan, spawn it. `effects` is how the scheduler acts on the world
// in production: these engine processes and the system clock.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ApiError } from "../lib/api-error.ts";
import { systemClock } from "../lib/clock.ts";
import { scrubPaths } from "../lib/scrub.ts";
import { E } from "../spec/errors.ts";
import type { CatalogModel, ResolvedFile } from "../models/catalog.ts";
import { validateRequestOptions, type LoadSpec } from "../models/recipe-options.ts";
import { EngineConfigError, EngineStartError, NotInstalledError, type EngineEnv, type Recipe, type RunningEngine } from "../engines/engine.ts";
import { findRecipe } from "../engines/recipes.ts";
import { RpcWorkerError } from "../engines/rpc-address.ts";
import { startEngine, type SpawnRecord } from "../engines/process.ts";
import type { SchedulerEffects } from "./scheduler.ts";

export interface LauncherDeps {
  recipes: readonly Recipe[];
  env: EngineEnv;
  /** Where a model's files are (the catalog's answer). */
  files(model: CatalogModel): ResolvedFile[];
  /** Installs a backend the first time a model needs it. */
  install(recipe: string, backend: string): Promise<unknown>;
  record?: SpawnRecord;
  /** How log lines and error messages name a model: the id the API lists it by. */
  name(model: CatalogModel): string;
  log: { info(tag: string, message: string): void; warn(tag: string, message: string): void; error(tag: string, message: string): void; debug(tag: string, message: string): void };
}

/** Downloaded files by role (`main`, `mmproj`, ...), as an engine takes them. */
const byRole = (files: ResolvedFile[]) => Object.fromEntries(files.map((f) => [f.role, f.path!]));

export class Launcher {
  constructor(private readonly deps: LauncherDeps) {}

  private recipeOf(model: CatalogModel): Recipe | undefined {
    return findRecipe(this.deps.recipes, model.recipe);
  }

  /** Refuses request options that would fail the load (wrong type, reserved flag) with a 400. */
  check(model: CatalogModel, options: Record<string, unknown>): void {
    try {
      validateRequestOptions(model.recipe, options);
      this.recipeOf(model)?.checkOptions(options);
    } catch (err) {
      if (err instanceof EngineConfigError) throw ApiError.of(E.invalidArgument, err.message);
      throw err;
    }
  }

  /** Refuses a downloaded model its engine cannot serve, as its load would fail, before the
   * scheduler makes room for it. */
  checkFiles(model: CatalogModel): void {
    const recipe = this.recipeOf(model);
    const files = this.deps.files(model);
    if (!recipe?.checkFiles || files.some((f) => !f.exists)) return;
    try {
      recipe.checkFiles(byRole(files));
    } catch (err) {
      if (!(err instanceof EngineConfigError)) throw err;
      this.loadFailed(model, err);
    }
  }

  /** A load the engine refused: logged in full, answered with the paths scrubbed. */
  private loadFailed(model: CatalogModel, err: Error): never {
    this.deps.log.error("Scheduler", `Failed to load ${this.deps.name(model)}: ${err.message}`);
    const reason = scrubPaths(err.message);
    throw ApiError.of(E.modelLoadError, `Failed to load ${this.deps.name(model)}: ${reason}`).with({ reason });
  }

  /** The folder every model's slot folder is in. */
  get slotsRoot(): string {
    return join(this.deps.env.cacheDir, "slots");
  }

  /** The folder a model's saved slot files live in (created on demand): the engine's work folder. */
  workDir(modelId: string): string {
    const dir = join(this.slotsRoot, modelId.replace(/[^A-Za-z0-9._-]/g, "_"));
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** The scheduler's effects: `download` fetches a model's files, which are then checked before
   * the scheduler makes room; engines are processes; time is the system's; `save` keeps an evicted
   * engine's recent conversations (runtime/kv-cache.ts) before it stops. */
  effects(download: (model: CatalogModel) => Promise<unknown>, save?: SchedulerEffects<CatalogModel>["save"]): SchedulerEffects<CatalogModel> {
    return {
      ...(save ? { save } : {}),
      prepare: async (model) => {
        await download(model);
        this.checkFiles(model);
      },
      precheck: (model, spec) => this.precheck(model, spec),
      start: (model, spec) => this.launchOrFallBack(model, spec),
      clock: systemClock,
    };
  }

  private async precheck(model: CatalogModel, spec: LoadSpec): Promise<void> {
    try {
      await this.recipeOf(model)?.precheck?.(spec.options, this.deps.env);
    } catch (err) {
      if (err instanceof RpcWorkerError) this.workerFailed(model, err);
      if (err instanceof EngineConfigError) this.loadFailed(model, err);
      throw err;
    }
  }

  /** A worker missing, refusing or of another version: the load may succeed once it answers. */
  private workerFailed(model: CatalogModel, err: RpcWorkerError): never {
    this.deps.log.error("Scheduler", `Failed to load ${this.deps.name(model)}: ${err.message}`);
    throw ApiError.of(E.rpcWorkerUnavailable, `Failed to load ${this.deps.name(model)}: ${err.message}`);
  }

  /** A load whose auto-tuned values make the engine fail (refused, or exiting before it is ready)
   * is started once more with each of those values taken from the next layer down, logged; a
   * tuned value never fails a load the untuned one would not. */
  private async launchOrFallBack(model: CatalogModel, spec: LoadSpec): Promise<RunningEngine> {
    if (!spec.fallback) return this.launch(model, spec);
    try {
      return await this.launch(model, spec, true);
    } catch (err) {
      if (!(err instanceof EngineConfigError || err instanceof EngineStartError)) throw err;
      const tuned = Object.entries(spec.tuning?.params ?? {})
        .filter(([, p]) => p.source === "local_tune" || p.source === "profile_model" || p.source === "profile")
        .map(([k, p]) => `${k}=${p.value} (${p.source})`);
      this.deps.log.warn(
        "Scheduler",
        `${this.deps.name(model)} failed to start with auto-tuned values [${tuned.join(", ") || spec.tuning?.backend}]: ${err.message.split("\n")[0]}; falling back to the next layer`,
      );
      return this.launch(model, spec.fallback);
    }
  }

  /** Starts the engine; `rethrow` hands engine failures back instead of answering them as a failed load. */
  private async launch(model: CatalogModel, spec: LoadSpec, rethrow = false): Promise<RunningEngine> {
    const recipe = this.recipeOf(model);
    if (!recipe?.locate || !recipe.plan) {
      throw ApiError.of(E.modelLoadError, `${this.deps.name(model)} needs the ${model.recipe} engine, which this server does not run`);
    }
    const files = this.deps.files(model);
    const missing = files.filter((f) => !f.exists).map((f) => f.role);
    if (missing.length) throw ApiError.of(E.modelLoadError, `${this.deps.name(model)} is not downloaded (missing: ${missing.join(", ")})`);
    const asked = String(spec.options[recipe.backendOption ?? ""] ?? "");
    const started = performance.now();
    try {
      const backend = recipe.resolveBackend?.(asked, this.deps.env) ?? asked;
      const binary = await this.binary(recipe, backend);
      const ctx = "ctx_size" in spec.options ? `, ctx ${spec.ctxSize}` : "";
      const which = !asked || asked === backend ? backend : `${asked}: ${backend}`;
      this.deps.log.info("Scheduler", `Loading ${this.deps.name(model)} on ${recipe.displayName} (${which}${ctx})`);
      const plan = recipe.plan(binary, {
        modelId: model.id,
        type: model.type,
        files: byRole(files),
        options: recipe.backendOption ? { ...spec.options, [recipe.backendOption]: backend } : spec.options,
        ctxSize: spec.ctxSize,
        workDir: this.workDir(model.id),
        ...(spec.tuning?.args.length ? { tuningArgs: spec.tuning.args } : {}),
        ...(this.deps.env.rpc ? { rpc: this.deps.env.rpc } : {}),
      });
      const tag = `${model.recipe}:${this.deps.name(model)}`;
      const engine = await startEngine({ ...plan, backend }, (line) => this.deps.log.debug(tag, line), this.deps.record);
      this.deps.log.info("Scheduler", `Loaded ${this.deps.name(model)} in ${Math.round(performance.now() - started)} ms (pid ${engine.pid}, ${engine.url})`);
      return engine;
    } catch (err) {
      if (err instanceof RpcWorkerError) this.workerFailed(model, err);
      if (!rethrow && (err instanceof EngineConfigError || err instanceof EngineStartError)) this.loadFailed(model, err);
      throw err;
    }
  }

  /** The engine binary, built on demand when the backend is installable but not installed yet. */
  private async binary(recipe: Recipe, backend: string): Promise<string> {
    const locate = () => recipe.locate!(backend, this.deps.env);
    try {
      return locate();
    } catch (err) {
      if (!(err instanceof NotInstalledError)) throw err;
      this.deps.log.info("Scheduler", `${recipe.name}:${backend} is not installed yet; building it now (a few minutes)`);
      try {
        await this.deps.install(recipe.name, backend);
      } catch (buildErr) {
        throw new EngineConfigError(
          `${recipe.name}:${backend} is not installed and building it failed (${(buildErr as Error).message.split("\n")[0]}); install it with: lemonade backends install ${recipe.name}:${backend}`,
        );
      }
      return locate();
    }
  }
}
