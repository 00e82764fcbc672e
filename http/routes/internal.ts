// The admin-only /internal routes: model aliases, the effective configuration, live settings,
// pinning and shutdown (protocols/settings.ts).
import { E, internal as spec } from "../../spec/index.ts";
import { ApiError } from "../../lib/api-error.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { effectiveSettings } from "../../config/settings.ts";
import { pin, setSettings, shutdown } from "../../protocols/settings.ts";
import type { Binder } from "../bind.ts";

export function internalRoutes(bind: Binder, ctx: Pick<ServerContext, "aliases" | "catalog" | "config" | "lifecycle" | "logger" | "scheduler">): void {
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
