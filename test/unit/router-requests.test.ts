// collection.router end to end over HTTP, on the FAKE engine: registration, a chat routed by a
// keyword rule and by the `router` sugar (an LLM answering a label: the fake's `reply`), the
// header, the trace on a body and on the first stream event, completions, stats, validation.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeServer } from "../helpers/fake-engine.ts";
import type { TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startFakeServer(["a", "b", "judge"], { LEMONADE_MAX_LOADED_MODELS: "-1" });
});
afterAll(() => server.close());

const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const routing = {
  candidates: ["extra.a", "extra.b"],
  default_model: "extra.a",
  rules: [{ id: "code", match: { any: [{ keywords_any: ["python"] }, { metadata: { key: "task", equals: "code" } }] }, route_to: "extra.b", outputs: { tier: "code" } }],
};

const components = ["a", "b"];
/** The router as Lemonade's form tries it inline. */
const policy = { recipe: "collection.router", version: "1", components: ["extra.a", "extra.b"], routing };

test("a router registers, lists with its components, and refuses a bad policy with nothing stored", async () => {
  const bad = await post("/v1/pull", { model_name: "user.Bad", recipe: "collection.router", version: "1", components, routing: { ...routing, default_model: "extra.judge" } });
  expect(bad.status).toBe(400);
  expect((await bad.json()).message).toContain("default_model must be one of the candidates");
  // A router is a collection as Lemonade checks one: its components listed, each a registered
  // regular model other than itself, and every model the policy names among them.
  for (const [body, message] of [
    [{ model_name: "user.Bare", routing }, "Collection recipe requires a non-empty 'components' array"],
    [{ model_name: "user.Bare", components: ["a", "Bare"], routing }, "Collection cannot reference itself: Bare"],
    [{ model_name: "user.Bare", components: ["a", "nowhere"], routing }, "Collection component not registered: 'nowhere'. Pull or register it before referencing it in a collection."],
    [{ model_name: "user.Bare", components: ["a"], routing }, "Invalid routing policy: routing.candidates[1] references component 'extra.b' that is not declared in collection.components"],
  ] as const) {
    const res = await post("/v1/pull", { recipe: "collection.router", version: "1", ...body });
    expect(res.status, message).toBe(400);
    expect((await res.json()).error).toBe(message);
  }
  expect(existsSync(join(server.cacheDir, "user_models.json"))).toBe(false);

  const res = await post("/v1/pull", { model_name: "user.Auto", recipe: "collection.router", version: "1", components, routing });
  expect(res.status).toBe(200);
  // A user's collection is listed by its `user.` id, the one it was registered by.
  const data = (await (await fetch(`${server.url}/v1/models`)).json()).data;
  expect(data.some((m: any) => m.id === "Auto")).toBe(false);
  const listed = data.find((m: any) => m.id === "user.Auto");
  // Its components by the ids listings show them by, each one's model object embedded, as
  // Lemonade lists a collection's.
  expect(listed).toMatchObject({ recipe: "collection.router", components: ["a", "b"], version: "1", routing, labels: ["chat", "custom"] });
  expect(listed.models.map((m: { id: string }) => m.id)).toEqual(["a", "b"]);
  // A collection is no router's component.
  const nested = await post("/v1/pull", { model_name: "user.Nest", recipe: "collection.router", version: "1", components: ["a", "user.Auto"], routing });
  expect((await nested.json()).error).toBe("Collection components must be regular models, not collections: 'user.Auto'");
  // Stored as written (the normalised form is worked out at each start).
  const stored = JSON.parse(readFileSync(join(server.cacheDir, "user_models.json"), "utf8"));
  expect((stored.Auto ?? stored["user.Auto"]).routing).toEqual(routing);
});

test("chat is routed by the first matching rule, else the default; the header and model say where", async () => {
  const plain = await post("/v1/chat/completions", { model: "Auto", messages: [{ role: "user", content: "hello" }], max_tokens: 2 });
  expect(plain.headers.get("x-lemonade-route")).toBe("default");
  expect((await plain.json()).model).toBe("extra.a");
  const code = await post("/v1/chat/completions", { model: "Auto", messages: [{ role: "user", content: "some Python please" }], max_tokens: 2 });
  expect(code.headers.get("x-lemonade-route")).toBe("code");
  const body = await code.json();
  expect(body.model).toBe("extra.b");
  expect(body.x_lemonade_route).toBeUndefined();
  const byMetadata = await post("/v1/chat/completions", { model: "Auto", messages: [{ role: "user", content: "hi" }], metadata: { task: "code" }, max_tokens: 2 });
  expect(byMetadata.headers.get("x-lemonade-route")).toBe("code");
});

test("route_trace adds x_lemonade_route to the body, and to the first event of a stream", async () => {
  const res = await post("/v1/chat/completions", { model: "Auto", messages: [{ role: "user", content: "python" }], max_tokens: 2, route_trace: true });
  const trace = (await res.json()).x_lemonade_route;
  expect(trace).toEqual({ version: "1", route_to: "extra.b", matched_rule: "code", default_used: false, outputs: { tier: "code" }, trace: [{ condition: "keywords_any", result: true }] });

  const stream = await post("/v1/chat/completions", { model: "Auto", messages: [{ role: "user", content: "hello" }], max_tokens: 3, stream: true, route_trace: true });
  expect(stream.headers.get("x-lemonade-route")).toBe("default");
  const events = (await stream.text()).split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)));
  expect(events[0].x_lemonade_route).toMatchObject({ route_to: "extra.a", default_used: true, matched_rule: "" });
  expect(events.slice(1).some((e) => e.x_lemonade_route)).toBe(false);

  // A Responses stream too: on its first event (response.created), typed input read for the rule.
  const input = [{ role: "user", content: [{ type: "input_text", text: "some python" }] }];
  const responses = await post("/v1/responses", { model: "Auto", input, max_output_tokens: 3, stream: true, route_trace: true });
  expect(responses.headers.get("x-lemonade-route")).toBe("code");
  const typed = (await responses.text()).split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)));
  expect(typed[0]).toMatchObject({ type: "response.created", x_lemonade_route: { version: "1", route_to: "extra.b", matched_rule: "code" } });
  expect(typed.slice(1).some((e) => e.x_lemonade_route)).toBe(false);
});

test("completions route too; /v1/stats counts decisions and a conversation's switches", async () => {
  const before = (await (await fetch(`${server.url}/v1/stats`)).json()) as { routing_decisions_total: number; routing_switches_total: number };
  const done = await post("/v1/completions", { model: "Auto", prompt: "python code", max_tokens: 2 });
  expect(done.headers.get("x-lemonade-route")).toBe("code");
  // One conversation (same system prompt and first message), routed to a then b: one switch.
  const turn1 = [{ role: "system", content: "s" }, { role: "user", content: "hello there" }];
  await post("/v1/chat/completions", { model: "Auto", messages: turn1, max_tokens: 1 });
  await post("/v1/chat/completions", { model: "Auto", messages: [...turn1, { role: "assistant", content: "hi" }, { role: "user", content: "now python" }], max_tokens: 1 });
  const after = await (await fetch(`${server.url}/v1/stats`)).json();
  expect(after.routing_decisions_total - before.routing_decisions_total).toBe(3);
  expect(after.routing_switches_total - before.routing_switches_total).toBe(1);
});

test("the router sugar asks an LLM to pick a candidate by name", async () => {
  const res = await post("/v1/pull", {
    model_name: "user.Picker",
    recipe: "collection.router",
    version: "1",
    components: ["a", "b", "judge"],
    routing: { candidates: ["extra.a", "extra.b"], default_model: "extra.a", router: { type: "llm", model: "extra.judge", prompt: "Pick the model for this." } },
  });
  expect(res.status).toBe(200);
  // The FAKE judge answers with the label given in the message (its `reply`).
  const picked = await post("/v1/chat/completions", { model: "Picker", messages: [{ role: "user", content: '[[fake {"reply": "I pick extra.b"}]] route me' }], max_tokens: 2, route_trace: true });
  // The sugar's rules are Lemonade's `__route_<candidate index>`.
  expect(picked.headers.get("x-lemonade-route")).toBe("__route_1");
  const body = await picked.json();
  expect(body.model).toBe("extra.b");
  expect(body.x_lemonade_route.trace).toContainEqual({ condition: "classifier:__router", label: "extra.b", score: 1, result: true, rationale: "I pick extra.b" });
  // An answer that names no candidate: fail-open to the default.
  const unsure = await post("/v1/chat/completions", { model: "Picker", messages: [{ role: "user", content: '[[fake {"reply": "no idea"}]] route me' }], max_tokens: 2 });
  expect(unsure.headers.get("x-lemonade-route")).toBe("default");
});

test("POST /v1/routing/validate checks without registering and answers the normalised policy", async () => {
  const ok = await post("/v1/routing/validate", { version: "1", routing: { candidates: ["extra.a"], default_model: "extra.a", router: { type: "llm", model: "extra.judge", prompt: "p" } } });
  expect(ok.status).toBe(200);
  const body = await ok.json();
  expect(body.valid).toBe(true);
  expect(body.routing.rules).toEqual([{ id: "__route_0", match: { classifier: "__router", label: "extra.a", min_score: 1 }, route_to: "extra.a" }]);
  const bad = await post("/v1/routing/validate", { version: "1", routing: { candidates: ["extra.a"], default_model: "extra.a", rules: [{ id: "r", match: { regex: "(a+)+" }, route_to: "extra.a" }] } });
  expect(bad.status).toBe(400);
  expect((await bad.json()).message).toContain("nested unbounded quantifier");
});

test("POST /v1/routing/validate tries a policy, inline or by name, on a test prompt, images, tools and metadata, and answers the decision", async () => {
  const byKeyword = await (await post("/v1/routing/validate", { policy, prompt: "write python" })).json();
  expect(byKeyword.decision).toMatchObject({ route_to: "extra.b", matched_rule: "code", default_used: false, outputs: { tier: "code" } });
  expect(byKeyword.normalized_policy).toMatchObject({ recipe: "collection.router", routing: { candidates: ["extra.a", "extra.b"], default_model: "extra.a" } });
  const byMetadata = await (await post("/v1/routing/validate", { policy, prompt: "hi", metadata: { task: "code" } })).json();
  expect(byMetadata.decision.route_to).toBe("extra.b");
  const plain = await (await post("/v1/routing/validate", { policy: "Auto", prompt: "hello", has_images: false, has_tools: true })).json();
  expect(plain.decision).toMatchObject({ route_to: "extra.a", matched_rule: "", default_used: true });
  // Names in an inline policy are taken as given; a classifier that cannot run fails open.
  const sugar = { candidates: ["x.one", "x.two"], default_model: "x.one", router: { type: "llm", model: "x.nobody", prompt: "pick" } };
  const llm = await post("/v1/routing/validate", { policy: { version: "1", recipe: "collection.router", components: ["x.one", "x.two", "x.nobody"], routing: sugar }, prompt: "anything" });
  expect(llm.status).toBe(200);
  const tried = await llm.json();
  expect(tried.decision).toMatchObject({ route_to: "x.one", default_used: true });
  // What ran: the sugar desugared, with Lemonade's ids.
  expect(tried.normalized_policy.routing.classifiers.map((c: { id: string }) => c.id)).toEqual(["__router"]);
  expect(tried.normalized_policy.routing.rules.map((r: { id: string }) => r.id)).toEqual(["__route_0", "__route_1"]);
});

test("POST /v1/routing/validate refuses a body with no policy, a name that is no router, and test fields of the wrong type, naming the field", async () => {
  for (const [body, field, message] of [
    [{ prompt: "hi" }, "policy"],
    [{ policy: "extra.a" }, "policy"],
    [{ policy: 7 }, "policy", "'policy' must be a JSON object (a collection.router definition) or a registered router's name"],
    // Worded as Lemonade words each test field of the wrong type.
    [{ policy, prompt: 5 }, "prompt", "'prompt' must be a string"],
    [{ policy, has_images: "yes" }, "has_images", "'has_images' must be a boolean"],
    [{ policy, has_tools: 1 }, "has_tools", "'has_tools' must be a boolean"],
    [{ policy, metadata: ["code"] }, "metadata", "'metadata' must be a JSON object of string values"],
    [{ policy, metadata: { task: 1 } }, "metadata", "'metadata' value for key 'task' must be a string"],
    [{ policy: { ...policy, routing: { ...routing, default_model: "elsewhere" } } }, "routing"],
    // An inline document stands alone: the router recipe, and every model it names in its components.
    [{ policy: { version: "1", routing } }, "routing"],
    [{ policy: { ...policy, components: undefined } }, "components"],
    [{ policy: { ...policy, components: ["extra.a"] } }, "routing"],
  ] as const) {
    const res = await post("/v1/routing/validate", body);
    expect(res.status, JSON.stringify(body)).toBe(400);
    const answer = await res.json();
    expect(String(answer.param), JSON.stringify(body)).toStartWith(field);
    if (message) expect(answer.error).toBe(message);
  }
});

test("a router's load is a virtual no-op that loads no candidate; a router pulled without a version is refused", async () => {
  await post("/v1/unload", {});
  const load = await post("/v1/load", { model_name: "Auto" });
  expect(load.status).toBe(200);
  // The reply names the model as the request did, as Lemonade's does.
  expect(await load.json()).toMatchObject({ status: "success", model_name: "Auto", recipe: "collection.router" });
  expect((await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded).toEqual([]);
  const unversioned = await post("/v1/pull", { model_name: "user.NoVersion", recipe: "collection.router", components, routing });
  expect(unversioned.status).toBe(400);
  expect(await unversioned.json()).toMatchObject({ param: "version" });
  expect((await fetch(`${server.url}/v1/models/user.NoVersion`)).status).toBe(404);
});
