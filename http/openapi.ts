// The OpenAPI 3.1 document, built from spec/ alone: the same definitions that validate requests
// and render the markdown docs. (@elysiajs/openapi infers request bodies from Elysia's parsers,
// and our JSON-whatever-the-Content-Type parser left its bodies empty, so we render it ourselves.)
import { OptionalKind, type TSchema } from "@sinclair/typebox";
import { LemonadeError, OllamaError, OpenAIError } from "../spec/schemas.ts";
import { documentedErrors, endpoints, mountedPaths, type EndpointDef } from "../spec/index.ts";
import type { Json } from "../lib/json.ts";

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

function operation(def: EndpointDef): Json {
  const errorSchema = def.errorStyle === "ollama" ? OllamaError : def.errorStyle === "lemonade" ? LemonadeError : OpenAIError;
  const responses: Json = {};
  if (def.method === "WS") {
    responses["101"] = { description: "Switching Protocols: the WebSocket session begins" };
  } else {
    responses["200"] = {
      description: "Success",
      ...(def.contentType
        ? { content: { [def.contentType.split(";")[0]!]: { schema: { type: "string" } } } }
        : def.response
          ? { content: { "application/json": { schema: def.response } } }
          : {}),
    };
  }
  for (const row of documentedErrors(def)) {
    const key = String(row.status);
    const prior = responses[key] as Json | undefined;
    responses[key] = {
      description: prior ? `${prior.description}; ${row.when}` : row.when,
      content: { "application/json": { schema: errorSchema } },
    };
  }
  if (def.access !== "open") {
    responses["401"] ??= {
      description: "The API key the route needs is missing or wrong",
      content: { "application/json": { schema: errorSchema } },
    };
  }
  const op: Json = {
    operationId: def.id,
    summary: def.summary,
    description: def.description,
    tags: [def.page],
    parameters: [...parameters(def.params, "path"), ...parameters(def.query, "query")],
    responses,
  };
  if (def.access !== "open") op.security = [{ bearer: [] }];
  if (def.body && def.method !== "WS") {
    op.requestBody = { required: !(OptionalKind in def.body), content: { "application/json": { schema: def.body } } };
  }
  return op;
}

export function openApiDocument(version: string): Json {
  const paths: Record<string, Json> = {};
  for (const def of endpoints) {
    const op = operation(def);
    mountedPaths(def).forEach((path, i) => {
      const key = path.replace(/:(\w+)/g, "{$1}");
      const method = def.method === "WS" ? "get" : def.method.toLowerCase();
      // operationId must be unique: the first mount keeps the id, the other prefixes are suffixed.
      (paths[key] ??= {})[method] = i === 0 ? op : { ...op, operationId: `${def.id}@${key}` };
      if (def.head) paths[key]!.head = { ...op, operationId: `${def.id}.head@${key}`, summary: `${def.summary} (headers only)` };
    });
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Lemonade Server",
      version,
      description: "Local AI server speaking the OpenAI, Ollama, Anthropic, MCP and Lemonade APIs.",
    },
    servers: [{ url: "http://localhost:13305" }],
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    paths,
  };
}

/** The interactive reference page (Scalar, loaded from its CDN by the browser). */
/** The interactive reference: Swagger UI from the server's own files (http/routes/web.ts). */
export function docsPage(): string {
  return `<!doctype html>
<html lang="en">
  <head>
    <title>Lemonade Server API</title>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <link rel="stylesheet" href="/docs/assets/swagger-ui.css" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="/docs/assets/swagger-ui-bundle.js"></script>
    <script src="/docs/assets/init.js"></script>
  </body>
</html>
`;
}
