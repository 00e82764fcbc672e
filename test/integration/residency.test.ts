// Residency of a collection's models over HTTP, on the FAKE engine with max_loaded_models=1 (the
// default): /v1/health's residency_class and slot_pool for a router's helper and its candidates,
// and the router's own model chosen as the candidate, demoted into the standard pool in the request.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFakeServer } from "../helpers/fake-engine.ts";
import type { TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startFakeServer(["a", "judge"]);
  const res = await post("/v1/pull", {
    model_name: "user.Self",
    recipe: "collection.router",
    version: "1",
    components: ["a", "judge"],
    routing: { candidates: ["extra.a", "extra.judge"], default_model: "extra.a", router: { type: "llm", model: "extra.judge", prompt: "Pick the model for this." } },
  });
  if (res.status !== 200) throw new Error(`the router did not register: ${await res.text()}`);
});
afterAll(() => server.close());

function post(path: string, body: unknown) {
  return fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
}
const pools = async () =>
  Object.fromEntries(((await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded as { model_name: string; residency_class: string; slot_pool: string }[]).map((m) => [m.model_name, `${m.residency_class} ${m.slot_pool}`]));
const route = (reply: string) => post("/v1/chat/completions", { model: "Self", messages: [{ role: "user", content: `[[fake {"reply": "${reply}"}]] route me` }], max_tokens: 2 });

test("the router's helper is a routing_helper and its candidate standard/llm, both loaded with max_loaded_models=1", async () => {
  const res = await route("I pick extra.a");
  expect(res.headers.get("x-lemonade-route")).toBe("__route_0");
  expect(await pools()).toEqual({ judge: "routing_helper routing_helper/llm", a: "standard standard/llm" });
  // Pins are reported per pool: the helper's apart from the standard summary.
  expect((await post("/internal/pin", { model_name: "extra.judge", pinned: true })).status).toBe(200);
  const h = await (await fetch(`${server.url}/v1/health`)).json();
  expect([h.pinned_models.llm, h.pinned_helper_models.llm]).toEqual([0, 1]);
  expect((await post("/internal/pin", { model_name: "extra.judge", pinned: false })).status).toBe(200);
});

test("the router's own model picked as the candidate is demoted into the standard pool in the request: one process, reported standard/llm", async () => {
  const pidOf = async (id: string) => ((await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded as { model_name: string; pid: number }[]).find((m) => m.model_name === id)?.pid;
  const before = await pidOf("judge");
  const res = await route("I pick extra.judge");
  expect(res.status).toBe(200);
  expect(res.headers.get("x-lemonade-route")).toBe("__route_1");
  expect((await res.json()).model).toBe("extra.judge");
  expect(await pools()).toEqual({ judge: "standard standard/llm" });
  expect(await pidOf("judge")).toBe(before!);
  // Routing again promotes it back: the helper pool, beside the candidate it picked.
  await route("I pick extra.a");
  expect(await pools()).toEqual({ judge: "routing_helper routing_helper/llm", a: "standard standard/llm" });
});
