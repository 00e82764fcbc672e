// Cloud providers' in-memory keys. Installing and removing a provider is /v1/install and
// /v1/uninstall with `backend: "cloud"` (protocols/backends.ts); the providers are models/cloud.ts's.
import { cloud as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import type { Binder } from "../bind.ts";

export function cloudRoutes(bind: Binder, ctx: Pick<ServerContext, "cloud">): void {
  bind.http(spec.cloudAuth, ({ body }) => ctx.cloud.setKey(body.provider, body.api_key, body.allow_insecure_http));
  bind.http(spec.cloudAuthClear, ({ params }) => ctx.cloud.clearKey(params.provider));
}
