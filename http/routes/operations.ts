// Running the server: liveness, health, the last request's stats, system info and stats, the
// settings of /v1/params, and metrics (protocols/operations.ts builds the larger answers). The log
// stream is logs.ts's, the API reference docs.ts's.
import { operations as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { health, systemInfo } from "../../protocols/operations.ts";
import { setParams } from "../../protocols/settings.ts";
import { effectiveSettings } from "../../config/settings.ts";
import type { Binder } from "../bind.ts";

export function operationsRoutes(
  bind: Binder,
  ctx: Pick<ServerContext, "backends" | "catalog" | "cloud" | "config" | "hostStats" | "kvCache" | "lifecycle" | "logger" | "metrics" | "proxy" | "rpcWorkers" | "scheduler" | "stats" | "telemetry" | "tuning" | "version" | "websocketPort">,
): void {
  bind.http(spec.live, () => ({ status: "ok" }));
  bind.http(spec.health, () => health(ctx));
  bind.http(spec.stats, () => ctx.stats.snapshot());
  bind.http(spec.systemInfo, () => systemInfo(ctx));
  bind.http(spec.systemStats, () => ctx.hostStats.read());
  bind.http(spec.paramsSet, async ({ request }) => setParams(ctx, await request.text()));
  bind.http(spec.paramsGet, () => effectiveSettings(ctx.config));
  bind.http(spec.metrics, async () => new Response(await ctx.metrics.render(), { headers: { "content-type": ctx.metrics.contentType } }));
}
