// Assembles the HTTP app: browser-origin and API-key checks ahead of routing, the route families,
// request metrics, and one error path that answers in the matched definition's error style.
import "./production.ts";
import { Elysia } from "elysia";
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import type { EndpointDef, ErrorStyle } from "../spec/endpoint.ts";
import type { ServerContext } from "../runtime/context.ts";
import { isAllowed, isHostAllowed, isOriginAllowed, presentedKey } from "./auth.ts";
import { Binder } from "./bind.ts";
import { DEFAULT_MAX_DEPTH } from "./body.ts";
import { errorResponse, toApiError, unmatchedErrorStyle } from "./errors.ts";
import { anthropicRoutes } from "./routes/anthropic.ts";
import { backendRoutes } from "./routes/backends.ts";
import { classifyRoutes } from "./routes/classify.ts";
import { docsRoutes } from "./routes/docs.ts";
import { downloadRoutes } from "./routes/downloads.ts";
import { generationRoutes } from "./routes/generation.ts";
import { imageRoutes } from "./routes/images.ts";
import { internalRoutes } from "./routes/internal.ts";
import { jobRoutes } from "./routes/jobs.ts";
import { lifecycleRoutes } from "./routes/lifecycle.ts";
import { cloudRoutes } from "./routes/cloud.ts";
import { webRoutes } from "./routes/web.ts";
import { llamacppRoutes } from "./routes/llamacpp.ts";
import { logStreamRoute } from "./routes/logs.ts";
import { mcpRoutes } from "./routes/mcp.ts";
import { modelRoutes } from "./routes/models.ts";
import { ollamaRoutes } from "./routes/ollama.ts";
import { openaiRoutes } from "./routes/openai.ts";
import { operationsRoutes } from "./routes/operations.ts";
import { tuningRoutes } from "./routes/tuning.ts";
import { realtimeRoutes } from "./routes/realtime.ts";
import { spansStreamRoute } from "./routes/spans.ts";
import { askedPath, boundPaths, prefixRoutes, underBoundPrefix } from "./version-prefixes.ts";

/** The definitions a request path belongs to, from what was bound (exact paths first): one per method. */
function routeTable(defs: readonly EndpointDef[]): (pathname: string) => EndpointDef[] {
  const exact = new Map<string, EndpointDef[]>();
  const patterns: [RegExp, EndpointDef][] = [];
  for (const def of defs) {
    for (const path of boundPaths(def)) {
      if (path.includes(":")) patterns.push([new RegExp(`^${path.replace(/:[^/]+/g, "[^/]+")}/?$`), def]);
      else exact.set(path, [...(exact.get(path) ?? []), def]);
    }
  }
  return (asked) => {
    const pathname = underBoundPrefix(asked);
    const trimmed = pathname.length > 1 && pathname.endsWith("/") ? pathname.slice(0, -1) : pathname;
    return exact.get(trimmed) ?? patterns.filter(([re]) => re.test(trimmed)).map(([, def]) => def);
  };
}

/** The methods a path answers (HEAD with GET), for a 405's Allow header. */
function allowedMethods(defs: EndpointDef[]): string[] {
  const methods = new Set(defs.map((d) => (d.method === "WS" ? "GET" : d.method)));
  if (methods.has("GET") || defs.some((d) => d.head)) methods.add("HEAD");
  return [...methods].sort();
}

function corsHeaders(origin: string, request: Request): Record<string, string> {
  return {
    "access-control-allow-origin": origin,
    "access-control-allow-methods": "GET, POST, DELETE, OPTIONS, HEAD",
    "access-control-allow-headers":
      request.headers.get("access-control-request-headers") ?? "authorization, content-type, x-api-key",
    "access-control-max-age": "600",
    // Private Network Access: a public page's preflight to this loopback server asks leave to reach it.
    ...(request.headers.get("access-control-request-private-network") === "true" ? { "access-control-allow-private-network": "true" } : {}),
    vary: "Origin",
  };
}

/** The whole API, or (`websocketsOnly`) just its WebSocket routes, for the dedicated WebSocket port. */
export function createApp(ctx: ServerContext, { websocketsOnly = false } = {}) {
  const keys = { apiKey: ctx.config.apiKey, adminApiKey: ctx.config.adminApiKey };
  const started = new WeakMap<Request, number>();
  let defsOf: (pathname: string) => EndpointDef[] = () => [];
  const defOf = (pathname: string): EndpointDef | undefined => defsOf(pathname)[0];
  const styleOf = (pathname: string): ErrorStyle => defOf(pathname)?.errorStyle ?? unmatchedErrorStyle(pathname);

  const app = new Elysia({ normalize: false })
    .onRequest(({ request, set }) => {
      started.set(request, performance.now());
      ctx.activity.requests++;
      // Every answer depends on the Origin (CORS headers or a refusal), whether one was sent or not,
      // so a shared cache never hands one origin's answer to another.
      set.headers.vary = "Origin";
      const url = new URL(request.url);
      const pathname = askedPath(request, url);
      const host = request.headers.get("host");
      if (!isHostAllowed(host, ctx.config.host, ctx.config.allowedHosts)) {
        return errorResponse(
          ApiError.of(E.hostNotAllowed, `Host ${String(host).slice(0, 100)} is not allowed on a loopback server; add it to LEMONADE_ALLOWED_HOSTS`),
          styleOf(pathname),
        );
      }
      const origin = request.headers.get("origin");
      if (!isOriginAllowed(origin, ctx.config.allowedOrigins)) {
        return errorResponse(
          ApiError.of(E.originNotAllowed, `Origin ${origin} is not allowed; add it to LEMONADE_ALLOWED_ORIGINS`),
          styleOf(pathname),
          { vary: "Origin" },
        );
      }
      if (origin !== null) {
        const headers = corsHeaders(origin, request);
        if (request.method === "OPTIONS") return new Response(null, { status: 204, headers });
        Object.assign(set.headers, headers);
      }
      // Unknown paths need the API key like any other.
      const access = defOf(pathname)?.access ?? "api";
      if (!isAllowed(access, keys, presentedKey(request, url))) {
        const row = access === "admin" && keys.adminApiKey ? E.adminUnauthorized : E.unauthorized;
        const which = row === E.adminUnauthorized ? "LEMONADE_ADMIN_API_KEY" : "LEMONADE_API_KEY";
        return errorResponse(
          ApiError.of(row, `Missing or invalid API key: send ${which} as 'Authorization: Bearer <key>'`),
          styleOf(pathname),
          { "www-authenticate": "Bearer", ...(origin !== null ? corsHeaders(origin, request) : {}) },
        );
      }
    })
    .onError(({ code, error, request, set }) => {
      const pathname = askedPath(request);
      const known = code === "NOT_FOUND" ? defsOf(pathname) : [];
      if (known.length) {
        // A known path asked with another method: 405, naming the ones it answers.
        const allow = allowedMethods(known);
        set.headers.allow = allow.join(", ");
        set.status = 405;
        return errorResponse(
          ApiError.of(E.methodNotAllowed, `${request.method} is not allowed on ${pathname}; use ${allow.join(" or ")}`),
          known[0]!.errorStyle,
          set.headers as Record<string, string>,
        );
      }
      const err = toApiError({ code, error }, pathname, defsOf(pathname).find((d) => d.method === request.method));
      set.status = err.status;
      if (err.status >= 500 && err.status !== 501) ctx.logger.error("Server", `${request.method} ${pathname}: ${err.message}`);
      return errorResponse(err, styleOf(pathname), set.headers as Record<string, string>);
    })
    .onAfterResponse(({ request, route, set }) => {
      const start = started.get(request);
      if (start === undefined) return;
      const labels = { method: request.method, route: route || "unmatched" };
      ctx.metrics.httpRequests.inc({ ...labels, status: String(set.status ?? 200) });
      ctx.metrics.httpDuration.observe(labels, (performance.now() - start) / 1000);
    });

  const binder = new Binder(app, { maxBytes: ctx.config.maxBodyBytes, maxDepth: DEFAULT_MAX_DEPTH });
  if (!websocketsOnly) {
    docsRoutes(binder, ctx);
    webRoutes(binder, ctx);
    lifecycleRoutes(binder, ctx);
    downloadRoutes(binder, ctx);
    classifyRoutes(binder, ctx);
    backendRoutes(binder, ctx);
    operationsRoutes(binder, ctx);
    tuningRoutes(binder, ctx);
    jobRoutes(binder, ctx);
    internalRoutes(binder, ctx);
    cloudRoutes(binder, ctx);
    openaiRoutes(binder, ctx);
    imageRoutes(binder, ctx);
    generationRoutes(binder, ctx);
    llamacppRoutes(binder, ctx);
    anthropicRoutes(binder, ctx);
    mcpRoutes(binder, ctx);
    modelRoutes(binder, ctx);
    ollamaRoutes(binder, ctx);
  }
  realtimeRoutes(binder, ctx);
  logStreamRoute(binder, ctx);
  spansStreamRoute(binder, ctx);
  defsOf = routeTable(binder.bound);
  if (!websocketsOnly) app.config.serve = { ...app.config.serve, routes: { ...app.config.serve?.routes, ...prefixRoutes((request) => app.handle(request)) } };
  return { app, bound: binder.bound };
}
