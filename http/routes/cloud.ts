// Cloud providers over HTTP: install and uninstall (dispatched here by /v1/install and
// /v1/uninstall when `backend` is "cloud") and the in-memory keys. The providers themselves are
// models/cloud.ts's.
import { ApiError } from "../../lib/api-error.ts";
import { E } from "../../spec/errors.ts";
import { cloud as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import type { Binder } from "../bind.ts";

interface CloudBody {
  provider?: string;
  base_url?: string;
  api_key?: string;
  wire?: string;
}

const required = (value: string | undefined, field: string): string => {
  if (!value) throw ApiError.of(E.missingArgument, `Missing required argument '${field}' (backend "cloud")`, field);
  return value;
};

export async function installCloud(ctx: Pick<ServerContext, "cloud">, body: CloudBody) {
  const provider = required(body.provider, "provider");
  const result = await ctx.cloud.install(provider, required(body.base_url, "base_url"), body.api_key, body.wire);
  return { status: "success", backend: "cloud", provider, ...result };
}

export async function uninstallCloud(ctx: Pick<ServerContext, "cloud">, body: CloudBody) {
  const provider = required(body.provider, "provider");
  return { status: "success", backend: "cloud", provider, models_evicted: ctx.cloud.uninstall(provider) };
}

export function cloudRoutes(bind: Binder, ctx: Pick<ServerContext, "cloud">): void {
  bind.http(spec.cloudAuth, ({ body }) => ctx.cloud.setKey(body.provider, body.api_key));
  bind.http(spec.cloudAuthClear, ({ params }) => ctx.cloud.clearKey(params.provider));
}
