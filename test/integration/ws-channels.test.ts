// The WebSocket channels' rules on loopback, on the main port and on the WebSocket port: the
// subprotocol answered, the spans channel's access (anonymous upgrade, `auth` messages, admin,
// same key, guest isolation by client session, the admin fallback) and browser origins.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { operations } from "../../spec/index.ts";
import { callerAttributes, type SpanEvent } from "../../observability/span-bus.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const API = "user-key-123";
const ADMIN = "admin-key-456";

interface Client {
  protocol: string;
  send(m: unknown): void;
  next(): Promise<any>;
  close(): void;
}

/** Opens a socket; resolves with a client that queues what it receives, or false when refused. */
function open(url: string, init: { protocols?: string[]; headers?: Record<string, string> } = {}): Promise<Client | false> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, init as any);
    const queue: any[] = [];
    const waiters: ((m: any) => void)[] = [];
    ws.onmessage = (ev) => {
      const msg = JSON.parse(String(ev.data));
      const w = waiters.shift();
      w ? w(msg) : queue.push(msg);
    };
    ws.onopen = () =>
      resolve({
        protocol: ws.protocol,
        send: (m) => ws.send(typeof m === "string" ? m : JSON.stringify(m)),
        next: () =>
          queue.length
            ? Promise.resolve(queue.shift())
            : Promise.race([new Promise<any>((r) => waiters.push(r)), Bun.sleep(5000).then(() => Promise.reject(new Error("no message within 5 s")))]),
        close: () => ws.close(),
      });
    ws.onerror = () => resolve(false);
  });
}

async function opened(url: string, init?: Parameters<typeof open>[1]): Promise<Client> {
  const client = await open(url, init);
  if (!client) throw new Error(`${url} refused`);
  return client;
}

let n = 0;
/** A finished span as the tracer publishes it, made by a request with `token` and `session`. */
const span = (token: string | null, session: string | null): SpanEvent => ({
  traceId: "0".repeat(31) + (++n % 10),
  spanId: String(n).padStart(16, "0"),
  name: `chat ${n}`,
  attributes: [{ key: "gen_ai.request.model", value: { stringValue: "Qwen3-0.6B-GGUF" } }, ...callerAttributes(token, session)],
});

/** The next span the client receives: publishing `hidden` first and then `shown` proves the
 * client was not sent `hidden`, since messages arrive in order. */
async function seesOnly(server: TestServer, client: Client, hidden: SpanEvent[], shown: SpanEvent): Promise<void> {
  for (const s of hidden) server.ctx.spans.publish(s);
  server.ctx.spans.publish(shown);
  const got = await client.next();
  expect(Value.Check(operations.SpansServerMessage, got)).toBe(true);
  expect(got.spanId).toBe(shown.spanId);
  expect(got.attributes.map((a: { key: string }) => a.key)).not.toContain("lemon.auth_token_hash");
}

const bearer = (key: string) => `bearer.${Buffer.from(key).toString("base64url")}`;

describe("with LEMONADE_API_KEY and LEMONADE_ADMIN_API_KEY set", () => {
  let server: TestServer;
  let ports: { name: string; ws: string }[];
  beforeAll(async () => {
    server = await startTestServer({ LEMONADE_API_KEY: API, LEMONADE_ADMIN_API_KEY: ADMIN });
    ports = [
      { name: "main port", ws: server.url.replace("http", "ws") },
      { name: "WebSocket port", ws: `ws://127.0.0.1:${server.ctx.websocketPort}` },
    ];
  });
  afterAll(() => server.close());

  test("realtime and logs answer lemonade-realtime when it is offered beside the bearer key", async () => {
    for (const { ws } of ports) {
      for (const path of ["/realtime", "/v1/realtime", "/logs/stream"]) {
        const client = await opened(`${ws}${path}`, { protocols: ["lemonade-realtime", bearer(API)] });
        expect(client.protocol).toBe("lemonade-realtime");
        client.close();
      }
      const keyOnly = await opened(`${ws}/logs/stream`, { protocols: [bearer(API)] });
      expect(keyOnly.protocol).toBe(bearer(API));
      keyOnly.close();
      expect(await open(`${ws}/realtime`, { protocols: ["lemonade-realtime"] })).toBe(false);
    }
  });

  test("only the spans channel upgrades without a key, and a wrong key is refused there too", async () => {
    for (const { ws } of ports) {
      expect(await open(`${ws}/logs/stream`)).toBe(false);
      for (const path of ["/spans/stream", "/traces/stream", "/v1/spans/stream", "/api/v0/traces/stream"]) {
        const anonymous = await opened(`${ws}${path}`);
        anonymous.close();
      }
      expect(await open(`${ws}/spans/stream?api_key=wrong`)).toBe(false);
    }
  });

  test("an anonymous connection must authenticate by message before it is sent anything", async () => {
    for (const { ws } of ports) {
      const client = await opened(`${ws}/spans/stream`);
      client.send({ type: "ping" });
      expect(await client.next()).toEqual({ type: "error", error: { message: "Unauthorized. Please authenticate first by sending an auth message.", type: "invalid_request_error" } });
      client.send("{not json");
      const bad = await client.next();
      expect(bad.type).toBe("error");
      expect(bad.error.type).toBe("invalid_request_error");
      client.send({ type: "auth", token: "wrong" });
      expect(await client.next()).toEqual({ type: "error", error: { message: "Invalid API key", type: "invalid_request_error" } });
      // Not yet authenticated: a span of its key's requests is not sent.
      server.ctx.spans.publish(span(API, null));
      client.send({ type: "auth", api_key: `Bearer ${API}` });
      expect(await client.next()).toEqual({ type: "auth.ok" });
      await seesOnly(server, client, [], span(API, null));
      client.close();
    }
  });

  test("a user key sees its own requests' spans; the admin key sees every span", async () => {
    for (const { ws } of ports) {
      const user = await opened(`${ws}/spans/stream`, { headers: { authorization: `Bearer ${API}` } });
      const admin = await opened(`${ws}/traces/stream?api_key=${ADMIN}`);
      const adminOnly = [span(ADMIN, null), span(null, "s1"), span("another", null)];
      const mine = span(API, "s1");
      await seesOnly(server, user, adminOnly, mine);
      for (const s of [...adminOnly, mine]) expect((await admin.next()).spanId).toBe(s.spanId);
      user.close();
      admin.close();
    }
  });

  test("a desktop app's origin is accepted, another site's refused", async () => {
    for (const { ws } of ports) {
      for (const origin of ["tauri://localhost", "http://tauri.localhost", "app://.", "jan://app", "file://", "http://localhost:5173"]) {
        const client = await opened(`${ws}/spans/stream`, { headers: { origin } });
        client.close();
      }
      expect(await open(`${ws}/spans/stream`, { headers: { origin: "https://evil.example" } })).toBe(false);
      // A sandboxed iframe's opaque origin is refused unless LEMONADE_ALLOWED_ORIGINS lists `null`.
      expect(await open(`${ws}/logs/stream?api_key=${API}`, { headers: { origin: "null" } })).toBe(false);
      expect(await open(`${ws}/logs/stream?api_key=${API}`, { headers: { origin: "https://evil.example" } })).toBe(false);
    }
  });
});

describe("browser origins on the main HTTP port", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ LEMONADE_API_KEY: API, LEMONADE_ADMIN_API_KEY: ADMIN });
  });
  afterAll(() => server.close());

  const preflight = (origin: string) =>
    fetch(`${server.url}/api/v1/chat/completions`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "POST", "access-control-request-private-network": "true" },
    });

  test("a local page's preflight is granted, Private Network Access included; another site's is a 403 without CORS headers", async () => {
    const ok = await preflight("http://localhost:3000");
    expect(ok.status).toBe(204);
    expect(ok.headers.get("access-control-allow-origin")).toBe("http://localhost:3000");
    expect(ok.headers.get("access-control-allow-private-network")).toBe("true");
    expect(ok.headers.get("vary")).toBe("Origin");
    const bad = await preflight("http://malicious.com");
    expect(bad.status).toBe(403);
    expect(bad.headers.get("access-control-allow-origin")).toBeNull();
    expect(bad.headers.get("access-control-allow-private-network")).toBeNull();
    expect(bad.headers.get("vary")).toBe("Origin");
    // A simple text/plain POST (no preflight) from another site is refused before it is dispatched.
    const mcp = await fetch(`${server.url}/mcp`, { method: "POST", headers: { origin: "http://malicious.com", "content-type": "text/plain" }, body: '{"jsonrpc": "2.0", "method": "tools/list", "id": 1}' });
    expect(mcp.status).toBe(403);
  });

  test("a request without an Origin goes on, and its answer still varies by Origin", async () => {
    const res = await fetch(`${server.url}/api/v1/health`, { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("vary")).toBe("Origin");
  });
});

describe("with only LEMONADE_API_KEY set (the admin fallback)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ LEMONADE_API_KEY: API });
  });
  afterAll(() => server.close());

  test("the API key opens the internal routes; another key does not", async () => {
    const set = (key: string) => fetch(`${server.url}/internal/set`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ log_level: "warning" }) });
    expect((await set(API)).status).toBe(200);
    expect((await set("other_key")).status).toBe(401);
  });

  test("the API key is the admin key: it sees every span", async () => {
    const client = await opened(`${server.url.replace("http", "ws")}/spans/stream?api_key=${API}`);
    const all = [span("another", null), span(null, "s1"), span(API, null)];
    for (const s of all) server.ctx.spans.publish(s);
    for (const s of all) expect((await client.next()).spanId).toBe(s.spanId);
    client.close();
  });
});

describe("with no key set (guests)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test("a guest sees only keyless spans of its own client session", async () => {
    const ws = server.url.replace("http", "ws");
    const a = await opened(`${ws}/spans/stream?client_session_id=tab-a`);
    const b = await opened(`${ws}/spans/stream`);
    b.send({ type: "auth", client_session_id: "tab-b" });
    expect(await b.next()).toEqual({ type: "auth.ok" });
    const none = await opened(`${ws}/spans/stream`);
    const bs = span(null, "tab-b");
    await seesOnly(server, a, [bs, span(null, null), span("some-key", "tab-a")], span(null, "tab-a"));
    // Of that batch, b was sent its own session's span and nothing else.
    expect((await b.next()).spanId).toBe(bs.spanId);
    await seesOnly(server, b, [span(null, "tab-a"), span(null, null)], span(null, "tab-b"));
    // A guest with no session sees nothing: the next message it gets is its auth answer.
    server.ctx.spans.publish(span(null, null));
    server.ctx.spans.publish(span(null, "tab-a"));
    none.send({ type: "auth" });
    expect(await none.next()).toEqual({ type: "auth.ok" });
    for (const c of [a, b, none]) c.close();
  });

  test("the bus has a listener only while a spans connection is open (the tracer builds spans for it then)", async () => {
    // A socket's close reaches the server a moment after the client closes it.
    const closed = async () => {
      for (let i = 0; i < 200 && server.ctx.spans.listening; i++) await Bun.sleep(10);
      return server.ctx.spans.listening;
    };
    expect(await closed()).toBe(false);
    const client = await opened(`${server.url.replace("http", "ws")}/spans/stream`);
    expect(server.ctx.spans.listening).toBe(true);
    client.close();
    expect(await closed()).toBe(false);
  });

  test("a connection with a key sees its key's spans, even on a keyless server", async () => {
    const client = await opened(`${server.url.replace("http", "ws")}/spans/stream`, { headers: { authorization: "Bearer my-own" } });
    await seesOnly(server, client, [span("not-mine", null), span(null, "tab-a")], span("my-own", null));
    client.close();
  });
});
