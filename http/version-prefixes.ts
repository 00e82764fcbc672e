// The versioned routes answer under four prefixes (/v1, /api/v1, /v0, /api/v0), and Elysia binds
// each HTTP route once, under /v1: a request under another prefix is handed to the same app with its
// path under /v1 (method, headers, query, body and abort signal kept), and the app's route table
// looks such a path up under /v1. Bound four times, Elysia's per-route state and the table cost
// about 0.6 MB of the idle server's RSS (bench memory), for one route's behaviour. WebSocket
// routes stay bound under every prefix: an upgrade needs the request the socket came with.
import { mountedPaths, VERSION_PREFIXES, type EndpointDef } from "../spec/endpoint.ts";

/** The prefix the versioned HTTP routes are bound under: the one this server's own clients use. */
export const BOUND_PREFIX = VERSION_PREFIXES[0];

/** The paths a definition's HTTP route is bound at in Elysia. */
export function boundPaths(def: EndpointDef): string[] {
  if (def.mount !== "versioned") return mountedPaths(def);
  return [def.path, ...(def.aliasPaths ?? [])].map((path) => BOUND_PREFIX + path);
}

const OTHERS = VERSION_PREFIXES.filter((prefix) => prefix !== BOUND_PREFIX);

/** A path under another prefix as the same path under /v1 (any other path as it is). */
export function underBoundPrefix(pathname: string): string {
  const prefix = OTHERS.find((p) => pathname.startsWith(`${p}/`));
  return prefix ? BOUND_PREFIX + pathname.slice(prefix.length) : pathname;
}

/** The path a request was asked at, before a prefix was rewritten: what errors name and style by. */
const askedAt = new WeakMap<Request, string>();

export function askedPath(request: Request, url?: URL): string {
  return askedAt.get(request) ?? (url ?? new URL(request.url)).pathname;
}

type Handle = (request: Request) => Response | Promise<Response>;

/** Bun.serve routes that answer every other prefix through `handle` (the app's own fetch). */
export function prefixRoutes(handle: Handle): Record<string, Handle> {
  const forward: Handle = (request) => {
    if (request.headers.get("upgrade")?.toLowerCase() === "websocket") return handle(request);
    const url = new URL(request.url);
    const asked = url.pathname;
    url.pathname = underBoundPrefix(asked);
    const rewritten = new Request(url.href, request);
    askedAt.set(rewritten, asked);
    return handle(rewritten);
  };
  return Object.fromEntries(OTHERS.map((prefix) => [`${prefix}/*`, forward]));
}
