// API-key and browser-origin checks. Which key a route needs comes from its spec (`access`).
import { headerApiKey } from "../lib/api-key.ts";
import type { Access } from "../spec/endpoint.ts";

export interface Keys {
  apiKey: string | null;
  adminApiKey: string | null;
}

/** The key a request presents: `Authorization: Bearer`, Anthropic's `x-api-key`, or `?api_key=`
 * (browsers cannot set headers on a WebSocket). */
export function presentedKey(request: Request, url: URL): string | null {
  return headerApiKey(request.headers) ?? url.searchParams.get("api_key") ?? subprotocolKey(request);
}

/** The key a browser WebSocket sends as a subprotocol, `bearer.<base64url key>` (browsers cannot
 * set an Authorization header on a WebSocket). */
export function bearerSubprotocol(request: Request): string | null {
  const offered = request.headers.get("sec-websocket-protocol");
  return offered?.split(",").map((p) => p.trim()).find((p) => p.startsWith("bearer.")) ?? null;
}

/** Lemonade's own WebSocket subprotocol, which its clients offer beside a `bearer.<key>` entry. */
export const LEMONADE_SUBPROTOCOL = "lemonade-realtime";

/** The subprotocol an upgrade is answered with: `lemonade-realtime` when offered (a key offered
 * beside it is not echoed back), else the `bearer.<key>` entry when that is all the client
 * offered something for, else none. */
export function answeredSubprotocol(request: Request): string | null {
  const offered = request.headers.get("sec-websocket-protocol")?.split(",").map((p) => p.trim()) ?? [];
  if (offered.includes(LEMONADE_SUBPROTOCOL)) return LEMONADE_SUBPROTOCOL;
  return bearerSubprotocol(request);
}

function subprotocolKey(request: Request): string | null {
  const protocol = bearerSubprotocol(request);
  if (!protocol) return null;
  try {
    return Buffer.from(protocol.slice("bearer.".length), "base64url").toString("utf8");
  } catch {
    return null;
  }
}

/** Compares keys in time that does not depend on where they differ (node:crypto's
 * timingSafeEqual would cost the idle server ~6 MB of resident memory for this one call). */
function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  if (x.length !== y.length) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

/** Whether a request with `key` may use a route of the given access class. The admin key opens
 * every route; the API key opens everything but `/internal/*` once an admin key is set. */
export function isAllowed(access: Access, keys: Keys, key: string | null): boolean {
  const isAdmin = keys.adminApiKey !== null && key !== null && same(key, keys.adminApiKey);
  const isUser = keys.apiKey !== null && key !== null && same(key, keys.apiKey);
  switch (access) {
    case "open":
      return true;
    case "api":
    case "metrics":
      return keys.apiKey === null || isUser || isAdmin;
    case "telemetry":
      return key === null || keys.apiKey === null || isUser || isAdmin;
    case "admin":
      if (keys.adminApiKey !== null) return isAdmin;
      return keys.apiKey === null || isUser;
  }
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

const WEB_SCHEMES = new Set(["http:", "https:", "ws:", "wss:"]);

const isLoopbackName = (name: string) =>
  name === "localhost" || name.endsWith(".localhost") || name === "[::1]" || name === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);

/** Whether a server bound to `bound` answers a request whose `Host` header is `host`. A
 * loopback-bound server answers loopback names only (and the allow-list): a page on another site
 * whose name was pointed at 127.0.0.1 (DNS rebinding) sends its own name as Host. A server bound
 * elsewhere was put on the network on purpose and answers any name. */
export function isHostAllowed(host: string | null, bound: string, allowed: string[]): boolean {
  if (!isLoopbackName(bound.toLowerCase())) return true;
  if (host === null) return false;
  const name = host.toLowerCase().replace(/:\d+$/, "");
  return isLoopbackName(name) || allowed.includes("*") || allowed.includes(name);
}

/** Browser origins allowed to call the server: loopback pages always, others when listed. Requests
 * without an Origin header (curl, SDKs) are not browser cross-origin requests and pass. */
export function isOriginAllowed(origin: string | null, allowed: string[]): boolean {
  if (origin === null) return true;
  if (allowed.includes("*") || allowed.includes(origin)) return true;
  try {
    const url = new URL(origin);
    // Desktop apps' pages (Lemonade's Tauri app, Electron's app://, file://: any scheme that is not
    // the web's) are as local as a loopback page, as Lemonade's server rules it.
    if (!WEB_SCHEMES.has(url.protocol)) return true;
    return LOOPBACK_HOSTS.has(url.hostname) || url.hostname.endsWith(".localhost");
  } catch {
    return false;
  }
}
