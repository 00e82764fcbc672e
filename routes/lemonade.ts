// Lemonade's operational routes: liveness, health, system info/stats, metrics and aliases.
import type { Elysia } from "elysia";
import { bind } from "./bind.ts";
import { lemonade as spec } from "../spec/index.ts";
import { E } from "../spec/errors.ts";
import { ApiError } from "../server/errors.ts";
import { hostInfo } from "../server/system.ts";
import type { ServerContext } from "../server/context.ts";
import { recipeStatuses } from "../engines/recipes.ts";

const MODEL_TYPES = ["llm", "embedding", "reranking", "transcription", "image", "tts"] as const;

const perType = (value: number) => Object.fromEntries(MODEL_TYPES.map((t) => [t, value]));

export function lemonadeRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  bind(app, spec.live, () => ({ status: "ok" }));

  bind(app, spec.health, () => ({
    status: "ok",
    version: ctx.version,
    model_loaded: null,
    all_models_loaded: [],
    max_models: perType(ctx.config.maxLoadedModels),
    pinned_models: perType(0),
    ...(ctx.websocketPort !== null ? { websocket_port: ctx.websocketPort } : {}),
    telemetry: { enabled: false },
    update_check_done: true,
  }));

  bind(app, spec.systemInfo, () => ({
    ...hostInfo(ctx.config.hfCacheDir),
    recipes: recipeStatuses(ctx.config.cacheDir),
  }));

  bind(app, spec.systemStats, () => ctx.hostStats.read());

  bind(app, spec.metrics, async () => {
    return new Response(await ctx.metrics.render(), { headers: { "content-type": ctx.metrics.contentType } });
  });

  bind(app, spec.aliasesList, () => ({
    aliases: ctx.aliases.list().map(({ alias, target }) => ({ alias, target, downloaded: false, recipe: null })),
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
