// How the running server reports itself: /v1/health (the loaded models, the limits) and
// /v1/system-info (the host, its devices, each recipe's backends, the cloud providers).
import { MODEL_TYPES, type ModelType } from "../spec/recipes.ts";
import type { HealthResponse, SystemInfoResponse } from "../spec/operations.ts";
import { devices } from "../lib/devices.ts";
import { hostInfo } from "../observability/system.ts";
import type { ServerContext } from "../runtime/context.ts";
import { healthEntry } from "./models.ts";
import { autoTuneStatus } from "./tuning.ts";

// fromEntries cannot know its keys; they are MODEL_TYPES, every one.
const perType = (value: (type: ModelType) => number) => Object.fromEntries(MODEL_TYPES.map((t) => [t, value(t)])) as Record<ModelType, number>;

/** GET /v1/health. */
export function health(ctx: Pick<ServerContext, "config" | "kvCache" | "proxy" | "scheduler" | "stats" | "telemetry" | "tuning" | "version" | "websocketPort">): HealthResponse {
  return {
    status: "ok",
    version: ctx.version,
    model_loaded: ctx.scheduler.mostRecent,
    all_models_loaded: ctx.scheduler.list().map((s) => healthEntry(s, ctx.scheduler.isLoading(s.model.id), { queued: ctx.proxy.queued(s), slotsInUse: ctx.proxy.slotsInUse(s), memoryBytes: ctx.scheduler.footprint(s) })),
    max_models: perType(() => ctx.config.maxLoadedModels),
    pinned_models: perType((t) => ctx.scheduler.list().filter((s) => s.model.type === t && s.pinned).length),
    ...(ctx.websocketPort !== null ? { websocket_port: ctx.websocketPort } : {}),
    telemetry: ctx.telemetry.health(),
    update_check_done: true,
    auto_tune: autoTuneStatus(ctx),
    saved_kv_cache: ctx.kvCache.summary(),
  };
}

/** GET /v1/system-info. */
export function systemInfo(ctx: Pick<ServerContext, "backends" | "cloud" | "config" | "tuning">): SystemInfoResponse {
  const providers = ctx.cloud.systemInfo();
  return { ...hostInfo(ctx.config.hfCacheDir, devices()), archetype: ctx.tuning.archetype(), recipes: ctx.backends.statuses(), ...(providers.length ? { cloud: { providers } } : {}) };
}
