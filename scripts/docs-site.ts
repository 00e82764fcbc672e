// `bun run docs:site [DIR]` (default dist/docs-site): the API reference as a folder that opens
// from disk or is hosted anywhere, the same as the server's /docs: Swagger UI (swagger-ui-dist,
// from npm) over the OpenAPI document, carried in a script so that no request is needed, the
// generated markdown pages as HTML, the markdown itself and openapi.json. Nothing loads from a host.
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { openApiDocument } from "../http/openapi.ts";
import { docsPage, referencePages, swaggerInit } from "../http/reference.ts";
import { VERSION } from "../lib/version.ts";

const root = join(import.meta.dir, "..");

export function writeDocsSite(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  const assets = join(dir, "assets");
  mkdirSync(join(dir, "markdown"), { recursive: true });
  mkdirSync(assets);
  const doc = JSON.stringify(openApiDocument(VERSION), null, 2);
  const files: Record<string, string> = {
    "index.html": docsPage("index.html", "assets/", ["openapi.js"]),
    "openapi.json": doc + "\n",
    "assets/openapi.js": `window.LEMONADE_OPENAPI = ${doc};\n`,
    "assets/init.js": swaggerInit({ specGlobal: "LEMONADE_OPENAPI", documentUrl: "http://localhost:13305/openapi.json" }),
  };
  for (const [file, html] of Object.entries(referencePages("../index.html", ""))) files[`assets/${file}`] = html;
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
  const swagger = dirname(Bun.resolveSync("swagger-ui-dist/package.json", root));
  for (const file of ["swagger-ui-bundle.js", "swagger-ui.css"]) copyFileSync(join(swagger, file), join(assets, file));
  for (const file of readdirSync(join(root, "generated-docs"))) copyFileSync(join(root, "generated-docs", file), join(dir, "markdown", file));
}

if (import.meta.main) {
  const dir = resolve(process.argv[2] ?? join(root, "dist", "docs-site"));
  writeDocsSite(dir);
  console.log(`API reference written to ${dir}: open ${join(dir, "index.html")}`);
}
