// Lemonade's operational routes: liveness, health, system info/stats, metrics and aliases.
import type { Elysia } from "elysia";
import { bind } from "./bind.ts";
import { lemonade as spec } from "../spec/index.ts";
import { E } from "../spec/errors.ts";
import { ApiError } from "../server/errors.ts";
import { hostInfo } from "../server/system.ts";
import type { ServerContext } from "../server/context.ts";
import { recipeStatuses } from "../engines/recipes.ts";
import { MODEL_TYPES, type Slot } from "../server/router.ts";
import { sseResponse } from "../server/sse.ts";
import { InstallError } from "../engines/installer.ts";
import { checkUpdates, deleteModel, installModel, modelForPull, pullVariants, refuseOffline, registrySearch } from "../server/pull.ts";

/** Maps installer failures onto the documented codes. */
async function installing<T>(work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof InstallError) throw new ApiError(400, "unsupported_backend", err.message);
    if (err instanceof ApiError) throw err;
    throw new ApiError(500, "install_failed", `Install failed: ${(err as Error).message}`);
  }
}

const perType = (value: (type: string) => number) => Object.fromEntries(MODEL_TYPES.map((t) => [t, value(t)]));

/** Recipe option keys the load request carries (everything but the load's own fields). */
function requestOptions(body: Record<string, unknown>): Record<string, unknown> {
  const { model_name: _name, pinned: _pinned, save_options: _save, ...options } = body;
  return options;
}

function healthEntry(slot: Slot, loading: boolean) {
  return {
    model_name: slot.model.id,
    checkpoint: slot.model.checkpoints.main ?? "",
    last_use: slot.lastUse / 1000,
    type: slot.model.type,
    device: "cpu",
    pinned: slot.pinned,
    is_busy: slot.inflight > 0 || loading,
    is_streaming: slot.streaming > 0,
    recipe: slot.model.recipe,
    pid: slot.engine.process.pid,
    recipe_options: { ...slot.options, ctx_size: slot.ctxSize },
    backend_url: `${slot.engine.url}/v1`,
  };
}

export function lemonadeRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  bind(app, spec.live, () => ({ status: "ok" }));

  bind(app, spec.load, async ({ body }) => {
    const slot = await ctx.router.load(body.model_name, {
      options: requestOptions(body),
      pinned: body.pinned,
      saveOptions: body.save_options === true,
    });
    return { status: "success", message: `Loaded model: ${slot.model.id}` };
  });

  bind(app, spec.unload, async ({ body }) => {
    const name: string | undefined = body?.model_name;
    if (!(await ctx.router.unload(name))) {
      throw new ApiError(404, "model_not_loaded", `Model not loaded: ${name}`);
    }
    return { status: "success", message: name ? `Model unloaded successfully: ${name}` : "All models unloaded successfully" };
  });

  bind(app, spec.pull, async ({ body }) => {
    if (body.stream === true && body.subscribe === false) {
      refuseOffline(ctx);
      const model = modelForPull(ctx, body);
      if (model.source !== "huggingface") return { status: "success", message: `${model.id} is local; nothing to download` };
      return ctx.downloads.startJob(model);
    }
    const model = modelForPull(ctx, body);
    if (body.stream !== true) {
      await installModel(ctx, model);
      return { status: "success", message: `Installed model: ${model.id}` };
    }
    refuseOffline(ctx);
    return sseResponse(async (send) => {
      await installModel(ctx, model, (p) => send("progress", p));
      send("complete", { model_name: model.id, percent: 100 });
    });
  });

  bind(app, spec.register, ({ body }) => {
    const model = modelForPull(ctx, body);
    return { status: "success", message: `Registered model: ${model.id}` };
  });

  bind(app, spec.pullVariants, ({ query }) => pullVariants(ctx, query.checkpoint));

  bind(app, spec.checkUpdates, async () => {
    const models = await checkUpdates(ctx);
    return { status: "success", updates_available: models.length, models };
  });

  bind(app, spec.registrySearch, async ({ query }) => {
    const text = String(query.query ?? query.q ?? "").trim();
    if (text.length < 3) throw new ApiError(400, "invalid_argument", "'query' must be at least 3 characters", "query");
    const source = query.source ?? "huggingface";
    if (source !== "huggingface" && source !== "hf") {
      throw new ApiError(400, "invalid_argument", `source '${source}' is not supported (use huggingface)`, "source");
    }
    const found = await registrySearch(ctx, text, query.limit ?? 12, query.format === "gguf");
    return { query: text, source: "huggingface", ...(query.format === "gguf" ? { format: "gguf" } : {}), ...found };
  });

  bind(app, spec.downloads, () => ({ downloads: ctx.downloads.list() }));

  bind(app, spec.downloadsControl, async ({ body }) => {
    const known = ctx.downloads.get(body.id) !== undefined;
    const snapshot = await ctx.downloads.control(body.id, body.action);
    if (body.action === "remove") return known ? { status: "ok" } : { status: "ok", missing: true };
    if (!snapshot) throw new ApiError(404, "download_not_found", `No download job ${body.id}`);
    return snapshot;
  });

  bind(app, spec.deleteModel, async ({ body }) => {
    const model = await deleteModel(ctx, body.model_name);
    return { status: "success", message: `Deleted model: ${model.id}` };
  });

  bind(app, spec.install, async ({ body }) => {
    const { recipe, backend } = body;
    const result = { status: "success", recipe, backend };
    const run = (progress?: (phase: string, percent: number) => void) =>
      installing(async () => {
        ctx.logger.info("Server", `Installing ${recipe}:${backend}`);
        const binary = await ctx.installer.install(recipe, backend, progress);
        ctx.logger.info("Server", `Installed ${recipe}:${backend} at ${binary}`);
      });
    if (body.stream !== true) {
      await run();
      return result;
    }
    // Refuse an unknown pair with a plain 400 before the event stream starts.
    await installing(() => ctx.installer.isInstalled(recipe, backend));
    return sseResponse(async (send) => {
      await run((phase, percent) => send("progress", { phase, percent }));
      send("complete", { recipe, backend, percent: 100 });
    });
  });

  bind(app, spec.uninstall, async ({ body }) => {
    const { recipe, backend } = body;
    if (!(await installing(() => ctx.installer.isInstalled(recipe, backend)))) {
      throw new ApiError(404, "not_installed", `${recipe}:${backend} is not installed`);
    }
    const unloaded = await ctx.router.unloadWhere(
      (s) => s.model.recipe === recipe && s.options[`${recipe}_backend`] === backend,
    );
    if (unloaded.length) ctx.logger.info("Server", `Unloaded ${unloaded.join(", ")} before removing ${recipe}:${backend}`);
    await installing(() => ctx.installer.uninstall(recipe, backend));
    ctx.logger.info("Server", `Uninstalled ${recipe}:${backend}`);
    return { status: "success", recipe, backend };
  });

  bind(app, spec.health, () => ({
    status: "ok",
    version: ctx.version,
    model_loaded: ctx.router.mostRecent,
    all_models_loaded: ctx.router.list().map((s) => healthEntry(s, ctx.router.isLoading(s.model.id))),
    max_models: perType(() => ctx.router.maxLoaded()),
    pinned_models: perType((t) => ctx.router.list().filter((s) => s.model.type === t && s.pinned).length),
    ...(ctx.websocketPort !== null ? { websocket_port: ctx.websocketPort } : {}),
    telemetry: { enabled: false },
    update_check_done: true,
  }));

  bind(app, spec.stats, () => ctx.stats.snapshot());

  bind(app, spec.systemInfo, () => ({
    ...hostInfo(ctx.config.hfCacheDir),
    recipes: recipeStatuses(ctx.config.cacheDir),
  }));

  bind(app, spec.systemStats, () => ctx.hostStats.read());

  bind(app, spec.metrics, async () => {
    return new Response(await ctx.metrics.render(), { headers: { "content-type": ctx.metrics.contentType } });
  });

  bind(app, spec.aliasesList, () => ({
    aliases: ctx.aliases.list().map(({ alias, target }) => {
      const model = ctx.catalog.find(target);
      return { alias, target, downloaded: model ? ctx.catalog.isDownloaded(model) : false, recipe: model?.recipe ?? null };
    }),
  }));

  bind(app, spec.aliasesSet, ({ body }) => {
    const target: string | undefined = body.target ?? body.model;
    if (!target) throw ApiError.of(E.missingArgument, "Missing required argument 'target'", "target");
    ctx.aliases.set(body.alias, target);
    ctx.logger.info("Server", `Alias ${body.alias} -> ${target}`);
    return { status: "ok", alias: body.alias, target };
  });

  bind(app, spec.aliasesDelete, ({ params }) => {
    if (!ctx.aliases.remove(params.alias)) {
      throw ApiError.of(E.aliasNotFound, `Alias '${params.alias}' does not exist`, "alias");
    }
    ctx.logger.info("Server", `Alias ${params.alias} removed`);
    return { status: "deleted", alias: params.alias };
  });
}
