// The OpenAPI 3.1 document, built from spec/ alone: the same definitions that validate requests
// and render the markdown docs. (@elysiajs/openapi infers request bodies from Elysia's parsers,
// and our JSON-whatever-the-Content-Type parser left its bodies empty, so we render it ourselves.)
// Every request, response and stream event body, every schema with a `title` and every object
// schema used more than once is emitted once under `components.schemas` and `$ref`ed, so that
// generated clients get named types (`ChatCompletion`, `LoadRequest`, `LemonadeError`).
import { OptionalKind, type TSchema } from "@sinclair/typebox";
import { AnthropicError, LemonadeError, LemonadeModelError, OllamaError, OpenAIError } from "../spec/schemas.ts";
import { documentedErrors, E, endpoints, mountedPaths, type EndpointDef, type ErrorRow, type ErrorStyle } from "../spec/index.ts";
import { LLAMACPP } from "../spec/recipes.ts";
import type { Json } from "../lib/json.ts";

const ERROR_SCHEMAS: Record<ErrorStyle, TSchema> = { openai: OpenAIError, ollama: OllamaError, anthropic: AnthropicError, lemonade: LemonadeError, lemonade_model: LemonadeModelError };

/** Refusals made before any route runs (http/app.ts `onRequest`): every operation can answer them. */
const EVERY_ROUTE_ERRORS: ErrorRow[] = [E.hostNotAllowed, E.originNotAllowed];

/** Families whose names would collide with OpenAI's and Lemonade's (`ollama.chat`): their
 * derived schema names carry the family. */
const PREFIXED_FAMILIES = new Set(["ollama", "anthropic", LLAMACPP, "mcp"]);

const pascal = (s: string) => s.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");

/** `ChatCompletions` for `openai.chat_completions`, `OllamaChat` for `ollama.chat`. */
function baseName(def: EndpointDef): string {
  const dot = def.id.indexOf(".");
  const family = def.id.slice(0, dot);
  return (PREFIXED_FAMILIES.has(family) ? pascal(family) : "") + pascal(def.id.slice(dot + 1));
}

/** A schema's identity for naming: its JSON (TypeBox's symbol keys, such as Optional, left out),
 * so the same definition reached through `T.Optional` or a spread is the same schema. */
const keyOf = (schema: TSchema) => JSON.stringify(schema);

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** The sub-schemas of a schema, with the JSON path step that reaches each. */
function children(schema: Json): [string, TSchema][] {
  const out: [string, TSchema][] = [];
  for (const key of ["properties", "patternProperties"]) {
    if (isObject(schema[key])) for (const [name, s] of Object.entries(schema[key] as Json)) out.push([name, s as TSchema]);
  }
  for (const key of ["items", "additionalProperties", "not"]) if (isObject(schema[key])) out.push([key === "items" ? "item" : key, schema[key] as TSchema]);
  for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"]) {
    if (Array.isArray(schema[key])) (schema[key] as TSchema[]).forEach((s, i) => out.push([`${key}${i}`, s]));
  }
  return out;
}

/** The named schemas and how to emit a schema with `$ref`s to them. */
class SchemaNames {
  private readonly names = new Map<string, string>();
  private readonly taken = new Set<string>();
  readonly schemas: Record<string, Json> = {};

  constructor(roots: [TSchema, string][]) {
    // Each object schema's uses across the whole spec, and where the first one sits.
    const uses = new Map<string, { count: number; schema: TSchema; at: string }>();
    const visit = (schema: TSchema, at: string) => {
      const key = keyOf(schema);
      const seen = uses.get(key);
      if (seen) seen.count++;
      else uses.set(key, { count: 1, schema, at });
      if (seen) return;
      for (const [step, child] of children(schema as Json)) visit(child, at + pascal(step));
    };
    for (const [schema, name] of roots) visit(schema, name);
    for (const [schema, name] of roots) this.assign(schema, name);
    for (const { count, schema, at } of uses.values()) {
      const s = schema as Json;
      if (typeof s.title === "string" || (count > 1 && s.type === "object" && isObject(s.properties))) this.assign(schema, at);
    }
    for (const [key, name] of this.names) this.schemas[name] = this.emit(JSON.parse(key));
  }

  /** Names a schema by its `title`, else by the name its place gives it; the first name kept. */
  private assign(schema: TSchema, fallback: string): void {
    const key = keyOf(schema);
    if (this.names.has(key)) return;
    const wanted = typeof (schema as Json).title === "string" ? ((schema as Json).title as string) : fallback;
    let name = wanted;
    for (let n = 2; this.taken.has(name); n++) name = `${wanted}${n}`;
    this.taken.add(name);
    this.names.set(key, name);
  }

  /** A `$ref` to a named schema. */
  ref(schema: TSchema): Json {
    const name = this.names.get(keyOf(schema));
    return name ? { $ref: `#/components/schemas/${name}` } : this.emit(schema);
  }

  /** The schema as JSON with its named sub-schemas `$ref`ed. */
  emit(schema: TSchema): Json {
    const out: Json = {};
    for (const [key, value] of Object.entries(schema as Json)) {
      if (key === "properties" || key === "patternProperties") {
        out[key] = Object.fromEntries(Object.entries(value as Json).map(([name, s]) => [name, this.sub(s as TSchema)]));
      } else if ((key === "items" || key === "additionalProperties" || key === "not") && isObject(value)) {
        out[key] = this.sub(value as TSchema);
      } else if ((key === "anyOf" || key === "oneOf" || key === "allOf" || key === "prefixItems") && Array.isArray(value)) {
        out[key] = (value as TSchema[]).map((s) => this.sub(s));
      } else {
        out[key] = value;
      }
    }
    return out;
  }

  private sub(schema: TSchema): Json {
    return this.names.has(keyOf(schema)) ? this.ref(schema) : this.emit(schema);
  }
}

/** Each definition's bodies, named from its id unless they carry a `title`. */
function namedRoots(): [TSchema, string][] {
  const roots: [TSchema, string][] = Object.values(ERROR_SCHEMAS).map((s) => [s, (s as Json).title as string]);
  for (const def of endpoints) {
    if (def.method === "WS") continue;
    const base = baseName(def);
    if (def.body) roots.push([def.body, `${base}Request`]);
    if (def.response) roots.push([def.response, `${base}Response`]);
    if (def.stream) roots.push([def.stream.event, `${base}Event`]);
  }
  return roots;
}

const TAGS: Record<EndpointDef["page"], string> = {
  openai: "OpenAI-compatible inference: chat, completions, responses, embeddings, audio, images, models",
  anthropic: "Anthropic's Messages API, adapted onto chat",
  [LLAMACPP]: "llama.cpp's own endpoints: rerank, slots, tokenize",
  ollama: "Ollama-compatible endpoints",
  lemonade: "Lemonade's own endpoints: models' lifecycle, downloads, backends, health, system, internal",
  mcp: "The Model Context Protocol (JSON-RPC over HTTP)",
};

const ALIAS_TAG = ": other prefixes";

/** Who may call: a bearer key, or the same key as `x-api-key` (http/auth.ts `presentedKey`);
 * `{}`: the key is needed only once the server is started with one. */
const SECURITY: Record<EndpointDef["access"], Json[]> = {
  api: [{ apiKey: [] }, { xApiKey: [] }, {}],
  admin: [{ adminKey: [] }, { xApiKey: [] }, {}],
  metrics: [{ apiKey: [] }, { adminKey: [] }, { xApiKey: [] }, {}],
  telemetry: [{ apiKey: [] }, { adminKey: [] }, {}],
  open: [],
};

function parameters(schema: TSchema | undefined, where: "query" | "path"): Json[] {
  const props = (schema as Json | undefined)?.properties as Record<string, TSchema & Json> | undefined;
  if (!props) return [];
  const required = new Set(((schema as Json).required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, s]) => ({
    name,
    in: where,
    required: where === "path" || required.has(name),
    description: s.description,
    schema: s,
  }));
}

/** The path's parameters: the definition's, and a string for any placeholder it leaves out. */
function pathParameters(def: EndpointDef, path: string): Json[] {
  const declared = parameters(def.params, "path");
  const names = new Set(declared.map((p) => p.name));
  for (const [, name] of path.matchAll(/\{(\w+)\}/g)) {
    if (!names.has(name!)) declared.push({ name, in: "path", required: true, schema: { type: "string" } });
  }
  return declared;
}

/** The definition's example answer, when it is a JSON success. */
function responseExample(def: EndpointDef): Json {
  const example = def.example;
  if (!example?.response || example.responseLang === "text" || (example.status && !example.status.startsWith("2"))) return {};
  try {
    return { example: JSON.parse(example.response) };
  } catch {
    return {};
  }
}

function success(def: EndpointDef, names: SchemaNames, full: boolean): Json {
  const content: Json = {};
  if (def.contentType) {
    const type = def.contentType.split(";")[0]!;
    content[type] = { schema: type.startsWith("text/") ? { type: "string" } : { type: "string", format: "binary" } };
  } else if (def.response) {
    content["application/json"] = { schema: names.ref(def.response), ...(full ? responseExample(def) : {}) };
  }
  if (def.stream) {
    content[def.stream.contentType] = { schema: names.ref(def.stream.event) };
  }
  const streamed = def.stream?.contentType === "text/event-stream" ? "server-sent events, each `data:` one event" : "NDJSON, each line one event";
  return { description: def.stream ? `Success; a request that streams is answered with ${streamed}` : "Success", ...(Object.keys(content).length ? { content } : {}) };
}

/** The shared error answers, one per error body (`components.responses`): each operation's
 * status refers to one, with the rows' own description beside the `$ref`. */
function errorResponses(names: SchemaNames): Json {
  return Object.fromEntries(
    Object.values(ERROR_SCHEMAS).map((schema) => {
      const name = (schema as Json).title as string;
      return [name, { description: `An error, in the ${name} shape`, content: { "application/json": { schema: names.ref(schema) } } }];
    }),
  );
}

/** The operation at a definition's first path (`full`), or at its other prefixes and aliases:
 * the same schemas, with the prose, examples and error rows left to the first. */
function operation(def: EndpointDef, names: SchemaNames, full: boolean): Json {
  const error = `#/components/responses/${(ERROR_SCHEMAS[def.errorStyle] as Json).title as string}`;
  const responses: Json = { "200": success(def, names, full) };
  const rows = [...documentedErrors(def), ...EVERY_ROUTE_ERRORS];
  if (def.access !== "open") rows.push(E.unauthorized);
  for (const row of rows.sort((a, b) => a.status - b.status)) {
    const key = String(row.status);
    const prior = responses[key] as Json | undefined;
    responses[key] = full ? { $ref: error, description: prior ? `${prior.description}; ${row.when}` : row.when } : { $ref: error };
  }
  const first = `${def.method} ${mountedPaths(def)[0]!.replace(/:(\w+)/g, "{$1}")}`;
  const op: Json = {
    operationId: def.id,
    summary: def.summary,
    description: full ? def.description : `The same as \`${first}\`, documented there.`,
    tags: [full ? def.page : `${def.page}${ALIAS_TAG}`],
    responses,
    security: SECURITY[def.access],
  };
  if (def.body) {
    const example = !full || def.example?.body === undefined ? {} : { example: def.example.body };
    op.requestBody = { required: !(OptionalKind in def.body), content: { "application/json": { schema: names.ref(def.body), ...example } } };
  }
  return op;
}

/** A WebSocket route, kept out of `paths` so that HTTP client generators skip it: its paths and
 * the messages each side sends, written out in full (linters do not follow `$ref`s from here). */
function websocket(def: EndpointDef): Json {
  const plain = (schema: TSchema) => JSON.parse(JSON.stringify(schema)) as Json;
  return {
    summary: def.summary,
    description: def.description,
    paths: mountedPaths(def),
    security: SECURITY[def.access],
    ...(def.body ? { clientMessages: plain(def.body) } : {}),
    ...(def.response ? { serverMessages: plain(def.response) } : {}),
  };
}

/** A URL-safe operationId for a definition's other mounts: `openai.chat_completions.api_v1`. */
const mountId = (id: string, path: string) => `${id}.${path.replace(/[^A-Za-z0-9]+/g, "_").replace(/^_|_$/g, "")}`;

export function openApiDocument(version: string): Json {
  const names = new SchemaNames(namedRoots());
  const paths: Record<string, Json> = {};
  const sockets: Record<string, Json> = {};
  for (const def of endpoints) {
    if (def.method === "WS") {
      sockets[def.id] = websocket(def);
      continue;
    }
    // The other prefixes and alias paths are listed apart, so the reference reads as one API.
    const [primary, other] = [operation(def, names, true), operation(def, names, false)];
    mountedPaths(def).forEach((path, i) => {
      const key = path.replace(/:(\w+)/g, "{$1}");
      const params = pathParameters(def, key).concat(parameters(def.query, "query"));
      const [op, id] = i === 0 ? [primary, def.id] : [other, mountId(def.id, key)];
      (paths[key] ??= {})[def.method.toLowerCase()] = { ...op, operationId: id, parameters: params };
      if (def.head) paths[key]!.head = { ...op, operationId: `${id}.head`, summary: `${def.summary} (headers only)`, parameters: params };
    });
  }
  const pages = [...new Set(endpoints.map((d) => d.page))];
  const socketList = Object.values(sockets).map((s) => `- \`${(s.paths as string[])[0]}\`: ${s.summary}`).join("\n");
  return {
    openapi: "3.1.0",
    info: {
      title: "Lemonade Server",
      version,
      description: `Local AI server speaking the OpenAI, Ollama, Anthropic, MCP and Lemonade APIs.\n\nWebSocket routes (described under \`x-websockets\`, with their message schemas):\n\n${socketList}`,
    },
    // Relative: the document is right on whatever host and port serves it.
    servers: [{ url: "/", description: "The server this document is served from" }],
    tags: [
      ...pages.map((name) => ({ name, description: TAGS[name] })),
      ...pages
        .filter((name) => endpoints.some((d) => d.page === name && d.method !== "WS" && mountedPaths(d).length > 1))
        .map((name) => ({ name: `${name}${ALIAS_TAG}`, description: `The ${name} operations again, under their other prefixes (\`/api/v1\`, \`/v0\`, \`/api/v0\`) and alias paths` })),
    ],
    components: {
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "`LEMONADE_API_KEY`, needed once the server is started with one" },
        adminKey: { type: "http", scheme: "bearer", description: "`LEMONADE_ADMIN_API_KEY`, needed once the server is started with one" },
        xApiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "Either key in the `x-api-key` header, as Anthropic's clients send it" },
      },
      schemas: names.schemas,
      responses: errorResponses(names),
    },
    paths,
    "x-websockets": sockets,
  };
}
