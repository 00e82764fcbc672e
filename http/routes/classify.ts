// Text classification; protocols/classify.ts does the work.
import { classify as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { classify } from "../../protocols/classify.ts";
import type { Binder } from "../bind.ts";

export function classifyRoutes(bind: Binder, ctx: Pick<ServerContext, "catalog" | "proxy" | "scheduler">): void {
  bind.http(spec.classify, ({ body, request }) => classify(ctx, body, request.signal));
}
