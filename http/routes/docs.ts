// GET /openapi.json and GET /docs: the API reference, rendered from spec/ once per process, on the
// first request for it: the document is large (every named schema), so it is built then and kept
// as its encoded bytes, and the modules that build it and the pages are loaded then too.
import { operations as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import type { Binder } from "../bind.ts";
import { CSP } from "./web.ts";

export function docsRoutes(bind: Binder, ctx: Pick<ServerContext, "version">): void {
  let openapiJson: Promise<Uint8Array<ArrayBuffer>> | undefined;
  bind.http(spec.openapi, async () => {
    openapiJson ??= import("../openapi.ts").then(({ openApiDocument }) => new TextEncoder().encode(JSON.stringify(openApiDocument(ctx.version))));
    return new Response(await openapiJson, { headers: { "content-type": "application/json" } });
  });
  let page: Promise<string> | undefined;
  bind.http(spec.docs, async () => {
    page ??= import("../reference.ts").then(({ docsPage }) => docsPage("/docs", "/docs/assets/"));
    return new Response(await page, { headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": CSP } });
  });
}
