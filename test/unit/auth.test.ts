import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { isHostAllowed } from "../../http/auth.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const API = "user-key-123";
const ADMIN = "admin-key-456";

/** Opens a WebSocket and resolves with whether it opened (true) or was refused (false). */
function wsOpens(url: string, headers?: Record<string, string>): Promise<boolean> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, headers ? ({ headers } as any) : undefined);
    ws.onopen = () => {
      ws.close();
      resolve(true);
    };
    ws.onerror = () => resolve(false);
  });
}

describe("with LEMONADE_API_KEY and LEMONADE_ADMIN_API_KEY set", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ LEMONADE_API_KEY: API, LEMONADE_ADMIN_API_KEY: ADMIN });
  });
  afterAll(() => server.close());

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.url}${path}`, { headers });

  test("API routes refuse a missing or wrong key with 401 JSON", async () => {
    for (const path of ["/v1/health", "/api/v0/system-info", "/api/version"]) {
      for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: API }] as Record<string, string>[]) {
        const res = await get(path, headers);
        expect(res.status).toBe(401);
        const body = await res.json();
        expect(body.error).toBeDefined();
      }
    }
  });

  test("API routes accept the key as Bearer, as x-api-key, and accept the admin key", async () => {
    expect((await get("/v1/health", { authorization: `Bearer ${API}` })).status).toBe(200);
    expect((await get("/v1/health", { "x-api-key": API })).status).toBe(200);
    expect((await get("/v1/health", { authorization: `Bearer ${ADMIN}` })).status).toBe(200);
  });

  test("Ollama routes answer 401 in Ollama's error shape", async () => {
    const body = await (await get("/api/version")).json();
    expect(typeof body.error).toBe("string");
  });

  test("/live is always open", async () => {
    expect((await get("/live")).status).toBe(200);
  });

  test("/metrics takes either key", async () => {
    expect((await get("/metrics")).status).toBe(401);
    expect((await get("/metrics", { authorization: `Bearer ${API}` })).status).toBe(200);
    expect((await get("/metrics", { authorization: `Bearer ${ADMIN}` })).status).toBe(200);
  });

  test("/internal/* takes only the admin key", async () => {
    expect((await get("/internal/aliases")).status).toBe(401);
    expect((await get("/internal/aliases", { authorization: `Bearer ${API}` })).status).toBe(401);
    expect((await get("/internal/aliases", { authorization: `Bearer ${ADMIN}` })).status).toBe(200);
    const del = await fetch(`${server.url}/internal/aliases/x`, { method: "DELETE", headers: { authorization: `Bearer ${API}` } });
    expect(del.status).toBe(401);
  });

  test("auth is checked before the body is parsed", async () => {
    const res = await fetch(`${server.url}/internal/aliases`, { method: "POST", body: "{not json" });
    expect(res.status).toBe(401);
  });

  test("the log-stream WebSocket needs the key, by ?api_key= or header", async () => {
    const ws = server.url.replace("http", "ws") + "/logs/stream";
    expect(await wsOpens(ws)).toBe(false);
    expect(await wsOpens(`${ws}?api_key=wrong`)).toBe(false);
    expect(await wsOpens(`${ws}?api_key=${API}`)).toBe(true);
    expect(await wsOpens(ws, { authorization: `Bearer ${API}` })).toBe(true);
  });

  test("a browser's WebSocket key as a bearer.<base64url> subprotocol is accepted, and the protocol echoed", async () => {
    const url = server.url.replace("http", "ws") + "/logs/stream";
    const open = (protocol: string) =>
      new Promise<string | false>((resolve) => {
        const ws = new WebSocket(url, [protocol]);
        ws.onopen = () => {
          resolve(ws.protocol);
          ws.close();
        };
        ws.onerror = () => resolve(false);
      });
    const good = `bearer.${Buffer.from(API).toString("base64url")}`;
    expect(await open(good)).toBe(good);
    expect(await open(`bearer.${Buffer.from("wrong").toString("base64url")}`)).toBe(false);
  });
});

describe("with only LEMONADE_ADMIN_API_KEY set", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ LEMONADE_ADMIN_API_KEY: ADMIN });
  });
  afterAll(() => server.close());

  test("API routes and /metrics are open, /internal/* needs the admin key", async () => {
    expect((await fetch(`${server.url}/v1/health`)).status).toBe(200);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
    expect((await fetch(`${server.url}/internal/aliases`)).status).toBe(401);
    const ok = await fetch(`${server.url}/internal/aliases`, { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(ok.status).toBe(200);
  });
});

describe("with no keys set", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test("every route is open, the WebSocket too", async () => {
    expect((await fetch(`${server.url}/v1/health`)).status).toBe(200);
    expect((await fetch(`${server.url}/internal/aliases`)).status).toBe(200);
    expect(await wsOpens(server.url.replace("http", "ws") + "/logs/stream")).toBe(true);
  });
});

describe("browser origins", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ LEMONADE_ALLOWED_ORIGINS: "https://app.example" });
  });
  afterAll(() => server.close());

  const preflight = (origin: string) =>
    fetch(`${server.url}/v1/health`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "GET", "access-control-request-headers": "authorization" },
    });

  test("a loopback page and a listed origin get a CORS preflight answer", async () => {
    for (const origin of ["http://localhost:5173", "http://127.0.0.1:8080", "https://app.example", "tauri://localhost", "http://tauri.localhost", "app://lemonade"]) {
      const res = await preflight(origin);
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe(origin);
      expect(res.headers.get("access-control-allow-headers")).toContain("authorization");
    }
    const res = await fetch(`${server.url}/v1/health`, { headers: { origin: "https://app.example" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example");
  });

  test("another site's page is refused, preflight and request alike", async () => {
    expect((await preflight("https://evil.example")).status).toBe(403);
    const res = await fetch(`${server.url}/v1/health`, { headers: { origin: "https://evil.example" } });
    expect(res.status).toBe(403);
    expect((await res.json()).code).toBe("origin_not_allowed");
  });
});

describe("Host names on a loopback-bound server (DNS rebinding)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ LEMONADE_ALLOWED_HOSTS: "lemonade.lan" });
  });
  afterAll(() => server.close());
  const port = () => new URL(server.url).port;

  test("a name pointed at loopback by another site is refused 403 on every route, with or without the port", async () => {
    for (const path of ["/v1/models", "/internal/aliases", "/v1/system-info", "/metrics", "/v1/models/x/files?include_paths=true", "/api/tags"]) {
      for (const host of [`evil.example:${port()}`, "evil.example"]) {
        const res = await fetch(`${server.url}${path}`, { headers: { host } });
        expect(res.status, `${path} ${host}`).toBe(403);
        expect(JSON.stringify(await res.json())).toContain("not allowed");
      }
    }
  });

  test("loopback names and listed names are served", async () => {
    for (const host of [`127.0.0.1:${port()}`, `localhost:${port()}`, "localhost", `[::1]:${port()}`, `lemonade.lan:${port()}`, `app.localhost:${port()}`]) {
      expect((await fetch(`${server.url}/v1/models`, { headers: { host } })).status, host).toBe(200);
    }
  });

  test("WebSockets too", async () => {
    const ws = server.url.replace("http", "ws");
    expect(await wsOpens(`${ws}/logs/stream`, { host: "evil.example" })).toBe(false);
    expect(await wsOpens(`${ws}/logs/stream`)).toBe(true);
  });
});

test("isHostAllowed: a server bound to the network answers any name; a loopback one needs a Host", () => {
  expect(isHostAllowed("evil.example", "0.0.0.0", [])).toBe(true);
  expect(isHostAllowed(null, "127.0.0.1", [])).toBe(false);
  expect(isHostAllowed("anything", "localhost", ["*"])).toBe(true);
});
