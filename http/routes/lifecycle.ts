// Loading and unloading models; protocols/lifecycle.ts does the work.
import { lifecycle as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { load, unload } from "../../protocols/lifecycle.ts";
import type { Binder } from "../bind.ts";

export function lifecycleRoutes(bind: Binder, ctx: Pick<ServerContext, "aliases" | "catalog" | "config" | "library" | "proxy" | "recipeOptions" | "scheduler">): void {
  bind.http(spec.load, ({ body }) => load(ctx, body));
  bind.http(spec.unload, ({ body }) => unload(ctx, body?.model_name));
}
