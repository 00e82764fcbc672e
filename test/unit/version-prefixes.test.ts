// A request under /api/v1, /v0 or /api/v0 reaches the route bound under /v1 as the same request:
// method, headers, query, body and the client's abort signal; the path it was asked at is kept for
// errors; a WebSocket upgrade is handed on as it came.
import { expect, test } from "bun:test";
import { askedPath, BOUND_PREFIX, boundPaths, prefixRoutes, underBoundPrefix } from "../../http/version-prefixes.ts";
import { operations } from "../../spec/index.ts";

function capture() {
  const seen: Request[] = [];
  const routes = prefixRoutes((request) => {
    seen.push(request);
    return new Response("ok");
  });
  return { seen, routes };
}

test("the versioned routes are bound under /v1 alone; root routes where they are", () => {
  expect(BOUND_PREFIX).toBe("/v1");
  expect(boundPaths(operations.health)).toEqual(["/v1/health"]);
  expect(boundPaths(operations.live)).toEqual(["/live"]);
});

test("a path under another prefix is looked up as the same path under /v1; others as they are", () => {
  expect(underBoundPrefix("/api/v1/models/a")).toBe("/v1/models/a");
  expect(underBoundPrefix("/api/v0/health")).toBe("/v1/health");
  expect(underBoundPrefix("/v0/load")).toBe("/v1/load");
  for (const path of ["/v1/health", "/api/tags", "/api/version", "/v0", "/api/v1", "/v0x/health", "/live"]) expect(underBoundPrefix(path)).toBe(path);
});

test("each other prefix has one route, and it forwards with the path under /v1", async () => {
  const { seen, routes } = capture();
  expect(Object.keys(routes).sort()).toEqual(["/api/v0/*", "/api/v1/*", "/v0/*"]);
  for (const [prefix, asked] of [["/api/v1", "/api/v1/models/a%2Fb"], ["/v0", "/v0/models/a%2Fb"], ["/api/v0", "/api/v0/models/a%2Fb"]] as const) {
    await routes[`${prefix}/*`]!(new Request(`http://127.0.0.1:9/${asked.slice(1)}?show_all=true`));
    const forwarded = seen.at(-1)!;
    expect(forwarded.url).toBe("http://127.0.0.1:9/v1/models/a%2Fb?show_all=true");
    expect(askedPath(forwarded)).toBe(asked);
  }
});

test("the forwarded request keeps the method, headers, body and the client's abort signal", async () => {
  const { seen, routes } = capture();
  const client = new AbortController();
  const body = JSON.stringify({ model_name: "x".repeat(100_000) });
  const original = new Request("http://127.0.0.1:9/api/v1/load", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer k" },
    body,
    signal: client.signal,
  });
  await routes["/api/v1/*"]!(original);
  const forwarded = seen[0]!;
  expect(forwarded.method).toBe("POST");
  expect(forwarded.headers.get("authorization")).toBe("Bearer k");
  expect(await forwarded.text()).toBe(body);
  expect(forwarded.signal.aborted).toBe(false);
  client.abort();
  expect(forwarded.signal.aborted).toBe(true);
});

test("a WebSocket upgrade is handed on as it came (the socket is the request's)", async () => {
  const { seen, routes } = capture();
  const upgrade = new Request("http://127.0.0.1:9/v0/realtime?model=m", { headers: { upgrade: "websocket", connection: "Upgrade" } });
  await routes["/v0/*"]!(upgrade);
  expect(seen[0]).toBe(upgrade);
  expect(askedPath(upgrade)).toBe("/v0/realtime");
});
