// The web app (web/, bundled by app/web-assets.ts) and the offline API reference's viewer. The
// Content-Security-Policy lets the page reach this server alone.
import { web as spec } from "../../spec/index.ts";
import { ApiError } from "../../lib/api-error.ts";
import { E } from "../../spec/errors.ts";
import type { ServerContext } from "../../runtime/context.ts";
import type { Binder } from "../bind.ts";
import { FAVICON } from "../favicon.ts";
import swaggerBundle from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
import swaggerCss from "swagger-ui-dist/swagger-ui.css" with { type: "file" };

export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; media-src 'self' blob: data:; connect-src 'self'; font-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const SHELL = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Lemonade</title>
    ${FAVICON}
    <link rel="stylesheet" href="/app/assets/app.css" />
  </head>
  <body>
    <div id="app"><noscript>The Lemonade app needs JavaScript.</noscript></div>
    <script type="module" src="/app/assets/app.js"></script>
  </body>
</html>
`;

const TYPES: Record<string, string> = { js: "text/javascript; charset=utf-8", css: "text/css; charset=utf-8", html: "text/html; charset=utf-8" };
const typeOf = (file: string) => TYPES[file.split(".").pop()!] ?? "application/octet-stream";
const notFound = (file: string) => ApiError.of(E.fileNotFound, `No such file: ${file.slice(0, 100)}`);

const DOCS_FILES: Record<string, () => Promise<string> | string> = {
  "swagger-ui-bundle.js": () => Bun.file(swaggerBundle).text(),
  "swagger-ui.css": () => Bun.file(swaggerCss).text(),
  "init.js": async () => (await import("../reference.ts")).swaggerInit({ url: "/openapi.json" }),
};

/** The markdown reference pages as HTML, rendered (marked and the pages loaded) on the first request for one. */
let pages: Promise<Record<string, string>> | undefined;
async function referencePage(file: string): Promise<string | undefined> {
  pages ??= import("../reference.ts").then(({ referencePages }) => referencePages("/docs", "/docs/assets/"));
  const all = await pages;
  return Object.hasOwn(all, file) ? all[file] : undefined;
}

export function webRoutes(bind: Binder, ctx: Pick<ServerContext, "webAsset">): void {
  bind.http(spec.webApp, () => new Response(SHELL, { headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": CSP, "x-content-type-options": "nosniff" } }));
  bind.http(spec.webAsset, async ({ params }) => {
    const body = await ctx.webAsset(params.file);
    if (body === undefined) throw notFound(params.file);
    return new Response(body, { headers: { "content-type": typeOf(params.file), "cache-control": "no-cache", "x-content-type-options": "nosniff" } });
  });
  bind.http(spec.docsAsset, async ({ params }) => {
    const body = Object.hasOwn(DOCS_FILES, params.file) ? await DOCS_FILES[params.file]!() : await referencePage(params.file);
    if (body === undefined) throw notFound(params.file);
    return new Response(body, {
      headers: { "content-type": typeOf(params.file), "content-security-policy": CSP, "cache-control": "max-age=86400", "x-content-type-options": "nosniff" },
    });
  });
}
