// A semantic_similarity classifier on the real llama-server with the tiny embedding model: an
// input identical to a reference phrase has cosine 1 with it, so it routes by that concept; the
// phrases are embedded once, not per request.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const embedCalls = async () => {
  const m = /lemonade_engine_requests_total\{model="tiny-embed",endpoint="routing",status="200"\} (\d+)/.exec(await (await fetch(`${server.url}/metrics`)).text());
  return Number(m?.[1] ?? 0);
};

beforeAll(async () => {
  const extra = tempDir("lemonade-extra-");
  for (const f of [MODELS.chat, MODELS.chatB, MODELS.embed]) copyFileSync(join(testModelsDir(), f), join(extra, f));
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MAX_LOADED_MODELS: "-1" });
  const res = await post("/v1/pull", {
    model_name: "user.Desk",
    recipe: "collection.router",
    version: "1",
    components: ["extra.tiny-chat", "extra.tiny-chat-b", "extra.tiny-embed"],
    routing: {
      candidates: ["extra.tiny-chat", "extra.tiny-chat-b"],
      default_model: "extra.tiny-chat",
      classifiers: [{ id: "topic", type: "semantic_similarity", model: "extra.tiny-embed", reference_phrases: { billing: ["please refund my last order", "my invoice is wrong"] } }],
      rules: [{ id: "billing", match: { classifier: "topic", label: "billing", min_score: 0.999 }, route_to: "extra.tiny-chat-b" }],
    },
  });
  expect(res.status).toBe(200);
});
afterAll(() => server.close());

test("the concept whose phrase the input matches routes; other inputs fall through", async () => {
  const billing = await post("/v1/chat/completions", { model: "Desk", messages: [{ role: "user", content: "my invoice is wrong" }], max_tokens: 2, route_trace: true });
  expect(billing.headers.get("x-lemonade-route")).toBe("billing");
  const body = await billing.json();
  expect(body.model).toBe("extra.tiny-chat-b");
  const entry = body.x_lemonade_route.trace.find((t: any) => t.condition === "classifier:topic");
  expect(entry.score).toBeGreaterThan(0.999);
  const calls = await embedCalls();
  // Another input: the phrases are not embedded again (one request for the input alone).
  const other = await post("/v1/chat/completions", { model: "Desk", messages: [{ role: "user", content: "tell me about the weather on mars today" }], max_tokens: 2, route_trace: true });
  expect(other.headers.get("x-lemonade-route")).toBe("default");
  expect((await other.json()).x_lemonade_route.trace.find((t: any) => t.condition === "classifier:topic").score).toBeLessThan(0.999);
  expect((await embedCalls()) - calls).toBe(1);
});

test("the Responses API routes through the router too: a string input, typed input items, and a stream", async () => {
  const plain = await post("/v1/responses", { model: "Desk", input: "my invoice is wrong", max_output_tokens: 2 });
  expect(plain.status).toBe(200);
  expect(plain.headers.get("x-lemonade-route")).toBe("billing");
  expect((await plain.json()).object).toBe("response");
  const typed = await post("/v1/responses", { model: "Desk", input: [{ role: "user", content: [{ type: "input_text", text: "please refund my last order" }] }], max_output_tokens: 2 });
  expect(typed.headers.get("x-lemonade-route")).toBe("billing");
  const streamed = await post("/v1/responses", { model: "Desk", input: [{ role: "user", content: [{ type: "input_text", text: "tell me about the weather on mars today" }] }], stream: true, max_output_tokens: 2 });
  expect(streamed.status).toBe(200);
  expect(streamed.headers.get("x-lemonade-route")).toBe("default");
  expect(await streamed.text()).toContain("response.completed");
});
