// Models on disk: pull, register, variants, update checks, the registry search, routing-policy
// checks, download jobs and deletion; protocols/lifecycle.ts does the work.
import { downloads as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { checkUpdates, controlDownload, deleteModel, pull, register, searchRegistry } from "../../protocols/lifecycle.ts";
import { validateRouting } from "../../protocols/routing.ts";
import type { Binder } from "../bind.ts";

export function downloadRoutes(bind: Binder, ctx: Pick<ServerContext, "catalog" | "downloads" | "library" | "proxy" | "scheduler">): void {
  bind.http(spec.pull, ({ body }) => pull(ctx, body));
  bind.http(spec.register, ({ body }) => register(ctx, body));
  bind.http(spec.pullVariants, ({ query }) => ctx.library.variants(query.checkpoint, query.source));
  bind.http(spec.checkUpdates, () => checkUpdates(ctx));
  bind.http(spec.routingValidate, ({ body, request }) => validateRouting(ctx, body, request.signal));
  bind.http(spec.registrySearch, ({ query }) => searchRegistry(ctx, query));
  bind.http(spec.downloads, () => ctx.downloads.list());
  bind.http(spec.downloadsControl, ({ body }) => controlDownload(ctx, body));
  bind.http(spec.deleteModel, ({ body }) => deleteModel(ctx, body.model_name));
}
