import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { OllamaError, OpenAIError } from "../../spec/schemas.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const post = (path: string, body: string, headers: Record<string, string> = { "content-type": "application/json" }) =>
  fetch(`${server.url}${path}`, { method: "POST", body, headers });

async function expectOpenAIError(res: Response, status: number, code: string, param?: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toContain("application/json");
  const body = await res.json();
  expect(Value.Check(OpenAIError, body)).toBe(true);
  expect(body.error.code).toBe(code);
  if (param) {
    expect(body.error.param).toBe(param);
    expect(body.error.message).toContain(param);
  }
  expect(JSON.stringify(body)).not.toMatch(/\bat .*\.(ts|js):\d+/);
  return body;
}

describe("schema failures on OpenAI-style routes", () => {
  test("malformed JSON is invalid_json", async () => {
    await expectOpenAIError(await post("/internal/aliases", '{"alias": "a",'), 400, "invalid_json");
  });

  test("an empty body and a non-object body are invalid_json", async () => {
    await expectOpenAIError(await post("/internal/aliases", ""), 400, "invalid_json");
    await expectOpenAIError(await post("/internal/aliases", "[1,2]"), 400, "invalid_json");
    await expectOpenAIError(await post("/internal/aliases", '"alias"'), 400, "invalid_json");
  });

  test("a missing required field is missing_argument naming the field", async () => {
    await expectOpenAIError(await post("/internal/aliases", '{"target": "x"}'), 400, "missing_argument", "alias");
    await expectOpenAIError(await post("/internal/aliases", '{"alias": "x"}'), 400, "missing_argument", "target");
  });

  test("a field of the wrong type is invalid_argument naming the field", async () => {
    await expectOpenAIError(await post("/internal/aliases", '{"alias": 7, "target": "x"}'), 400, "invalid_argument", "alias");
    await expectOpenAIError(await post("/internal/aliases", '{"alias": "a b", "target": "x"}'), 400, "invalid_argument", "alias");
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
