// Lemonade's lifecycle and operational routes: load/unload, pull and downloads, backends,
// liveness, health, system info/stats, metrics, aliases and text classification.
import { E, lemonade as spec } from "../../spec/index.ts";
import { MODEL_TYPES } from "../../spec/recipes.ts";
import { clip } from "../../lib/scrub.ts";
import { ApiError } from "../../lib/api-error.ts";
import { sseResponse } from "../../lib/sse.ts";
import { hostInfo } from "../../observability/system.ts";
import { devices } from "../../lib/devices.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { healthEntry, saveLoadOptions, shownCheckpoints } from "../../protocols/models.ts";
import { effectiveSettings } from "../../config/settings.ts";
import { pin, setSettings, shutdown } from "../../protocols/settings.ts";
import { classify } from "../../protocols/classify.ts";
import type { Binder } from "../bind.ts";
import { installCloud, uninstallCloud } from "./cloud.ts";

/** `recipe` is required on /v1/install and /v1/uninstall unless `backend` is "cloud". */
function requiredRecipe(recipe: string | undefined): string {
  if (!recipe) throw ApiError.of(E.missingArgument, "Missing required argument 'recipe'", "recipe");
  return recipe;
}

const perType = (value: (type: string) => number) => Object.fromEntries(MODEL_TYPES.map((t) => [t, value(t)]));

/** Recipe option keys the load request carries (everything but the load's own fields). */
function requestOptions(body: Record<string, unknown>): Record<string, unknown> {
  const { model_name: _name, pinned: _pinned, save_options: _save, ...options } = body;
  return options;
}

export function lemonadeRoutes(bind: Binder, ctx: ServerContext): void {
  bind.http(spec.live, () => ({ status: "ok" }));

  bind.http(spec.load, async ({ body }) => {
    const model = ctx.catalog.get(body.model_name);
    const options = requestOptions(body);
    const loaded = await ctx.proxy.targets.of(model).load({ options, pinned: body.pinned });
    // Saved once the load took them, so a refused option is never saved.
    if (loaded.tookOptions && body.save_options === true) saveLoadOptions(ctx, model, { ...options, ...(body.pinned !== undefined ? { pinned: body.pinned } : {}) });
    return { status: "success", message: loaded.message, model_name: model.id, checkpoint: loaded.checkpoint ?? shownCheckpoints(ctx, model, false).main ?? "", recipe: model.recipe };
  });

  bind.http(spec.unload, async ({ body }) => {
    const name: string | undefined = body?.model_name;
    if (name === undefined) {
      await ctx.scheduler.unloadWhere();
      return { status: "success", message: "All models unloaded successfully" };
    }
    const model = ctx.catalog.find(name);
    if (!model || !(await ctx.scheduler.unload(model.id))) throw new ApiError(404, "model_not_loaded", `Model not loaded: ${clip(name)}`);
    return { status: "success", message: `Model unloaded successfully: ${name}` };
  });

  bind.http(spec.pull, async ({ body }) => {
    if (body.stream === true && body.subscribe === false) {
      ctx.library.refuseOffline();
      const model = ctx.library.modelFor(body);
      // A collection's job installs it as a whole: its manifest, then each component.
      if (model.omni) return ctx.downloads.startJob(model, (p) => ctx.library.install(model, p));
      if (model.source !== "huggingface") return { status: "success", message: `${model.id} is local; nothing to download` };
      return ctx.downloads.startJob(model);
    }
    const model = ctx.library.modelFor(body);
    if (body.stream !== true) {
      await ctx.library.install(model);
      return { status: "success", message: `Installed model: ${model.id}` };
    }
    ctx.library.refuseOffline();
    return sseResponse(async (send) => {
      await ctx.library.install(model, (p) => send("progress", p));
      send("complete", { model_name: model.id, percent: 100 });
    });
  });

  bind.http(spec.register, ({ body }) => {
    const model = ctx.library.modelFor(body, { definitions: false });
    // model_name is the name /v1/models lists it by; canonical_model_name its `user.` id.
    return {
      status: "success",
      message: `Registered model: ${model.id}`,
      model_name: ctx.catalog.publicId(model),
      canonical_model_name: model.id,
      model: { id: ctx.catalog.publicId(model), recipe: model.recipe, downloaded: ctx.catalog.isDownloaded(model) },
    };
  });

  bind.http(spec.pullVariants, ({ query }) => ctx.library.variants(query.checkpoint, query.source));

  bind.http(spec.routingValidate, ({ body }) => ({ valid: true as const, routing: ctx.library.validateRouting(body as Record<string, unknown>) }));
  bind.http(spec.classify, ({ body, request }) => classify(ctx, body, request.signal));

  bind.http(spec.checkUpdates, async () => {
    const models = await ctx.library.checkUpdates();
    return { status: "success", updates_available: models.length, models };
  });

  bind.http(spec.registrySearch, async ({ query }) => {
    const text = String(query.query ?? query.q ?? "").trim();
    if (text.length < 3) throw new ApiError(400, "invalid_argument", "'query' must be at least 3 characters", "query");
    const source = ctx.library.registryOf(query.source);
    const found = await ctx.library.search(text, query.limit ?? 12, query.format === "gguf", source);
    return { query: text, source, ...(query.format === "gguf" ? { format: "gguf" } : {}), ...found };
  });

  bind.http(spec.downloads, () => ctx.downloads.list());

  bind.http(spec.downloadsControl, async ({ body }) => {
    const known = ctx.downloads.get(body.id) !== undefined;
    const snapshot = await ctx.downloads.control(body.id, body.action);
    if (body.action === "remove") return known ? { status: "ok" } : { status: "ok", missing: true };
    if (!snapshot) throw new ApiError(404, "download_not_found", `No download job ${body.id}`);
    return snapshot;
  });

  bind.http(spec.deleteModel, async ({ body }) => {
    // A name the registry does not know cannot be deleted: 422, as the real server answers.
    if (!ctx.catalog.find(body.model_name)) throw new ApiError(422, "model_not_found", `Model not found: ${clip(body.model_name)}`, "model_name");
    const model = await ctx.library.delete(body.model_name);
    return { status: "success", message: `Deleted model: ${model.id}` };
  });

  bind.http(spec.install, async ({ body }) => {
    if (body.backend === "cloud") return installCloud(ctx, body);
    const { backend } = body;
    const recipe = requiredRecipe(body.recipe);
    const result = { status: "success", recipe, backend };
    const force = body.force === true;
    if (body.stream !== true) {
      await ctx.backends.install(recipe, backend, undefined, force);
      return result;
    }
    // Refuse what cannot be installed here with a plain 400 before the event stream starts.
    await ctx.backends.checkInstallable(recipe, backend, force);
    return sseResponse(async (send) => {
      await ctx.backends.install(recipe, backend, (phase, percent) => send("progress", { phase, percent }), force);
      send("complete", { recipe, backend, percent: 100 });
    });
  });

  bind.http(spec.uninstall, async ({ body }) => {
    if (body.backend === "cloud") return uninstallCloud(ctx, body);
    const recipe = requiredRecipe(body.recipe);
    // Uninstalling what is gone already succeeds: the state asked for is the state there is.
    if (await ctx.backends.uninstall(recipe, body.backend)) return { status: "success", recipe, backend: body.backend };
    return { status: "success", recipe, backend: body.backend, message: `${recipe}:${body.backend} was not installed` };
  });

  bind.http(spec.health, () => ({
    status: "ok",
    version: ctx.version,
    model_loaded: ctx.scheduler.mostRecent,
    all_models_loaded: ctx.scheduler.list().map((s) => healthEntry(s, ctx.scheduler.isLoading(s.model.id), ctx.proxy.queued(s))),
    max_models: perType(() => ctx.config.maxLoadedModels),
    pinned_models: perType((t) => ctx.scheduler.list().filter((s) => s.model.type === t && s.pinned).length),
    ...(ctx.websocketPort !== null ? { websocket_port: ctx.websocketPort } : {}),
    telemetry: { enabled: false },
    update_check_done: true,
  }));

  bind.http(spec.stats, () => ctx.stats.snapshot());

  bind.http(spec.systemInfo, () => {
    const providers = ctx.cloud.systemInfo();
    return { ...hostInfo(ctx.config.hfCacheDir, devices()), recipes: ctx.backends.statuses(), ...(providers.length ? { cloud: { providers } } : {}) };
  });

  bind.http(spec.systemStats, () => ctx.hostStats.read());

  bind.http(spec.metrics, async () => {
    return new Response(await ctx.metrics.render(), { headers: { "content-type": ctx.metrics.contentType } });
  });

  bind.http(spec.internalConfig, () => effectiveSettings(ctx.config));
  bind.http(spec.internalSet, ({ body }) => setSettings(ctx, body as Record<string, unknown>));
  bind.http(spec.internalPin, ({ body }) => pin(ctx, body.model_name, body.pinned));
  bind.http(spec.internalShutdown, () => shutdown(ctx));

  bind.http(spec.aliasesList, () => ({
    aliases: ctx.aliases.list().map(({ alias, target }) => {
      const model = ctx.catalog.find(target);
      return { alias, target, downloaded: model ? ctx.catalog.isDownloaded(model) : false, recipe: model?.recipe ?? null };
    }),
  }));

  bind.http(spec.aliasesSet, ({ body }) => {
    const target: string | undefined = body.target ?? body.model;
    if (!target) throw ApiError.of(E.missingArgument, "Missing required argument 'target'", "target");
    ctx.aliases.set(body.alias, target);
    ctx.logger.info("Server", `Alias ${body.alias} -> ${target}`);
    return { status: "ok", alias: body.alias, target };
  });

  bind.http(spec.aliasesDelete, ({ params }) => {
    if (!ctx.aliases.remove(params.alias)) {
      throw ApiError.of(E.aliasNotFound, `Alias '${params.alias}' does not exist`, "alias");
    }
    ctx.logger.info("Server", `Alias ${params.alias} removed`);
    return { status: "deleted", alias: params.alias };
  });
}

