// The API reference as HTML: Swagger UI over the OpenAPI document, and the generated markdown
// pages (generated-docs/, embedded as files in the single executable) rendered by marked. The server serves
// it at /docs (http/routes/docs.ts, web.ts); `bun run docs:site` writes the same files to a folder
// that opens from disk. Nothing in it loads from another host.
import { readFileSync } from "node:fs";
import { FAVICON } from "./favicon.ts";
import { Marked } from "marked";
import anthropicMd from "../generated-docs/anthropic.md" with { type: "file" };
import lemonadeMd from "../generated-docs/lemonade.md" with { type: "file" };
import llamacppMd from "../generated-docs/llamacpp.md" with { type: "file" };
import mcpMd from "../generated-docs/mcp.md" with { type: "file" };
import ollamaMd from "../generated-docs/ollama.md" with { type: "file" };
import openaiMd from "../generated-docs/openai.md" with { type: "file" };

// Each page's markdown is imported as a file and read as it is rendered: as text, the pages would
// be some 380 kB of every bundle's source (npm start's, the executable's) held from start-up on.
const PAGES: [file: string, title: string, markdownFile: string][] = [
  ["openai.html", "OpenAI", openaiMd],
  ["anthropic.html", "Anthropic", anthropicMd],
  ["ollama.html", "Ollama", ollamaMd],
  ["lemonade.html", "Lemonade", lemonadeMd],
  ["llamacpp.html", "llama.cpp", llamacppMd],
  ["mcp.html", "MCP", mcpMd],
];

const escape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** GitHub's heading anchors, which the pages' own links use (`#post-v1load`). */
const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/<[^>]+>/g, "")
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");

const marked = new Marked({
  gfm: true,
  renderer: {
    heading({ tokens, depth }) {
      const inner = this.parser.parseInline(tokens);
      return `<h${depth} id="${slug(inner)}">${inner}</h${depth}>\n`;
    },
    // The pages' status badges are shields.io images: drawn here instead, so nothing loads from a host.
    image({ href, text }) {
      const badge = href.match(/^https:\/\/img\.shields\.io\/badge\/(?:(\w+)-)?(\w+)-(green|yellow|red)$/);
      if (badge) return `<span class="badge ${badge[3]}">${escape((badge[1] ? `${badge[1]}: ` : "") + badge[2]!.replace(/_/g, " "))}</span>`;
      return escape(text);
    },
    link({ href, tokens }) {
      // Links between the pages point at their HTML.
      const target = href.replace(/^\.\/(\w+)\.md(#|$)/, "$1.html$2");
      return `<a href="${escape(target)}">${this.parser.parseInline(tokens)}</a>`;
    },
  },
});

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#222}nav{background:#1b1b1b;padding:8px 16px;display:flex;gap:16px;flex-wrap:wrap}nav a{color:#fff;text-decoration:none}nav a:hover{text-decoration:underline}main{max-width:960px;margin:0 auto;padding:8px 24px 48px}main pre{background:#f4f4f4;padding:12px;overflow:auto}main code{font-family:ui-monospace,monospace}main table{border-collapse:collapse}main td,main th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}.badge{font-size:12px;padding:1px 6px;border-radius:3px;color:#fff;white-space:nowrap}.green{background:#3c8d2f}.yellow{background:#b08800}.red{background:#c0392b}`;

/** The links to the reference's pages; `home` is the Swagger UI page, `base` where the pages are. */
function nav(home: string, base: string): string {
  return `<nav><a href="${home}">API reference (OpenAPI)</a>${PAGES.map(([file, title]) => `<a href="${base}${file}">${title}</a>`).join("")}</nav>`;
}


/** The markdown pages as HTML files, by file name. `home` and `base` as for the nav. */
export function referencePages(home: string, base: string): Record<string, string> {
  return Object.fromEntries(
    PAGES.map(([file, title, markdownFile]) => [
      file,
      `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Lemonade Server API: ${title}</title>
    ${FAVICON}
    <style>${STYLE}</style>
  </head>
  <body>
    ${nav(home, base)}
    <main>${marked.parse(readFileSync(markdownFile, "utf8"), { async: false }) as string}</main>
  </body>
</html>
`,
    ]),
  );
}

/** Swagger UI's start, a file of its own (no inline script under the CSP): the document from
 * `url`, or (`specGlobal`) from a global a script of the page set, for a page opened from disk.
 * Such a page has no document URL of its own, and Swagger UI resolves even a `#/components` `$ref`
 * against one (a `file:` one fails): it is given the URL a server on the default port serves the
 * document at, which also makes Try it out send to that server. Nothing is fetched from it. */
export function swaggerInit(source: { url: string } | { specGlobal: string; documentUrl: string }): string {
  if ("url" in source) return `window.ui = SwaggerUIBundle({ url: ${JSON.stringify(source.url)}, dom_id: "#swagger-ui", deepLinking: true });\n`;
  return `window.ui = SwaggerUIBundle({ spec: window.${source.specGlobal}, dom_id: "#swagger-ui", deepLinking: true });
window.ui.specActions.updateUrl(${JSON.stringify(source.documentUrl)});
`;
}

/** The Swagger UI page; its files are under `base`, and `scripts` run before `init.js`. */
export function docsPage(home: string, base: string, scripts: string[] = []): string {
  const before = scripts.map((s) => `\n    <script src="${base}${s}"></script>`).join("");
  return `<!doctype html>
<html lang="en">
  <head>
    <title>Lemonade Server API</title>
    <meta charset="utf-8" />
    ${FAVICON}
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <link rel="stylesheet" href="${base}swagger-ui.css" />
    <style>${STYLE}</style>
  </head>
  <body>
    ${nav(home, base)}
    <div id="swagger-ui"></div>
    <script src="${base}swagger-ui-bundle.js"></script>${before}
    <script src="${base}init.js"></script>
  </body>
</html>
`;
}
