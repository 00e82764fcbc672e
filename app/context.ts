// The composition root: builds every part of a running server from its configuration and wires
// them together. Nothing below app/ constructs another layer's parts; they are handed in here.
import { join } from "node:path";
import type { Config } from "../config/config.ts";
import { removeStaleTemps } from "../lib/json-file.ts";
import { VERSION } from "../lib/version.ts";
import { Logger } from "../observability/logger.ts";
import { Metrics, type LoadedModelInfo } from "../observability/metrics.ts";
import { GenerationStats } from "../observability/stats.ts";
import { HostStats } from "../observability/system.ts";
import { AliasStore } from "../models/aliases.ts";
import { Catalog, type CatalogModel } from "../models/catalog.ts";
import { CloudProviders } from "../models/cloud.ts";
import { DownloadManager } from "../models/downloads.ts";
import { ModelLibrary } from "../models/library.ts";
import { OptionResolver, RecipeOptionsStore } from "../models/recipe-options.ts";
import { EngineInstaller } from "../engines/installer.ts";
import { EngineRegistry } from "../engines/orphans.ts";
import { RECIPES, recipeStatuses, serverRecipes, standInOf, standInServes } from "../engines/recipes.ts";
import { RECIPE_SPECS } from "../spec/recipes.ts";
import { Backends } from "../runtime/backends.ts";
import { ExclusiveGate } from "../runtime/job-gate.ts";
import { JobEngine } from "../runtime/jobs.ts";
import type { ServerContext } from "../runtime/context.ts";
import { Launcher } from "../runtime/launcher.ts";
import { EngineProxy } from "../runtime/proxy.ts";
import { Scheduler } from "../runtime/scheduler.ts";
import { jobOps } from "../protocols/jobs.ts";
import { omniKind } from "../protocols/omni.ts";
import { routerKind } from "../protocols/routing.ts";
import { webAssets } from "./web-assets.ts";
import { memoryPlanner } from "./memory.ts";

export function createServerContext(config: Config, logger = new Logger(config.logLevel)): ServerContext {
  const recipes = serverRecipes(RECIPES);
  const engineEnv = { cacheDir: config.cacheDir, path: config.searchPath, binaries: config.binaries };
  const record = new EngineRegistry(config.cacheDir);
  const reaped = record.reapOrphans();
  if (reaped.length) logger.warn("Scheduler", `Stopped ${reaped.length} engine(s) left running by a server that was killed (pids ${reaped.join(", ")})`);
  const stale = removeStaleTemps(config.cacheDir);
  if (stale.length) logger.info("Server", `Removed ${stale.length} temp file(s) a killed server left: ${stale.join(", ")}`);

  const installer = new EngineInstaller(recipes, config.cacheDir, config.npmRegistry, {
    endpoint: config.githubEndpoint,
    ...(config.githubApiEndpoint ? { apiEndpoint: config.githubApiEndpoint } : {}),
    noFetch: () => config.noFetchExecutables,
    log: (line) => logger.info("Backends", line),
  });
  const aliases = new AliasStore(config.cacheDir);
  // Which recipes can run here is fixed for the process: installing a backend moves it from
  // installable to installed, never from unsupported.
  const supported = new Set(
    Object.entries(recipeStatuses(recipes, engineEnv))
      .filter(([, r]) => Object.values(r.backends).some((b) => b.state !== "unsupported"))
      .map(([name]) => name),
  );
  const cloud = new CloudProviders({
    cacheDir: config.cacheDir,
    env: config.cloudKeys,
    log: { info: (m) => logger.info("Cloud", m), warn: (m) => logger.warn("Cloud", m) },
  });
  const catalog = new Catalog(
    {
      cacheDir: config.cacheDir,
      hfCacheDir: config.hfCacheDir,
      msCacheDir: config.msCacheDir,
      extraModelsDir: config.extraModelsDir,
      // config.json's disable_model_filtering lists (and tries) every catalog model, as Lemonade does.
      isRecipeSupported: (recipe) => config.disableModelFiltering || supported.has(recipe) || RECIPE_SPECS[recipe]?.listedEverywhere === true,
      onWarning: (message) => logger.warn("Catalog", message),
      remote: () => cloud.catalogModels(),
    },
    aliases,
  );
  const recipeOptions = new RecipeOptionsStore(config.cacheDir);
  // The scheduler is made below; the planner only reads its slots later.
  const planner = memoryPlanner(config, catalog, () => scheduler.list());
  const options = new OptionResolver<CatalogModel>(
    recipeOptions,
    () => ({ ...config.recipeDefaults, ctx_size: config.ctxSize }),
    (m) => catalog.maxContextWindow(m),
    (m) => planner.autoCtx(m),
  );
  const hubs = {
    huggingface: { kind: "huggingface" as const, endpoint: config.hfEndpoint, token: config.hfToken ?? undefined, dir: config.hfCacheDir },
    modelscope: { kind: "modelscope" as const, endpoint: config.msEndpoint, dir: config.msCacheDir },
  };
  const downloads = new DownloadManager(hubs);
  const library = new ModelLibrary({
    catalog,
    downloads,
    hubs,
    offline: () => config.offline,
    // The scheduler is made below; the library only calls it later.
    unload: (id) => scheduler.unload(id),
    log: (message) => logger.info("Models", message),
  });
  const launcher = new Launcher({
    recipes,
    env: engineEnv,
    files: (m) => catalog.files(m),
    install: (recipe, backend) => installer.install(recipe, backend),
    record,
    log: logger,
  });
  const gate = new ExclusiveGate();
  const scheduler: Scheduler<CatalogModel> = new Scheduler<CatalogModel>({
    gate,
    effects: launcher.effects((model) => library.ensureDownloaded(model)),
    check: (model, request) => launcher.check(model, request ?? {}),
    resolve: (model, request) => options.spec(model, request),
    maxLoaded: () => config.maxLoadedModels,
    memory: (model, spec) => planner.memory(model, spec),
    log: { info: (m) => logger.info("Scheduler", m), warn: (m) => logger.warn("Scheduler", m), error: (m) => logger.error("Scheduler", m) },
  });
  const backends = new Backends(recipes, installer, scheduler, engineEnv, (m) => logger.info("Server", m));
  const metrics: Metrics = new Metrics(
    VERSION,
    (): LoadedModelInfo[] =>
      // The device as /v1/health reports it.
      scheduler.list().map((s) => ({ model: s.model.id, checkpoint: s.model.checkpoints.main ?? "", recipe: s.model.recipe, type: s.model.type, device: "cpu", url: s.engine.url, queued: proxy.queued(s) })),
    () => config.maxLoadedModels,
    () => ({ decisions: stats.routing.routing_decisions_total, switches: stats.routing.routing_switches_total }),
  );
  const stats = new GenerationStats();
  const proxy: EngineProxy = new EngineProxy({
    scheduler,
    catalog,
    metrics,
    stats,
    logger,
    hangCheckMs: config.hangCheckMs,
    pingMs: config.pingMs,
    maxQueue: () => config.maxQueue,
    cloud,
    cloudTimeoutS: () => config.globalTimeoutS,
    // A prompt is bounded by the context the engine runs with, or the one its load would use.
    contextSize: (model, loadOptions) =>
      "ctx_size" in (RECIPE_SPECS[model.recipe]?.options ?? {})
        ? (scheduler.list().find((s) => s.model.id === model.id)?.spec.ctxSize ?? options.ctxSize(model, options.resolve(model, loadOptions)))
        : undefined,
  });
  const hostStats = new HostStats();
  const jobs = new JobEngine({
    file: join(config.cacheDir, "jobs.json"),
    ops: jobOps({ aliases, backends, catalog, cloud, config, hostStats, library, options, proxy, recipeOptions, scheduler }),
    scheduler,
    gate,
    modelId: (name) => catalog.find(name)?.id,
    log: { info: (m) => logger.info("Jobs", m), warn: (m) => logger.warn("Jobs", m) },
  });
  const ctx: ServerContext = {
    config,
    version: VERSION,
    logger,
    metrics,
    stats,
    hostStats,
    aliases,
    catalog,
    cloud,
    recipeOptions,
    options,
    library,
    downloads,
    backends,
    scheduler,
    proxy,
    jobs,
    standIns: {
      of: (m, capability) => standInOf(RECIPES, m.recipe, capability),
      serving: (m, capability) => standInServes(RECIPES, engineEnv, m.recipe, capability, catalog.files(m).every((f) => f.exists)),
      run: (recipe, job, signal) => recipe.run(job, engineEnv, signal),
    },
    websocketPort: null,
    activity: { requests: 0 },
    webAssets,
    lifecycle: { rebind: () => {}, shutdown: () => {} },
  };
  // The collections' targets live with their logic, in protocols/.
  proxy.targets.add(routerKind(ctx));
  proxy.targets.add(omniKind(ctx));
  return ctx;
}
