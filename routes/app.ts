// Assembles the HTTP app: browser-origin and API-key checks ahead of routing, the route families,
// the OpenAPI document, request metrics, and one error path that answers in each family's shape.
import { Elysia } from "elysia";
import { endpoints, mountedPaths, type Access } from "../spec/index.ts";
import { E } from "../spec/errors.ts";
import { ApiError, errorResponse } from "../server/errors.ts";
import { isAllowed, isOriginAllowed, presentedKey } from "../server/auth.ts";
import type { ServerContext } from "../server/context.ts";
import { errorStyleForPath, toApiError } from "./http-errors.ts";
import { lemonadeRoutes } from "./lemonade.ts";
import { ollamaRoutes } from "./ollama.ts";
import { logStreamRoute } from "./logs.ts";
import { modelRoutes } from "./models.ts";
import { openaiRoutes, speechRoute } from "./openai.ts";
import { llamacppRoutes } from "./llamacpp.ts";
import { anthropicRoutes } from "./anthropic.ts";
import { mcpRoutes } from "./mcp.ts";
import { realtimeRoutes } from "./realtime.ts";
import { docsPage, openApiDocument } from "./openapi.ts";

const DOC_PATHS = new Set(["/openapi.json", "/docs"]);

/** Access class of a request path, from the spec. Unknown paths need the API key like any other. */
function accessTable(): (pathname: string) => Access {
  const exact = new Map<string, Access>();
  const patterns: [RegExp, Access][] = [];
  for (const def of endpoints) {
    for (const path of mountedPaths(def)) {
      if (path.includes(":")) patterns.push([new RegExp(`^${path.replace(/:[^/]+/g, "[^/]+")}/?$`), def.access]);
      else exact.set(path, def.access);
    }
  }
  return (pathname) => {
    if (DOC_PATHS.has(pathname)) return "open";
    const trimmed = pathname.length > 1 && pathname.endsWith("/") ? pathname.slice(0, -1) : pathname;
    return exact.get(trimmed) ?? patterns.find(([re]) => re.test(trimmed))?.[1] ?? "api";
  };
}

function corsHeaders(origin: string, request: Request): Record<string, string> {
  return {
    "access-control-allow-origin": origin,
    "access-control-allow-methods": "GET, POST, DELETE, OPTIONS, HEAD",
    "access-control-allow-headers":
      request.headers.get("access-control-request-headers") ?? "authorization, content-type, x-api-key",
    "access-control-max-age": "600",
    vary: "Origin",
  };
}

export function createApp(ctx: ServerContext) {
  const accessOf = accessTable();
  const keys = { apiKey: ctx.config.apiKey, adminApiKey: ctx.config.adminApiKey };
  const started = new WeakMap<Request, number>();

  const app = new Elysia({ normalize: false })
    .onRequest(({ request, set }) => {
      started.set(request, performance.now());
      const url = new URL(request.url);
      const style = errorStyleForPath(url.pathname);
      const origin = request.headers.get("origin");
      if (!isOriginAllowed(origin, ctx.config.allowedOrigins)) {
        return errorResponse(new ApiError(403, "origin_not_allowed", `Origin ${origin} is not allowed; add it to LEMONADE_ALLOWED_ORIGINS`), style);
      }
      if (origin !== null) {
        const headers = corsHeaders(origin, request);
        if (request.method === "OPTIONS") return new Response(null, { status: 204, headers });
        Object.assign(set.headers, headers);
      }
      const access = accessOf(url.pathname);
      if (!isAllowed(access, keys, presentedKey(request, url))) {
        const row = access === "admin" && keys.adminApiKey ? E.adminUnauthorized : E.unauthorized;
        const which = row === E.adminUnauthorized ? "LEMONADE_ADMIN_API_KEY" : "LEMONADE_API_KEY";
        return errorResponse(
          ApiError.of(row, `Missing or invalid API key: send ${which} as 'Authorization: Bearer <key>'`),
          style,
          { "www-authenticate": "Bearer", ...(origin !== null ? corsHeaders(origin, request) : {}) },
        );
      }
    })
    .onError(({ code, error, request, set }) => {
      const { pathname } = new URL(request.url);
      const err = toApiError({ code, error }, pathname);
      set.status = err.status;
      if (err.status >= 500 && err.status !== 501) ctx.logger.error("Server", `${request.method} ${pathname}: ${err.message}`);
      return errorResponse(err, errorStyleForPath(pathname), set.headers as Record<string, string>);
    })
    .onAfterResponse(({ request, route, set }) => {
      const start = started.get(request);
      if (start === undefined) return;
      const labels = { method: request.method, route: route || "unmatched" };
      ctx.metrics.httpRequests.inc({ ...labels, status: String(set.status ?? 200) });
      ctx.metrics.httpDuration.observe(labels, (performance.now() - start) / 1000);
    });

  const openapiJson = JSON.stringify(openApiDocument(ctx.version));
  app.get("/openapi.json", () => new Response(openapiJson, { headers: { "content-type": "application/json" } }));
  app.get("/docs", () => new Response(docsPage(), { headers: { "content-type": "text/html; charset=utf-8" } }));
  lemonadeRoutes(app, ctx);
  openaiRoutes(app, ctx);
  speechRoute(app, ctx);
  llamacppRoutes(app, ctx);
  anthropicRoutes(app, ctx);
  mcpRoutes(app, ctx);
  realtimeRoutes(app, ctx);
  modelRoutes(app, ctx);
  ollamaRoutes(app, ctx);
  logStreamRoute(app, ctx);
  return app;
}
