// Bodies built to hurt: nested far deeper than any request needs, larger than the limit, or huge
// and of the wrong type. Each gets its 4xx, and /live keeps answering while they arrive (how fast
// it answers is a benchmark's question, not a test's).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { jsonDepth } from "../../http/body.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ LEMONADE_MAX_BODY_MB: "2" });
});
afterAll(() => server.close());

const post = (path: string, body: string) => fetch(`${server.url}${path}`, { method: "POST", body, headers: { "content-type": "application/json" } });
const nested = (depth: number) => `{"model": ${"[".repeat(depth)}${"]".repeat(depth)}, "messages": []}`;

test("jsonDepth counts brackets outside strings only", () => {
  expect(jsonDepth('{"a": [1, {"b": "[[[[{{"}]}')).toBe(3);
  expect(jsonDepth('"\\"[["')).toBe(0);
  expect(jsonDepth("[".repeat(1000), 10)).toBe(11);
  // A string ending in escaped backslashes closes at its quote; an escaped quote does not close it.
  expect(jsonDepth('["\\\\", ["\\\\\\\\"]]')).toBe(2);
  expect(jsonDepth('["\\\\\\"]]]", [[]]]')).toBe(3);
  // An unterminated string: nothing after its quote counts.
  expect(jsonDepth('[["[[[')).toBe(2);
});

test("jsonDepth agrees with the nesting of the parsed value, strings full of brackets, quotes and backslashes", () => {
  let seed = 42;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    // The high bits: an LCG's low bits repeat with a short period.
    return Math.floor((seed / 2 ** 31) * n);
  };
  const text = () => Array.from({ length: next(12) }, () => '[]{}"\\ a'[next(8)]).join("");
  const value = (level: number): unknown => {
    const kind = level > 6 ? 2 : next(4);
    if (kind === 0) return Array.from({ length: next(4) }, () => value(level + 1));
    if (kind === 1) return Object.fromEntries(Array.from({ length: next(4) }, () => [text(), value(level + 1)]));
    return kind === 2 ? text() : next(1000);
  };
  const depthOf = (v: unknown): number => {
    if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
    if (v !== null && typeof v === "object") return 1 + Math.max(0, ...Object.entries(v).map(([, x]) => depthOf(x)));
    return 0;
  };
  for (let i = 0; i < 2000; i++) {
    // A string first, so a misread string would swallow the nesting after it.
    const v = [text(), value(0)];
    expect(jsonDepth(JSON.stringify(v))).toBe(depthOf(v));
  }
});

test("nesting 10,000 and 100,000 deep is 400 invalid_json on every kind of route, never a 500", async () => {
  for (const depth of [10_000, 100_000]) {
    for (const path of ["/v1/chat/completions", "/v1/load", "/api/chat", "/v1/messages", "/v1/pull"]) {
      const res = await post(path, nested(depth));
      expect(res.status, `${path} ${depth}`).toBe(400);
      const text = await res.text();
      expect(text).toContain("deeper than");
      expect(text).not.toContain("call stack");
    }
  }
});

test("a body over the limit is 413, whether or not it declares its length", async () => {
  const big = JSON.stringify({ model: "x", messages: [{ role: "user", content: "a".repeat(3 * 1024 * 1024) }] });
  const res = await post("/v1/chat/completions", big);
  expect(res.status).toBe(413);
  expect((await res.json()).error.code).toBe("payload_too_large");
  const chunked = new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode(big));
      c.close();
    },
  });
  const streamed = await fetch(`${server.url}/v1/chat/completions`, { method: "POST", body: chunked });
  expect(streamed.status).toBe(413);
});

test("a large value of the wrong type names the field, not the value, and /live answers meanwhile", async () => {
  const wide = `{"model": [${Array(200_000).fill("1").join(",")}], "messages": []}`;
  const attacks = Array.from({ length: 6 }, (_, i) => post("/v1/chat/completions", i % 2 ? wide : nested(50_000)).then(async (r) => [r.status, await r.text()] as const));
  for (let i = 0; i < 10; i++) expect((await fetch(`${server.url}/live`)).status).toBe(200);
  for (const [status, text] of await Promise.all(attacks)) {
    expect(status).toBe(400);
    expect(text.length).toBeLessThan(1000);
  }
  const [, wideText] = await Promise.all(attacks).then((all) => all[1]!);
  expect(JSON.parse(wideText).error).toMatchObject({ code: "invalid_argument", param: "model" });
});
