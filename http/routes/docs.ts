// GET /openapi.json and GET /docs: the API reference, rendered from spec/ once per process.
import { operations as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import type { Binder } from "../bind.ts";
import { openApiDocument } from "../openapi.ts";
import { docsPage } from "../reference.ts";
import { CSP } from "./web.ts";

export function docsRoutes(bind: Binder, ctx: Pick<ServerContext, "version">): void {
  const openapiJson = JSON.stringify(openApiDocument(ctx.version));
  bind.http(spec.openapi, () => new Response(openapiJson, { headers: { "content-type": "application/json" } }));
  const page = docsPage("/docs", "/docs/assets/");
  bind.http(spec.docs, () => new Response(page, { headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": CSP } }));
}
