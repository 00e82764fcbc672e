// The admin-only /internal routes: model aliases (protocols/aliases.ts), the effective
// configuration, live settings, pinning and shutdown (protocols/settings.ts), the telemetry flush,
// and the VRAM-pressure test hook (the scheduler's).
import { internal as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { effectiveSettings, settingsSchema } from "../../config/settings.ts";
import { listAliases, removeAlias, setAlias } from "../../protocols/aliases.ts";
import { pin, setSettings, shutdown } from "../../protocols/settings.ts";
import type { Binder } from "../bind.ts";

export function internalRoutes(bind: Binder, ctx: Pick<ServerContext, "aliases" | "catalog" | "config" | "lifecycle" | "logger" | "scheduler" | "telemetry">): void {
  bind.http(spec.internalConfig, () => effectiveSettings(ctx.config));
  bind.http(spec.internalConfigSchema, () => settingsSchema());
  bind.http(spec.internalSet, ({ body }) => setSettings(ctx, body));
  bind.http(spec.internalPin, async ({ request }) => pin(ctx, await request.text()));
  bind.http(spec.simulateVramPressure, ({ body }) => {
    ctx.scheduler.simulatePressure(body.pct ?? 0);
    return { status: "ok" as const };
  });
  bind.http(spec.internalShutdown, () => shutdown(ctx));
  bind.http(spec.telemetryFlush, async () => {
    await ctx.telemetry.flush();
    return { status: "flushed" as const };
  });
  bind.http(spec.aliasesList, () => listAliases(ctx));
  bind.http(spec.aliasesSet, ({ body }) => setAlias(ctx, body));
  bind.http(spec.aliasesDelete, ({ params }) => removeAlias(ctx, params.alias));
}
