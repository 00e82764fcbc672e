// Auto-tune's routes; the views are protocols/tuning's.
import { tuning as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { deleteTuning, profilesView, saveTuning } from "../../protocols/tuning.ts";
import type { Binder } from "../bind.ts";

export function tuningRoutes(bind: Binder, ctx: Pick<ServerContext, "catalog" | "options" | "scheduler" | "stats" | "tuning">): void {
  bind.http(spec.profilesGet, () => profilesView(ctx));
  bind.http(spec.tuningPost, ({ params, body }) => saveTuning(ctx, ctx.catalog.get(params.id), body));
  bind.http(spec.tuningDelete, ({ params }) => deleteTuning(ctx, ctx.catalog.get(params.id)));
}
