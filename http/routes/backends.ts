// Installing and removing backends and cloud providers; protocols/backends.ts does the work.
import { backends as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { install, installDryRun, uninstall } from "../../protocols/backends.ts";
import type { Binder } from "../bind.ts";

export function backendRoutes(bind: Binder, ctx: Pick<ServerContext, "backends" | "cloud" | "downloads">): void {
  bind.http(spec.install, ({ body }) => install(ctx, body));
  bind.http(spec.installDryRun, ({ body }) => installDryRun(ctx, body));
  bind.http(spec.uninstall, ({ body }) => uninstall(ctx, body));
  bind.http(spec.installs, () => ctx.backends.installs());
  bind.http(spec.installCancel, ({ body }) => {
    ctx.backends.cancelInstall(body.recipe, body.backend);
    return { status: "success" as const, recipe: body.recipe, backend: body.backend };
  });
}
