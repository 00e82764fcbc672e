import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { Value } from "@sinclair/typebox/value";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { errorResponse } from "../../http/errors.ts";
import { ApiError } from "../../lib/api-error.ts";
import { ANY_ROUTE_ERRORS, BACKEND_ERRORS, E, MODEL_ERROR_CODES, type ErrorRow } from "../../spec/errors.ts";
import { documentedErrors, endpoints } from "../../spec/index.ts";
import { LemonadeError, LemonadeModelError, OllamaError, OpenAIError } from "../../spec/schemas.ts";
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
  const path = new URL(res.url).pathname;
  // Lemonade's model-error body (load, aliases, pin) carries the error object; its other routes a flat one.
  const model = path.startsWith("/internal/aliases") || path === "/internal/pin" || path === "/v1/load";
  const lemonade = !model && (path.startsWith("/internal/") || /\/v1\/(pull|unload|delete)$/.test(path));
  expect(Value.Check(model ? LemonadeModelError : lemonade ? LemonadeError : OpenAIError, body)).toBe(true);
  if (model) expect(body).toMatchObject({ status: "error", message: body.error.message });
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

test("every model error's body has its code as type, and LemonadeModelError's description of type names each one", async () => {
  const description = (LemonadeModelError.properties.error.properties.type as { description: string }).description;
  for (const name of ["modelNotFound", "modelNotSupported", "slotsPinned", "modelLoadError", "routerResidencyConflict"] as const) {
    const body = (await errorResponse(ApiError.of(E[name], "x"), "lemonade_model").json()) as any;
    expect(body.error.type, name).toBe(E[name].code);
    expect(description, name).toContain(`\`${E[name].code}\``);
  }
  expect(MODEL_ERROR_CODES).toHaveLength(5);
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

/** What a client call threw (the test fails if it did not throw). */
async function thrown(call: () => Promise<unknown>): Promise<any> {
  try {
    await call();
  } catch (err) {
    return err;
  }
  throw new Error("the call did not fail");
}

describe("a model that cannot be served, as each dialect's official client sees it (Lemonade's words)", () => {
  const chat = { messages: [{ role: "user" as const, content: "hi" }] };
  // A model of a recipe that cannot run here (an NPU one): filtered out, not missing.
  const FILTERED = "Qwen2.5-0.5B-Instruct-CPU";

  test("OpenAI: model_not_found and model_not_supported carry their code as type, param model and the requested name", async () => {
    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const missing = await thrown(() => openai.chat.completions.create({ model: "No-Such-Model", ...chat }));
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.error).toMatchObject({ type: "model_not_found", code: "model_not_found", param: "model", requested_model: "No-Such-Model" });
    // The first names in the registry, alphabetically, then how to see the rest.
    expect(missing.error.message).toMatch(/^Model 'No-Such-Model' was not found\. Available models include: '[^']+', '[^']+', '[^']+', and \d+ more\. Use 'lemonade list' or GET \/api\/v1\/models\?show_all=true to see all available models\.$/);
    const filtered = await thrown(() => openai.embeddings.create({ model: FILTERED, input: "x" }));
    expect(filtered.status).toBe(404);
    expect(filtered.error).toMatchObject({ type: "model_not_supported", code: "model_not_supported", param: "model", requested_model: FILTERED });
    expect(filtered.error.message).toStartWith(`Model '${FILTERED}' is not available on this system. Ryzen AI LLM (ryzenai-llm) is not available in this server`);
    const completion = await thrown(() => openai.completions.create({ model: "No-Such-Model", prompt: "x" }));
    expect(completion.error.type).toBe("model_not_found");
  });

  test("Anthropic: a model that does not load is 404 not_found_error 'model ... not found, try pulling it first'; no model is 'model is required'", async () => {
    const anthropic = new Anthropic({ baseURL: server.url, apiKey: "unused", maxRetries: 0 });
    for (const model of ["No-Such-Model:latest", FILTERED]) {
      const err = await thrown(() => anthropic.messages.create({ model, max_tokens: 8, ...chat }));
      expect(err).toBeInstanceOf(Anthropic.NotFoundError);
      expect(err.error).toEqual({ type: "error", error: { type: "not_found_error", message: `model '${model.replace(/:latest$/, "")}' not found, try pulling it first` } });
    }
    const res = await post("/v1/messages", JSON.stringify({ max_tokens: 8, ...chat }));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ type: "error", error: { type: "invalid_request_error", message: "model is required" } });
  });

  test("Ollama: Lemonade's messages for a failed load, a missing field and an unsupported operation", async () => {
    const ollama = new Ollama({ host: server.url });
    const chatErr = await thrown(() => ollama.chat({ model: "No-Such-Model:latest", ...chat, stream: false }));
    expect(chatErr.status_code).toBe(404);
    expect(chatErr.error).toBe("model 'No-Such-Model' not found, try pulling it first");
    const generate = await thrown(() => ollama.generate({ model: FILTERED, prompt: "x", stream: false }));
    expect([generate.status_code, generate.error]).toEqual([404, `model '${FILTERED}' not found, try pulling it first`]);
    // Embedding routes leave the hint out.
    const embed = await thrown(() => ollama.embed({ model: "No-Such-Model", input: "x" }));
    expect([embed.status_code, embed.error]).toEqual([404, "model 'No-Such-Model' not found"]);
    const answers = async (path: string, body: unknown, method = "POST") => {
      const res = await fetch(`${server.url}${path}`, { method, body: JSON.stringify(body), headers: { "content-type": "application/json" } });
      return [res.status, (await res.json()).error];
    };
    expect(await answers("/api/chat", chat)).toEqual([400, "model is required"]);
    expect(await answers("/api/generate", { prompt: "x" })).toEqual([400, "model is required"]);
    expect(await answers("/api/embed", { model: "m" })).toEqual([400, "input is required"]);
    expect(await answers("/api/embeddings", { model: "m" })).toEqual([400, "prompt is required"]);
    expect(await answers("/api/show", {})).toEqual([400, "name is required"]);
    expect(await answers("/api/pull", {})).toEqual([400, "name is required"]);
    expect(await answers("/api/delete", {}, "DELETE")).toEqual([400, "name is required"]);
    expect(await answers("/api/delete", { model: "No-Such-Model:latest" }, "DELETE")).toEqual([404, "Model not found: No-Such-Model"]);
    expect(await answers("/api/show", { model: "No-Such-Model:latest" })).toEqual([404, "model 'No-Such-Model' not found"]);
    expect(await answers("/api/pull", { model: "No-Such-Model", stream: false })).toEqual([404, "model 'No-Such-Model' not found"]);
    expect(await answers("/api/copy", { source: "a", destination: "b" })).toEqual([501, "not supported by Lemonade"]);
  });

  test("Ollama /api/pull, /api/delete and /api/show read `name` before `model`, as Lemonade does; a failed streamed pull ends with a line of only its error", async () => {
    const answers = async (path: string, body: unknown, method = "POST") => {
      const res = await fetch(`${server.url}${path}`, { method, body: JSON.stringify(body), headers: { "content-type": "application/json" } });
      return [res.status, (await res.json()).error];
    };
    expect(await answers("/api/pull", { name: "No-Such-Model", model: "Qwen3-0.6B-GGUF", stream: false })).toEqual([404, "model 'No-Such-Model' not found"]);
    expect(await answers("/api/delete", { name: "No-Such-Model", model: "Qwen3-0.6B-GGUF" }, "DELETE")).toEqual([404, "Model not found: No-Such-Model"]);
    expect(await answers("/api/show", { name: "No-Such-Model", model: "Qwen3-0.6B-GGUF" })).toEqual([404, "model 'No-Such-Model' not found"]);
    // An empty `name` is a missing one for pull and delete; show reads `model` then.
    expect(await answers("/api/pull", { name: "", model: "Qwen3-0.6B-GGUF" })).toEqual([400, "name is required"]);
    expect(await answers("/api/delete", { name: "", model: "Qwen3-0.6B-GGUF" }, "DELETE")).toEqual([400, "name is required"]);
    expect(await answers("/api/show", { name: "", model: "No-Such-Model" })).toEqual([404, "model 'No-Such-Model' not found"]);
    // No hub is reachable here, so the download fails after the manifest line.
    const res = await fetch(`${server.url}/api/pull`, { method: "POST", body: JSON.stringify({ model: "Qwen3-0.6B-GGUF" }) });
    expect(res.status).toBe(200);
    const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines[0]).toEqual({ status: "pulling manifest" });
    expect(Object.keys(lines.at(-1))).toEqual(["error"]);
    expect(lines.at(-1).error).toContain("cannot reach the hub");
  });

  test("Ollama /api/show and /api/tags: the modelfile as Lemonade writes it; a model with no context size reads num_ctx -1; sizes from the registry", async () => {
    const ollama = new Ollama({ host: server.url });
    const qwen = await ollama.show({ model: "Qwen3-0.6B-GGUF" });
    expect(qwen.modelfile).toBe("# Modelfile generated by Lemonade\nFROM unsloth/Qwen3-0.6B-GGUF:Q4_0");
    const speech = await ollama.show({ model: "kokoro-v1" });
    expect(speech.parameters).toBe("num_ctx -1");
    expect((speech.model_info as unknown as Record<string, unknown>)["kokoro.context_length"]).toBe(-1);
    // /api/tags sizes a model by the registry's estimate (GiB, as bytes).
    const listed = (await ollama.list()).models.find((m) => m.name === "kokoro-v1:latest");
    expect(listed?.size).toBe(Math.trunc(0.354 * 2 ** 30));
  });
});

const root = join(import.meta.dir, "..", "..");
const ROW_NAMES = new Set(Object.keys(E));
const ROW_CODES = new Set(Object.values(E).map((r: ErrorRow) => r.code));
const pair = (r: { status: number; code: string }) => `${r.status} ${r.code}`;
/** Rows the contract documents that this server never raises: it runs no NPU `collection.router`
 * residency (the Ollama adapter still keeps that row's status). */
const NOT_RAISED = new Set<string>(["routerResidencyConflict"]);

/** Server source that raises ApiErrors: every file importing lib/api-error.ts, tests aside. */
function raisingSources(): { file: string; text: string }[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (name === "node_modules" || name === "test" || name.startsWith(".")) return [];
      return statSync(path).isDirectory() ? walk(path) : /\.tsx?$/.test(name) ? [path] : [];
    });
  return walk(root)
    .map((path) => ({ file: relative(root, path), text: readFileSync(path, "utf8") }))
    .filter(({ file, text }) => file !== "lib/api-error.ts" && /lib\/api-error\.ts"/.test(text));
}

/** The first argument of each call `callee(` in a text, up to its top-level comma. */
function firstArguments(text: string, callee: RegExp): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(callee)) {
    let depth = 0;
    let i = m.index! + m[0].length;
    const start = i;
    for (; i < text.length; i++) {
      const c = text[i]!;
      if ("([{".includes(c)) depth++;
      else if (")]}".includes(c)) {
        if (depth === 0) break;
        depth--;
      } else if (c === "," && depth === 0) break;
    }
    out.push(text.slice(start, i).trim());
  }
  return out;
}

/** Why a row argument is not plainly a row of E (null when it is): `E.x`, a choice among E rows,
 * or a local name the same file binds to E rows. */
function notARow(arg: string, text: string): string | null {
  const refs = [...arg.matchAll(/\bE\.(\w+)/g)].map((m) => m[1]!);
  if (refs.length) {
    const unknown = refs.filter((name) => !ROW_NAMES.has(name));
    return unknown.length ? `E.${unknown.join(", E.")} is not a row` : null;
  }
  if (/^\w+$/.test(arg)) {
    const binding = new RegExp(`\\b${arg}\\b(?:: ErrorRow)?\\s*=[^;]*\\bE\\.\\w+`).test(text);
    return binding ? null : `${arg} is not bound to a row of E`;
  }
  return `${arg} is not a row of E`;
}

describe("every error raised is a row of spec/errors.ts", () => {
  const sources = raisingSources();

  test("the scan sees the server's raising code", () => {
    const files = sources.map((s) => s.file);
    for (const file of ["http/errors.ts", "runtime/engine-error.ts", "protocols/openai.ts", "models/library.ts"]) expect(files).toContain(file);
  });

  test("no ApiError is built but from a row: ApiError.of(E.x) or a subclass passing its row", () => {
    const problems: string[] = [];
    for (const { file, text } of sources) {
      if (/new ApiError\(/.test(text)) problems.push(`${file}: new ApiError(...)`);
      for (const arg of firstArguments(text, /ApiError\.of\(/g)) {
        const why = notARow(arg, text);
        if (why) problems.push(`${file}: ApiError.of(${arg}, ...): ${why}`);
      }
      if (/extends ApiError\b/.test(text)) {
        for (const arg of firstArguments(text, /\bsuper\(/g)) {
          const why = notARow(arg, text);
          if (why) problems.push(`${file}: super(${arg}, ...): ${why}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  test("a code literal in an error body (`code: \"...\"`) is a row's code", () => {
    const problems: string[] = [];
    for (const { file, text } of sources) {
      for (const m of text.matchAll(/\bcode:\s*"([^"]*)"/g)) {
        if (!ROW_CODES.has(m[1]!)) problems.push(`${file}: "${m[1]}"`);
      }
    }
    expect(problems).toEqual([]);
  });

  test("the checks above catch what they guard against", () => {
    const text = "import x from \"../lib/api-error.ts\";\nconst row = cond ? E.modelNotFound : E.internal;";
    expect(notARow("E.modelNotFound", text)).toBeNull();
    expect(notARow("cond ? E.hubNotFound : E.downloadFailed", text)).toBeNull();
    expect(notARow("row", text)).toBeNull();
    expect(notARow("E.noSuchRow", text)).toContain("E.noSuchRow");
    expect(notARow('{ status: 400, code: "x", when: "y" }', text)).not.toBeNull();
    expect(notARow("other", text)).not.toBeNull();
    expect(firstArguments("ApiError.of(E.a, `x, ${f(1, 2)}`); ApiError.of(pick(a, b), m)", /ApiError\.of\(/g)).toEqual(["E.a", "pick(a, b)"]);
  });

  test("tsc refuses an ApiError made from anything but a documented row", () => {
    // Never called: these lines are for tsc, which fails if an ad-hoc error type-checks.
    const adHoc = () => [
      // @ts-expect-error the constructor is protected
      new ApiError(400, "made_up", "message"),
      // @ts-expect-error a row carries its documentation (`when`)
      ApiError.of({ status: 400, code: "made_up" }, "message"),
    ];
    expect(typeof adHoc).toBe("function");
    // A loading error's type is its code, as Lemonade's model errors carry it; another row's type follows its status.
    expect(ApiError.of(E.modelNotFound, "m")).toMatchObject({ status: 404, code: "model_not_found", type: "model_not_found" });
    expect(ApiError.of(E.routeNotFound, "m")).toMatchObject({ status: 404, code: "not_found", type: "not_found_error" });
    expect(ApiError.of(E.serverBusy, "m").type).toBe("server_error");
    expect(ApiError.of(E.engineServer, "m").withStatus(502)).toMatchObject({ status: 502, code: "server_error", type: "backend_error" });
  });

  test("every endpoint's table names rows of spec/errors.ts, and every row is in some table", () => {
    const rowPairs = new Set(Object.values(E).map(pair));
    const listed = new Set<ErrorRow>([...ANY_ROUTE_ERRORS, ...BACKEND_ERRORS]);
    const problems: string[] = [];
    for (const def of endpoints) {
      for (const r of documentedErrors(def)) {
        listed.add(r);
        if (!rowPairs.has(pair(r))) problems.push(`${def.id}: ${pair(r)} is no row of spec/errors.ts`);
      }
    }
    const tabled = new Set([...listed].map(pair));
    for (const [name, r] of Object.entries(E)) {
      if (!tabled.has(pair(r)) && !NOT_RAISED.has(name)) problems.push(`E.${name} (${pair(r)}) is in no table`);
    }
    expect(problems).toEqual([]);
  });

  test("a row kept out of the tables is raised nowhere", () => {
    for (const { file, text } of sources) {
      for (const arg of firstArguments(text, /ApiError\.of\(/g)) {
        for (const name of NOT_RAISED) expect(arg, file).not.toContain(`E.${name}`);
      }
    }
  });
});

// `invalid_request_error` where Lemonade names it. The project's API contract names the type
// nowhere; Lemonade's own API page names it for POST /v1/images/upscale (a missing `image`, a missing
// `model`: 400; an unknown upscaler: 404, "Upscale model not found: NAME"), and its Anthropic
// route answers a request without `model` so. Each case: status, type and code as given there.
const PNG = "iVBORw0KGgo=";

const CASES: { name: string; path: string; body: unknown; status: number; code?: string; message: string; anthropic?: true }[] = [
  { name: "upscale without image", path: "/v1/images/upscale", body: { model: "RealESRGAN-x4plus" }, status: 400, code: "missing_argument", message: "'image'" },
  { name: "upscale without model", path: "/v1/images/upscale", body: { image: PNG }, status: 400, code: "missing_argument", message: "'model'" },
  { name: "upscale with an unknown model", path: "/v1/images/upscale", body: { image: PNG, model: "bad-model" }, status: 404, message: "Upscale model not found: bad-model" },
  { name: "Anthropic messages without model", path: "/v1/messages", body: { max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, status: 400, message: "model is required", anthropic: true },
];

describe("invalid_request_error where Lemonade names it", () => {
  for (const c of CASES) {
    test(`${c.name}: ${c.status} invalid_request_error`, async () => {
      const res = await post(c.path, JSON.stringify(c.body));
      expect(res.status).toBe(c.status);
      const body = await res.json();
      // Anthropic's shape wraps the error in {"type": "error"}; OpenAI's is the error object alone.
      if (c.anthropic) expect(body.type).toBe("error");
      expect(body.error.type).toBe("invalid_request_error");
      expect(body.error.message).toContain(c.message);
      if (c.code) expect(body.error.code).toBe(c.code);
    });
  }
});
