// Running the server: liveness, health, the last request's stats, system info and stats, and
// metrics. The log stream is logs.ts's, the API reference docs.ts's.
import { operations as spec } from "../../spec/index.ts";
import { MODEL_TYPES } from "../../spec/recipes.ts";
import { hostInfo } from "../../observability/system.ts";
import { devices } from "../../lib/devices.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { healthEntry } from "../../protocols/models.ts";
import type { Binder } from "../bind.ts";

const perType = (value: (type: string) => number) => Object.fromEntries(MODEL_TYPES.map((t) => [t, value(t)]));

export function operationsRoutes(bind: Binder, ctx: Pick<ServerContext, "backends" | "cloud" | "config" | "hostStats" | "metrics" | "proxy" | "scheduler" | "stats" | "version" | "websocketPort">): void {
  bind.http(spec.live, () => ({ status: "ok" }));

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
}
