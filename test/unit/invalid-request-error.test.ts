// `invalid_request_error` where Lemonade names it. /work/shared/api-docs names the type nowhere;
// Lemonade's own API page names it for POST /v1/images/upscale (a missing `image`, a missing
// `model`: 400; an unknown upscaler: 404, "Upscale model not found: NAME"), and its Anthropic
// route answers a request without `model` so. Each case: status, type and code as given there.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, undefined, { engines: false });
});
afterAll(() => server.close());

const PNG = "iVBORw0KGgo=";

const CASES: { name: string; path: string; body: unknown; status: number; code?: string; message: string; anthropic?: true }[] = [
  { name: "upscale without image", path: "/v1/images/upscale", body: { model: "RealESRGAN-x4plus" }, status: 400, code: "missing_argument", message: "'image'" },
  { name: "upscale without model", path: "/v1/images/upscale", body: { image: PNG }, status: 400, code: "missing_argument", message: "'model'" },
  { name: "upscale with an unknown model", path: "/v1/images/upscale", body: { image: PNG, model: "bad-model" }, status: 404, message: "Upscale model not found: bad-model" },
  { name: "Anthropic messages without model", path: "/v1/messages", body: { max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, status: 400, message: "'model'", anthropic: true },
];

for (const c of CASES) {
  test(`${c.name}: ${c.status} invalid_request_error`, async () => {
    const res = await fetch(`${server.url}${c.path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(c.body) });
    expect(res.status).toBe(c.status);
    const body = await res.json();
    // Anthropic's shape wraps the error in {"type": "error"}; OpenAI's is the error object alone.
    if (c.anthropic) expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain(c.message);
    if (c.code) expect(body.error.code).toBe(c.code);
  });
}
