// The composition root: builds every part of a running server from its configuration and wires
// them together. Nothing below app/ constructs another layer's parts; they are handed in here.
import { join } from "node:path";
import type { Config } from "../config/config.ts";
import { removeStaleTemps } from "../lib/json-file.ts";
import { VERSION } from "../lib/version.ts";
import { Logger } from "../observability/logger.ts";
import { SpanBus } from "../observability/span-bus.ts";
import { Metrics, type LoadedModelInfo } from "../observability/metrics.ts";
import { GenerationStats, modelIdentity } from "../observability/stats.ts";
import { Telemetry, telemetrySettings } from "../observability/telemetry.ts";
import { effectiveSettings } from "../config/settings.ts";
import { AliasStore } from "../models/aliases.ts";
import { Catalog, type CatalogModel } from "../models/catalog.ts";
import { CloudProviders } from "../models/cloud.ts";
import { DownloadManager } from "../models/downloads.ts";
import { ModelLibrary } from "../models/library.ts";
import { OptionResolver, RecipeOptionsStore } from "../models/recipe-options.ts";
import { AutoTune, LocalTuneStore, ProfileSource } from "../models/tuning.ts";
import { archetypeOf, type Archetype } from "../lib/archetype.ts";
import { devices, gpuMemoryUse } from "../lib/devices.ts";
import { systemClock } from "../lib/clock.ts";
import { HostStats, hostFacts } from "../observability/system.ts";
import { EngineInstaller } from "../engines/installer.ts";
import { EngineRegistry } from "../engines/orphans.ts";
import { engineCall, findRecipe, RECIPES, recipeStatuses, serverRecipes, standInOf, standInServes } from "../engines/recipes.ts";
import { RECIPE_SPECS } from "../spec/recipes.ts";
import { Backends } from "../runtime/backends.ts";
import { eraseSlots } from "../runtime/downsize.ts";
import { ExclusiveGate } from "../runtime/job-gate.ts";
import { JobEngine } from "../runtime/jobs.ts";
import { KvCache } from "../runtime/kv-cache.ts";
import type { ServerContext } from "../runtime/context.ts";
import { Launcher } from "../runtime/launcher.ts";
import { EngineProxy } from "../runtime/proxy.ts";
import { Scheduler } from "../runtime/scheduler.ts";
import { jobOps } from "../protocols/jobs.ts";
import { omniKind } from "../protocols/omni.ts";
import { routerKind } from "../protocols/routing.ts";
import { webAsset } from "./web-assets.ts";
import { memoryPlanner } from "./memory.ts";
import { RpcWorkers } from "../runtime/rpc-workers.ts";
import { memoInBuild } from "../lib/build-scope.ts";

export function createServerContext(config: Config, logger = new Logger(config.logLevel)): ServerContext {
  const recipes = serverRecipes(RECIPES);
  const rpc = { workers: config.rpcWorkers, secret: config.rpcSecret, timeoutMs: config.rpcTimeoutMs };
  const engineEnv = { cacheDir: config.cacheDir, path: config.searchPath, binaries: config.binaries, rpc };
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
  // installable to installed, never from unsupported. Worked out when a listing or a load first
  // asks: it probes the hardware (/proc/cpuinfo, nvidia-smi, the Vulkan loader), which start-up
  // and an idle server need not pay for.
  let statuses: ReturnType<typeof recipeStatuses> | undefined;
  let supported: Set<string> | undefined;
  const statusesNow = () => (statuses ??= recipeStatuses(recipes, engineEnv));
  const isSupported = (recipe: string) =>
    (supported ??= new Set(
      Object.entries(statusesNow())
        .filter(([, r]) => Object.values(r.backends).some((b) => b.state !== "unsupported"))
        .map(([name]) => name),
    )).has(recipe);
  // What a filtered-out model's error says: its recipe's first backend's reason, as a sentence.
  const unsupportedReason = (recipe: string) => {
    const message = Object.values(statusesNow()[recipe]?.backends ?? {}).find((b) => b.message)?.message ?? "";
    return message && !/[.!]$/.test(message) ? `${message}.` : message;
  };
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
      isRecipeSupported: (recipe) => config.disableModelFiltering || isSupported(recipe) || RECIPE_SPECS[recipe]?.listedEverywhere === true,
      unsupportedReason,
      onWarning: (message) => logger.warn("Catalog", message),
      remote: () => cloud.catalogModels(),
    },
    aliases,
  );
  const recipeOptions = new RecipeOptionsStore(config.cacheDir, {
    isBuiltIn: (name) => catalog.isBuiltIn(name),
    log: { info: (m) => logger.info("Models", m), warn: (m) => logger.warn("Models", m) },
  });
  // The scheduler is made below; the planner only reads its slots later.
  const rpcWorkers = new RpcWorkers(rpc, systemClock);
  const planner = memoryPlanner(config, catalog, () => scheduler.list(), (option) => rpcWorkers.freeBytes(option));
  const [resolvedBackends, availableBackends] = [Symbol("resolveBackend"), Symbol("available")];
  // The archetype comes from the same facts /v1/system-info reports, derived once per process.
  let archetype: Archetype | undefined;
  const tuning = new AutoTune({
    enabled: () => config.autoTune,
    archetype: () => (archetype ??= archetypeOf(hostFacts(devices()))),
    profiles: new ProfileSource({
      cacheDir: config.cacheDir,
      url: () => config.autoTuneProfilesUrl,
      offline: () => config.offline,
      clock: systemClock,
      log: { info: (m) => logger.info("AutoTune", m), warn: (m) => logger.warn("AutoTune", m) },
    }),
    local: new LocalTuneStore(config.cacheDir),
    // A listing resolves every model's backend: `auto` looks at each GPU backend's install and
    // pins, the same answer per recipe, worked out once per build (lib/build-scope.ts).
    resolveBackend: (recipe, asked) => memoInBuild(resolvedBackends, `${recipe}\0${asked}`, () => findRecipe(recipes, recipe)?.resolveBackend?.(asked, engineEnv) ?? asked),
    available: (recipe, backend) =>
      memoInBuild(availableBackends, `${recipe}\0${backend}`, () => {
        try {
          return !!findRecipe(recipes, recipe)?.locate?.(backend, engineEnv);
        } catch {
          return false;
        }
      }),
  });
  void tuning.profiles.refresh();
  const options = new OptionResolver<CatalogModel>(
    recipeOptions,
    () => ({ ...config.recipeDefaults, ctx_size: config.ctxSize }),
    (m) => catalog.maxContextWindow(m),
    (m) => planner.autoCtx(m),
    tuning,
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
    // The scheduler and the proxy are made below; the library only calls them later.
    unload: async (id) => proxy.unloadCloud(id) || (await scheduler.unload(id)),
    log: (message) => logger.info("Models", message),
  });
  const launcher = new Launcher({
    recipes,
    env: engineEnv,
    files: (m) => catalog.files(m),
    install: (recipe, backend) => installer.install(recipe, backend),
    record,
    name: (m) => catalog.publicId(m),
    log: logger,
  });
  const kvCache = new KvCache({
    settings: () => config.kvCache,
    dir: (id) => launcher.workDir(id),
    root: launcher.slotsRoot,
    files: (m) => catalog.files(m),
    name: (m) => catalog.publicId(m),
    log: logger,
  });
  const stats = new GenerationStats();
  const effects = launcher.effects((model) => library.ensureDownloaded(model), (instance) => kvCache.save(instance));
  const gate = new ExclusiveGate();
  const scheduler: Scheduler<CatalogModel> = new Scheduler<CatalogModel>({
    gate,
    // The speed monitor judges an engine by its own requests: a new load starts a new record.
    effects: {
      ...effects,
      downsize: (instance, signal) => eraseSlots(instance, signal),
      start: (model, spec) => {
        stats.forgetSpeeds(model.id);
        return effects.start(model, spec);
      },
    },
    check: (model, request) => launcher.check(model, request ?? {}),
    resolve: (model, request) => options.spec(model, request),
    maxLoaded: () => config.maxLoadedModels,
    memory: (model, spec) => planner.memory(model, spec),
    // The multi-model guide's monitor: GPU memory is read only while the server-wide auto_evict is on.
    pressure: { enabled: () => config.recipeDefaults.auto_evict === true, threshold: () => config.autoEvictThresholdPct, sample: () => gpuMemoryUse(), everyMs: 2000 },
    log: { info: (m) => logger.info("Scheduler", m), warn: (m) => logger.warn("Scheduler", m), error: (m) => logger.error("Scheduler", m) },
    name: (m) => catalog.publicId(m),
  });
  const backends = new Backends(recipes, installer, scheduler, engineEnv, (m) => logger.info("Server", m));
  // A CPU window per reader (observability/system.ts HostStats): /v1/system-stats, /metrics, jobs.
  const hostStats = new HostStats(systemClock);
  const scrapeHostStats = new HostStats(systemClock);
  const metrics: Metrics = new Metrics(VERSION, {
    loaded: (): LoadedModelInfo[] => scheduler.list().map((s) => ({ identity: modelIdentity(s.model), url: s.engine.url, queued: proxy.queued(s) })),
    maxLoaded: () => config.maxLoadedModels,
    stats,
    pools: () => cloud.names().flatMap((provider) => proxy.pools.of(provider)?.health().map((m) => ({ provider, member: m.url, up: m.state === "up", inFlight: m.in_flight })) ?? []),
    host: () => scrapeHostStats.read(),
    publicId: (id) => catalog.publicIdOf(id),
  });
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
    engineCall: (recipe, capability) => engineCall(RECIPES, recipe, capability),
    beforeSend: (lease, req) => kvCache.restore(lease, req.path, req.body),
    // A prompt is bounded by the context the engine runs with, or the one its load would use.
    contextSize: (model, loadOptions) =>
      "ctx_size" in (RECIPE_SPECS[model.recipe]?.options ?? {})
        ? (scheduler.list().find((s) => s.model.id === model.id)?.spec.ctxSize ?? options.ctxSize(model, options.resolve(model, loadOptions)))
        : undefined,
  });
  const spans = new SpanBus();
  const telemetry = new Telemetry({ version: VERSION, logger, spans });
  telemetry.configure(telemetrySettings(effectiveSettings(config).telemetry));
  const jobs = new JobEngine({
    file: join(config.cacheDir, "jobs.json"),
    ops: jobOps({ aliases, backends, catalog, cloud, config, hostStats: new HostStats(systemClock), library, options, proxy, recipeOptions, rpcWorkers, scheduler, tuning }),
    scheduler,
    gate,
    modelId: (name) => catalog.find(name)?.id,
    publicId: (id) => catalog.publicIdOf(id),
    log: { info: (m) => logger.info("Jobs", m), warn: (m) => logger.warn("Jobs", m) },
  });
  const ctx: ServerContext = {
    config,
    version: VERSION,
    logger,
    metrics,
    stats,
    hostStats,
    telemetry,
    aliases,
    catalog,
    cloud,
    recipeOptions,
    options,
    tuning,
    library,
    downloads,
    backends,
    scheduler,
    proxy,
    jobs,
    spans,
    kvCache,
    rpcWorkers,
    standIns: {
      of: (m, capability) => standInOf(RECIPES, m.recipe, capability),
      serving: (m, capability) => standInServes(RECIPES, engineEnv, m.recipe, capability, catalog.files(m).every((f) => f.exists)),
      run: (recipe, job, signal) => recipe.run(job, engineEnv, signal),
    },
    websocketPort: null,
    activity: { requests: 0 },
    webAsset,
    lifecycle: { rebind: () => {}, shutdown: () => {} },
  };
  // The collections' targets live with their logic, in protocols/.
  proxy.targets.add(routerKind(ctx));
  proxy.targets.add(omniKind(ctx));
  return ctx;
}
