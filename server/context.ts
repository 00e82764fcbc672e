// Everything a running server holds, built once from its configuration and handed to the routes.
import type { Config } from "./config.ts";
import { Logger } from "./logger.ts";
import { Metrics } from "./metrics.ts";
import { HostStats } from "./system.ts";
import { VERSION } from "./version.ts";
import { Router } from "./router.ts";
import { GenerationStats } from "./stats.ts";
import { installModel } from "./pull.ts";
import { AliasStore } from "../models/aliases.ts";
import { Catalog } from "../models/catalog.ts";
import { RecipeOptionsStore } from "../models/recipe-options.ts";
import { DownloadManager } from "../models/downloads.ts";
import { recipeStatuses } from "../engines/recipes.ts";
import { EngineInstaller } from "../engines/installer.ts";

export interface ServerContext {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  aliases: AliasStore;
  catalog: Catalog;
  recipeOptions: RecipeOptionsStore;
  router: Router;
  installer: EngineInstaller;
  stats: GenerationStats;
  downloads: DownloadManager;
  /** Models the last update check found a newer commit for. */
  updatesAvailable: Set<string>;
  hostStats: HostStats;
  version: string;
  /** The port the WebSocket APIs answer on, once listening. */
  websocketPort: number | null;
}

export function createServerContext(config: Config, logger = new Logger(config.logLevel)): ServerContext {
  const aliases = new AliasStore(config.cacheDir);
  // Which recipes can run here is fixed for the process: installing a backend moves it from
  // installable to installed, never from unsupported.
  const statuses = recipeStatuses(config.cacheDir);
  const supported = new Set(
    Object.entries(statuses)
      .filter(([, r]) => Object.values(r.backends).some((b) => b.state !== "unsupported"))
      .map(([name]) => name),
  );
  const catalog = new Catalog(
    {
      cacheDir: config.cacheDir,
      hfCacheDir: config.hfCacheDir,
      extraModelsDir: config.extraModelsDir,
      isRecipeSupported: (recipe) => supported.has(recipe),
      onWarning: (message) => logger.warn("Catalog", message),
    },
    aliases,
  );
  const recipeOptions = new RecipeOptionsStore(config.cacheDir);
  const router = new Router(config, catalog, recipeOptions, logger);
  const loaded = () =>
    router.list().map((s) => ({ model: s.model.id, recipe: s.model.recipe, type: s.model.type, url: s.engine.url }));
  const ctx: ServerContext = {
    config,
    logger,
    metrics: new Metrics(VERSION, loaded),
    aliases,
    catalog,
    recipeOptions,
    router,
    installer: new EngineInstaller(config.cacheDir, config.npmRegistry),
    stats: new GenerationStats(),
    downloads: new DownloadManager({ endpoint: config.hfEndpoint, token: config.hfToken ?? undefined }, config.hfCacheDir),
    updatesAvailable: new Set(),
    hostStats: new HostStats(),
    version: VERSION,
    websocketPort: null,
  };
  // A model that is not downloaded is fetched when a request or /v1/load first needs it.
  router.prepare = (model) => installModel(ctx, model);
  // An engine that is not built yet is built the first time a model needs it.
  router.installEngine = async (recipe, backend) => {
    await ctx.installer.install(recipe, backend);
  };
  return ctx;
}
