import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { LemonadeError, OllamaError, OpenAIError } from "../../spec/schemas.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const post = (path: string, body: string, headers: Record<string, string> = { "content-type": "application/json" }) =>
  fetch(`${server.url}${path}`, { method: "POST", body, headers });

/** Checks an error answer: status, JSON, the route's schema, the code and the field it names. */
async function expectError(res: Response, status: number, code: string, param?: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toContain("application/json");
  const body = await res.json();
  const lemonade = new URL(res.url).pathname.startsWith("/internal/") || /\/v1\/(pull|unload|load|delete)$/.test(new URL(res.url).pathname);
  expect(Value.Check(lemonade ? LemonadeError : OpenAIError, body)).toBe(true);
  const fields = lemonade ? body : body.error;
  expect(fields.code).toBe(code);
  if (param) {
    expect(fields.param).toBe(param);
    expect(fields.message).toContain(param);
  }
  expect(JSON.stringify(body)).not.toMatch(/\bat .*\.(ts|js):\d+/);
  return body;
}

describe("schema failures", () => {
  test("malformed JSON is invalid_json, in each route's shape", async () => {
    await expectError(await post("/internal/aliases", '{"alias": "a",'), 400, "invalid_json");
    await expectError(await post("/v1/chat/completions", '{"model": "a",'), 400, "invalid_json");
  });

  test("an empty body and a non-object body are invalid_json", async () => {
    await expectError(await post("/internal/aliases", ""), 400, "invalid_json");
    await expectError(await post("/internal/aliases", "[1,2]"), 400, "invalid_json");
    await expectError(await post("/v1/embeddings", '"alias"'), 400, "invalid_json");
  });

  test("a missing required field is missing_argument naming the field", async () => {
    await expectError(await post("/internal/aliases", '{"target": "x"}'), 400, "missing_argument", "alias");
    await expectError(await post("/internal/aliases", '{"alias": "x"}'), 400, "missing_argument", "target");
    await expectError(await post("/v1/chat/completions", '{"messages": []}'), 400, "missing_argument", "model");
  });

  test("a field of the wrong type is invalid_argument naming the field", async () => {
    await expectError(await post("/internal/aliases", '{"alias": 7, "target": "x"}'), 400, "invalid_argument", "alias");
    await expectError(await post("/internal/aliases", '{"alias": "a b", "target": "x"}'), 400, "invalid_argument", "alias");
  });

  test("the body is read as JSON whatever the Content-Type", async () => {
    const contentTypes: Record<string, string>[] = [
      {},
      { "content-type": "text/plain" },
      { "content-type": "application/x-www-form-urlencoded" },
    ];
    for (const headers of contentTypes) {
      const res = await post("/internal/aliases", '{"alias": "ct", "target": "Qwen3-0.6B-GGUF"}', headers);
      expect(res.status).toBe(200);
      expect((await res.json()).target).toBe("Qwen3-0.6B-GGUF");
    }
  });
});

describe("Lemonade's own routes answer in lemonade.md's shapes", () => {
  test('unload of a model that is not loaded: {"status": "error", "message"}', async () => {
    const body = await expectError(await post("/v1/unload", '{"model_name": "Qwen3-0.6B-GGUF"}'), 404, "model_not_loaded");
    expect(body.status).toBe("error");
    expect(body.message).toContain("Qwen3-0.6B-GGUF");
  });

  test('a refused registration: {"error": "<string>"}', async () => {
    const res = await post("/v1/pull", JSON.stringify({ model_name: "user.Both", recipe: "llamacpp", checkpoint: "a/b:Q4_0", labels: ["chat", "embeddings"] }));
    const body = await expectError(res, 400, "invalid_argument");
    expect(body.error).toBe(
      "Model 'user.Both': a model deploys in exactly one mode, but these labels name two: 'chat' and 'embeddings'. Register one model per mode.",
    );
  });
});

describe("Ollama-style routes", () => {
  test("unsupported operations answer 501 with a string error", async () => {
    for (const path of ["/api/create", "/api/copy", "/api/push", "/api/blobs/sha256-abc"]) {
      const res = await post(path, "{}");
      expect(res.status).toBe(501);
      const body = await res.json();
      expect(Value.Check(OllamaError, body)).toBe(true);
      expect(body.error).toContain("not supported");
    }
  });

  test("/api/version reports a version Ollama clients accept", async () => {
    const body = await (await fetch(`${server.url}/api/version`)).json();
    expect(body.version).toMatch(/^\d+\.\d+\.\d+$/);
    const [major, minor] = body.version.split(".").map(Number);
    expect(major * 1000 + minor).toBeGreaterThanOrEqual(5);
  });
});
