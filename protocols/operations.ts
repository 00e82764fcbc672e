// How the running server reports itself: /v1/health (the loaded models, the limits) and
// /v1/system-info (the host, its devices, each recipe's backends, the cloud providers).
import { MODEL_TYPES, type ModelType } from "../spec/recipes.ts";
import type { HealthResponse, SystemInfoResponse } from "../spec/operations.ts";
import { devices } from "../lib/devices.ts";
import { hostInfo } from "../observability/system.ts";
import type { ServerContext } from "../runtime/context.ts";
import { loadedEntries } from "./models.ts";
import { autoTuneStatus } from "./tuning.ts";

// fromEntries cannot know its keys; they are MODEL_TYPES, every one.
const perType = (value: (type: ModelType) => number) => Object.fromEntries(MODEL_TYPES.map((t) => [t, value(t)])) as Record<ModelType, number>;

/** GET /v1/health. */
export function health(ctx: Pick<ServerContext, "catalog" | "cloud" | "config" | "kvCache" | "proxy" | "scheduler" | "stats" | "telemetry" | "tuning" | "version" | "websocketPort">): HealthResponse {
  const pools = poolHealth(ctx);
  // Models by their listed ids, as all_models_loaded names them; one no longer in the catalog, by its id.
  const all = ctx.catalog.all();
  const listed = (id: string) => ctx.catalog.publicIdOf(id, all);
  const recent = ctx.scheduler.mostRecent;
  return {
    status: "ok",
    version: ctx.version,
    model_loaded: recent === null ? null : listed(recent),
    all_models_loaded: loadedEntries(ctx, all),
    max_models: perType(() => ctx.config.maxLoadedModels),
    pinned_models: perType((t) => ctx.scheduler.list().filter((s) => s.model.type === t && s.pinned && s.residency === "standard").length),
    pinned_helper_models: perType((t) => ctx.scheduler.list().filter((s) => s.model.type === t && s.pinned && s.residency === "routing_helper").length),
    ...(ctx.websocketPort !== null ? { websocket_port: ctx.websocketPort } : {}),
    telemetry: ctx.telemetry.health(),
    update_check_done: true,
    auto_tune: autoTuneStatus(ctx),
    ...(pools.length ? { pools } : {}),
    saved_kv_cache: ctx.kvCache.summary().map((s) => ({ ...s, model_name: listed(s.model_name) })),
  };
}

/** The recipes whose every model is filtered out here, as Lemonade reports them beside `recipes`
 * (which stays the same on every machine). Collections run on their components: not recipes. */
function unavailableRecipes(ctx: Pick<ServerContext, "catalog">): string[] {
  const runs = new Map<string, boolean>();
  for (const model of ctx.catalog.all()) {
    if (model.router || model.omni) continue;
    runs.set(model.recipe, (runs.get(model.recipe) ?? false) || ctx.catalog.isSupported(model));
  }
  return [...runs].filter(([, any]) => !any).map(([recipe]) => recipe).sort();
}

/** Each model a pool of servers serves, with its members' states. */
function poolHealth(ctx: Pick<ServerContext, "cloud" | "proxy">): NonNullable<HealthResponse["pools"]> {
  const out: NonNullable<HealthResponse["pools"]> = [];
  for (const model of ctx.cloud.catalogModels()) {
    const provider = model.cloud?.provider;
    const pool = provider === undefined ? undefined : ctx.proxy.pools.of(provider);
    if (pool) out.push({ model_name: model.id, provider: pool.provider, members: pool.health() });
  }
  return out;
}

/** GET /v1/system-info. */
export function systemInfo(ctx: Pick<ServerContext, "backends" | "catalog" | "cloud" | "config" | "tuning" | "rpcWorkers">): SystemInfoResponse {
  const providers = ctx.cloud.systemInfo();
  const workers = ctx.rpcWorkers.list();
  return {
    ...hostInfo(ctx.config.hfCacheDir, devices()),
    unavailable_recipes: unavailableRecipes(ctx),
    no_fetch_executables: ctx.config.noFetchExecutables,
    archetype: ctx.tuning.archetype(),
    recipes: ctx.backends.statuses(),
    ...(providers.length ? { cloud: { providers } } : {}),
    ...(workers.length ? { rpc_workers: workers } : {}),
  };
}
