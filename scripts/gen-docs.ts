// Renders each spec/ definition into its `<!-- BEGIN GENERATED: id -->` block in generated-docs/,
// in the shape of the API contract pages (status badge, parameter table, example, response format,
// errors table), plus one summary table per page. `--check` fails on any drift instead of writing.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TSchema } from "@sinclair/typebox";
import {
  docPath,
  documentedErrors,
  endpoints,
  type DocPage,
  type EndpointDef,
  type ParamStatus,
} from "../spec/index.ts";
import { ANY_ROUTE_ERRORS, BACKEND_ERRORS, E, type ErrorRow } from "../spec/errors.ts";

const DEFAULT_DOCS_DIR = join(import.meta.dir, "..", "generated-docs");
const BASE_URL = "http://localhost:13305";

const PAGE_TITLES: Record<DocPage, string> = {
  openai: "OpenAI-Compatible API",
  ollama: "Ollama-Compatible API",
  lemonade: "Lemonade API",
  anthropic: "Anthropic-Compatible API",
  mcp: "MCP Gateway",
  llamacpp: "llama.cpp-Specific API",
};

const AVAILABILITY_COLOR = { fully_available: "green", partially_available: "yellow", not_available: "red" };
const PARAM_COLOR: Record<ParamStatus, string> = { available: "green", partial: "yellow", not_available: "red" };
const SUMMARY_STATUS = { fully_available: "Supported", partially_available: "Supported", not_available: "Not supported" };

const ACCESS_LINE = {
  api: "Requires `LEMONADE_API_KEY` when it is set.",
  admin: "Requires `LEMONADE_ADMIN_API_KEY` when it is set, else `LEMONADE_API_KEY` when that is set.",
  metrics: "Requires `LEMONADE_API_KEY` or `LEMONADE_ADMIN_API_KEY` when `LEMONADE_API_KEY` is set.",
  telemetry: "Connects without a key; a key given at connection, or later in an `auth` message, must be `LEMONADE_API_KEY` or `LEMONADE_ADMIN_API_KEY` when `LEMONADE_API_KEY` is set.",
  open: "Never requires an API key.",
};

type Schema = TSchema & Record<string, any>;

/** `/v1/models/{id}` -> `#get-v1modelsid`, as the docs' anchors read. */
function anchor(def: EndpointDef): string {
  return "#" + `${def.method} ${docPath(def)}`.toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-");
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

/** Unwraps `T.Optional` / nullable unions to the schema that carries the fields. */
function core(schema: Schema): Schema {
  if (schema.anyOf) {
    const nonNull = (schema.anyOf as Schema[]).filter((s) => s.type !== "null");
    if (nonNull.length === 1) return core({ ...nonNull[0]!, description: schema.description ?? nonNull[0]!.description });
  }
  return schema;
}

function paramRows(def: EndpointDef): string[] {
  const rows: string[] = [];
  const sources: [TSchema | undefined, string][] = [
    [def.params, " (path)"],
    [def.query, " (query)"],
    [def.method === "WS" ? undefined : def.body, ""],
  ];
  for (const [schema, suffix] of sources) {
    const s = schema && core(schema as Schema);
    if (!s?.properties) continue;
    const required = new Set<string>(s.required ?? []);
    for (const [name, prop] of Object.entries(s.properties as Record<string, Schema>)) {
      const st = (prop["x-status"] as ParamStatus | undefined) ?? "available";
      const badge = `<sub>![Status](https://img.shields.io/badge/${st}-${PARAM_COLOR[st]})</sub>`;
      rows.push(
        `| \`${name}\`${suffix} | ${required.has(name) ? "Yes" : "No"} | ${escapeCell(prop.description ?? "")} | ${badge} |`,
      );
    }
  }
  return rows;
}

/** The "Response format" bullets, from the response schema's field descriptions. */
function fieldBullets(schema: Schema, depth: number): string[] {
  const s = core(schema);
  const pad = "  ".repeat(depth);
  if (s.type === "array" && s.items) return fieldBullets(s.items, depth);
  if (s.patternProperties || (s.type === "object" && s.additionalProperties && typeof s.additionalProperties === "object")) {
    const value = (s.patternProperties ? Object.values(s.patternProperties)[0] : s.additionalProperties) as Schema;
    return fieldBullets(value, depth);
  }
  if (!s.properties) return [];
  const lines: string[] = [];
  for (const [name, prop] of Object.entries(s.properties as Record<string, Schema>)) {
    const p = core(prop);
    const described = prop.description ?? p.description;
    lines.push(`${pad}- \`${name}\`${described ? ` - ${described}.`.replace(/\.\.$/, ".") : ""}`);
    lines.push(...fieldBullets(p, depth + 1));
  }
  return lines;
}

function responseFormat(def: EndpointDef): string[] {
  const schema = def.response as Schema | undefined;
  if (!schema) return [];
  const out = ["### Response format", ""];
  if (schema.anyOf && !core(schema).properties) {
    for (const variant of schema.anyOf as Schema[]) {
      // A variant is headed by what it describes, else (a WebSocket message) by its `type`.
      const type = variant.properties?.type?.const;
      out.push(`#### ${variant.description ?? `\`${type}\``}`, "", ...fieldBullets(variant, 0), "");
    }
  } else {
    out.push(...fieldBullets(schema, 0), "");
  }
  return out;
}

/** The "Stream format" bullets: one event of a streamed answer, when its schema is not the
 * response's own (Ollama's lines are). */
function streamFormat(def: EndpointDef): string[] {
  if (!def.stream || def.stream.event === def.response) return [];
  const what = def.stream.contentType === "text/event-stream" ? "Each server-sent event's `data:`" : "Each NDJSON line";
  return ["### Stream format", "", `${what}, when the request streams:`, "", ...fieldBullets(def.stream.event as Schema, 0), ""];
}

function exampleSection(def: EndpointDef): string[] {
  const ex = def.example;
  if (!ex) return [];
  const path = ex.path ?? docPath(def);
  const url = `${BASE_URL}${path}${ex.query ? `?${ex.query}` : ""}`;
  const out = ["### Example", ""];
  if (def.method === "WS") {
    out.push(`Connect to \`ws://localhost:13305${path}\` and send:`, "", "```json", JSON.stringify(ex.body), "```", "");
  } else {
    const body = ex.body === undefined ? null : JSON.stringify(ex.body, null, 2).replace(/\n/g, "\n    ");
    const ps = [`Invoke-WebRequest -Uri "${url}"`];
    const sh = [`curl${def.method === "GET" ? "" : ` -X ${def.method}`} ${url}`];
    if (def.method !== "GET") ps.push(`-Method ${def.method}`);
    if (body) {
      ps.push(`-Headers @{ "Content-Type" = "application/json" }`, `-Body '${body}'`);
      sh.push(`-H "Content-Type: application/json"`, `-d '${body}'`);
    }
    // Continuation lines sit two spaces in from the command, inside the tab's 4-space indent.
    const block = (lines: string[], cont: string) =>
      lines.join(` ${cont}\n`).split("\n").map((l, i) => (i === 0 ? `    ${l}` : `      ${l}`));
    out.push('=== "PowerShell"', "", "    ```powershell", ...block(ps, "`"), "    ```", "");
    out.push('=== "Bash"', "", "    ```bash", ...block(sh, "\\"), "    ```", "");
  }
  if (ex.response !== undefined) {
    const status = ex.status ?? (def.method === "WS" ? "" : "200 OK");
    out.push(status ? `**Response:** \`${status}\`` : "**Response:**", "", "```" + (ex.responseLang ?? "json"), ex.response, "```", "");
  }
  return out;
}

export function renderEndpoint(def: EndpointDef): string {
  const color = AVAILABILITY_COLOR[def.availability];
  const out = [
    `## \`${def.method} ${docPath(def)}\``,
    `<sub>![Status](https://img.shields.io/badge/status-${def.availability}-${color})</sub>`,
    "",
    def.description,
    "",
    ACCESS_LINE[def.access],
    "",
  ];
  const rows = paramRows(def);
  if (def.availability !== "not_available") {
    out.push("### Parameters", "");
    if (rows.length) {
      out.push("| Parameter | Required | Description | Status |", "|-----------|----------|-------------|--------|", ...rows, "");
    } else {
      out.push("This endpoint does not take any parameters.", "");
    }
  }
  if (def.notes) out.push(def.notes, "");
  if (def.head) out.push("`HEAD` returns `200 OK` with an empty body.", "");
  out.push(...exampleSection(def), ...responseFormat(def), ...streamFormat(def));
  const errors = documentedErrors(def);
  if (errors.length) {
    out.push("### Errors", "");
    if (def.errorStyle === "lemonade") {
      out.push('An error answers `{"status": "error", "message", "error", "code", "type"}`: `error` repeats `message`, `code` is from the table.', "");
    }
    if (def.errorStyle === "lemonade_model") {
      out.push('An error answers `{"status": "error", "message", "code", "error": {"message", "type", "code", "param", "requested_model"}}`: `code` is from the table; for an error naming the model (`model_not_found`, `model_not_supported`, `slots_pinned_error`, `model_load_error`) `type` is the code too, `param` is `model` and `requested_model` the name the request gave.', "");
    }
    // A table whose rows carry no code has no Code column, as on the contract's pages.
    if (errors.every((e) => !e.code)) {
      out.push("| Status | When |", "|--------|------|");
      for (const e of errors) out.push(`| \`${e.status}\` | ${escapeCell(e.when)} |`);
    } else {
      out.push("| Status | Code | When |", "|--------|------|------|");
      for (const e of errors) out.push(`| \`${e.status}\` | ${e.code ? `\`${e.code}\`` : ""} | ${escapeCell(e.when)} |`);
    }
    out.push("");
  }
  return out.join("\n").replace(/\n{3,}/g, "\n\n").trimEnd();
}

const errorTable = (rows: ErrorRow[]) => [
  "| Status | Code | When |",
  "|--------|------|------|",
  ...rows.map((e) => `| \`${e.status}\` | ${e.code ? `\`${e.code}\`` : ""} | ${escapeCell(e.when)} |`),
];

/** The errors every route can answer, outside the tables of the routes themselves, and on a page
 * whose routes pass the backend's errors on, what those are. */
export function renderAnyRouteErrors(page: DocPage, defs: EndpointDef[]): string {
  const shape = page === "ollama" ? "The `/api/*` routes answer them as `{\"error\": \"<message>\"}`, with no code." : "Each answers in its route's error shape.";
  const out = ["## Errors any route can answer", "", `Beside each route's own table, any route can answer these. ${shape}`, "", ...errorTable(ANY_ROUTE_ERRORS)];
  if (defs.some((d) => documentedErrors(d).includes(E.backendError))) {
    out.push(
      "",
      "Where a route's table lists the backend's own error, it is one of these, answered with the backend's status; `details` carries the backend's body.",
      "",
      ...errorTable(BACKEND_ERRORS),
    );
  }
  return out.join("\n");
}

export function renderSummary(page: DocPage, defs: EndpointDef[]): string {
  const link = (d: EndpointDef) => `[\`${docPath(d)}\`](${anchor(d)})`;
  if (page === "ollama") {
    return [
      "| Method | Endpoint | Status | Description |",
      "|--------|----------|--------|-------------|",
      ...defs.map((d) => `| \`${d.method}\` | ${link(d)} | ${SUMMARY_STATUS[d.availability]} | ${d.summary} |`),
    ].join("\n");
  }
  if (page === "openai") {
    return [
      "| Method | Endpoint | Description | Modality |",
      "|--------|----------|-------------|----------|",
      ...defs.map((d) => `| \`${d.method}\` | ${link(d)} | ${d.summary} | ${d.modality ?? "n/a"} |`),
    ].join("\n");
  }
  return [
    "| Method | Endpoint | Description |",
    "|--------|----------|-------------|",
    ...defs.map((d) => `| \`${d.method}\` | ${link(d)} | ${d.summary} |`),
  ].join("\n");
}

const BLOCK = /<!-- BEGIN GENERATED: ([\w.]+) -->\n[\s\S]*?<!-- END GENERATED: \1 -->/g;

function wrap(id: string, content: string): string {
  return `<!-- BEGIN GENERATED: ${id} -->\n${content}\n<!-- END GENERATED: ${id} -->`;
}

/** The page's text with every block rewritten and missing blocks appended; `problems` lists drift. */
export function renderPage(page: DocPage, current: string | null, problems: string[]): string {
  const defs = endpoints.filter((d) => d.page === page);
  const blocks = new Map<string, string>([
    [`${page}.summary`, renderSummary(page, defs)],
    [`${page}.errors`, renderAnyRouteErrors(page, defs)],
  ]);
  for (const d of defs) {
    if (blocks.has(d.id)) throw new Error(`duplicate block id ${d.id}`);
    blocks.set(d.id, renderEndpoint(d));
  }
  let text = current ?? `# ${PAGE_TITLES[page]}\n\nThis page is maintained by \`bun run docs\`: text outside the GENERATED blocks is hand-written.\n`;
  const seen = new Set<string>();
  text = text.replace(BLOCK, (_block, id: string) => {
    seen.add(id);
    const content = blocks.get(id);
    if (content === undefined) {
      problems.push(`${page}.md: block ${id} has no definition in spec/`);
      return "";
    }
    return wrap(id, content);
  });
  for (const [id, content] of blocks) {
    if (!seen.has(id)) {
      problems.push(`${page}.md: block ${id} is missing`);
      text = text.trimEnd() + "\n\n" + wrap(id, content) + "\n";
    }
  }
  return text.replace(/\n{3,}/g, "\n\n");
}

/** Brings the pages in `docsDir` up to date with the spec, or with `check` only finds where they
 * are not: what is out of date. */
export function updateDocs(check: boolean, docsDir: string): { pages: number; problems: string[] } {
  const pages = [...new Set(endpoints.map((d) => d.page))];
  const problems: string[] = [];
  for (const page of pages) {
    const file = join(docsDir, `${page}.md`);
    const current = existsSync(file) ? readFileSync(file, "utf8") : null;
    const pageProblems: string[] = [];
    const next = renderPage(page, current, pageProblems);
    if (next !== current) {
      if (pageProblems.length === 0) pageProblems.push(`${page}.md: generated blocks are stale`);
      if (!check) writeFileSync(file, next);
    }
    problems.push(...pageProblems);
  }
  return { pages: pages.length, problems };
}

function main(check: boolean, docsDir: string): number {
  const { pages, problems } = updateDocs(check, docsDir);
  if (check && problems.length) {
    console.error(problems.join("\n") + "\n\ngenerated-docs/ is out of date with spec/: run `bun run docs` and commit.");
    return 1;
  }
  console.log(check ? "generated-docs/ matches spec/." : `generated-docs/ written (${pages} pages).`);
  return 0;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const dirAt = args.indexOf("--dir");
  process.exit(main(args.includes("--check"), dirAt >= 0 ? args[dirAt + 1]! : DEFAULT_DOCS_DIR));
}
