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
