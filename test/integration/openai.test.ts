// The OpenAI-compatible surface with the official `openai` client, against real llama-server
// processes on the tiny generated models.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let client: OpenAI;
const CHAT = "extra.tiny-chat";
const EMBED = "extra.tiny-embed";
const RERANK = "extra.tiny-rerank";

beforeAll(async () => {
  const models = testModelsDir();
  const extra = tempDir("lemonade-extra-");
  for (const f of [MODELS.chat, MODELS.embed, MODELS.rerank]) copyFileSync(join(models, f), join(extra, f));
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MAX_LOADED_MODELS: "-1" });
  client = new OpenAI({ baseURL: `${server.url}/api/v1`, apiKey: "unused", maxRetries: 0 });
});
afterAll(() => server.close());

/** Drops a markdown ```json fence (or the start of one, when max_tokens cut it short). */
const unfence = (text: string) => text.replace(/^\s*`{1,3}(j(s(o(n)?)?)?)?/, "").replace(/`{1,3}\s*$/, "");

const post = (path: string, body: unknown, init: RequestInit = {}) =>
  fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" }, ...init });

describe("chat completions", () => {
  test("non-streaming: one assistant message, the requested model name, usage and timings", async () => {
    const res = await client.chat.completions.create({
      model: CHAT,
      messages: [{ role: "user", content: "Say something." }],
      max_tokens: 6,
      temperature: 0.7,
      seed: 42,
    });
    expect(res.object).toBe("chat.completion");
    expect(res.model).toBe(CHAT);
    expect(res.choices[0]!.message.role).toBe("assistant");
    expect(typeof res.choices[0]!.message.content).toBe("string");
    expect(res.choices[0]!.finish_reason).toBe("length");
    expect(res.usage!.completion_tokens).toBe(6);
    expect(res.usage!.total_tokens).toBe(res.usage!.prompt_tokens + 6);
    expect((res as any).timings.predicted_n).toBe(6);
  });

  test("the same seed gives the same text", async () => {
    const ask = () =>
      client.chat.completions.create({ model: CHAT, messages: [{ role: "user", content: "Hi" }], max_tokens: 8, seed: 7, temperature: 1 });
    expect((await ask()).choices[0]!.message.content).toBe((await ask()).choices[0]!.message.content);
  });

  test("streaming with for await, and include_usage adds the usage chunk", async () => {
    const stream = await client.chat.completions.create({
      model: CHAT,
      messages: [{ role: "user", content: "Count." }],
      max_tokens: 10,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe("chat.completion.chunk");
      text += chunk.choices[0]?.delta?.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBeGreaterThanOrEqual(10);
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toBe("length");
    expect(usage?.completion_tokens).toBe(10);
  });

  test("response_format and max_completion_tokens reach the engine", async () => {
    const res = await client.chat.completions.create({
      model: CHAT,
      messages: [{ role: "user", content: "JSON please" }],
      max_completion_tokens: 4,
      response_format: { type: "json_object" },
      // Seeded: unseeded, the random model sometimes opens a <think> block, which llama.cpp's
      // grammar lets through before the JSON.
      seed: 1,
    });
    expect(res.usage!.completion_tokens).toBeLessThanOrEqual(4);
    // The JSON grammar constrains even a random model: whitespace (llama.cpp's grammar also allows a
    // ```json fence), then (if any) an object. Unconstrained, it speaks random words.
    expect(unfence(res.choices[0]!.message.content ?? ""), JSON.stringify(res.choices[0])).toMatch(/^\s*(\{[\s\S]*)?$/);
    const schema = await client.chat.completions.create({
      model: CHAT,
      messages: [{ role: "user", content: "JSON please" }],
      max_tokens: 40,
      response_format: { type: "json_schema", json_schema: { name: "empty", schema: { type: "object", additionalProperties: false } } },
    });
    // Only an empty object fits the schema: the text can hold nothing but whitespace and braces.
    expect(unfence(schema.choices[0]!.message.content ?? ""), JSON.stringify(schema.choices[0])).toMatch(/^\s*(\{\s*\}?)?\s*$/);
  });

  test("logprobs come back per token", async () => {
    const res = await client.chat.completions.create({
      model: CHAT,
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 3,
      logprobs: true,
      top_logprobs: 2,
    });
    const lp = res.choices[0]!.logprobs!.content!;
    expect(lp).toHaveLength(3);
    expect(lp[0]!.top_logprobs).toHaveLength(2);
    expect(lp[0]!.logprob).toBeLessThanOrEqual(0);
  });

  test("a tool-call request returns well-formed tool_calls or plain text", async () => {
    const res = await client.chat.completions.create({
      model: CHAT,
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            description: "Weather for a city",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          },
        },
      ],
      tool_choice: "auto",
      max_tokens: 16,
    });
    const msg = res.choices[0]!.message;
    if (msg.tool_calls?.length) {
      for (const call of msg.tool_calls) {
        expect(call.type).toBe("function");
        expect((call as any).function.name).toBe("get_weather");
        expect(() => JSON.parse((call as any).function.arguments)).not.toThrow();
      }
      expect(res.choices[0]!.finish_reason).toBe("tool_calls");
    } else {
      expect(typeof msg.content).toBe("string");
    }
  });

  test("enable_thinking: false reaches the chat template (the prompt gains the empty think block)", async () => {
    const ask = (extra: Record<string, unknown>) =>
      client.chat.completions.create({ model: CHAT, messages: [{ role: "user", content: "hi" }], max_tokens: 1, ...extra } as any);
    const plain = (await ask({})) as OpenAI.ChatCompletion;
    const noThink = (await ask({ enable_thinking: false })) as OpenAI.ChatCompletion;
    const noThinkAlias = (await ask({ thinking: false })) as OpenAI.ChatCompletion;
    expect(noThink.usage!.prompt_tokens).toBeGreaterThan(plain.usage!.prompt_tokens);
    expect(noThinkAlias.usage!.prompt_tokens).toBe(noThink.usage!.prompt_tokens);
  });
});

describe("completions and responses", () => {
  test("completions take a string or an array prompt, and stream", async () => {
    const one = await client.completions.create({ model: CHAT, prompt: "Once upon a time", max_tokens: 5 });
    expect(one.object).toBe("text_completion");
    expect(one.model).toBe(CHAT);
    expect(one.usage!.completion_tokens).toBe(5);
    const many = await client.completions.create({ model: CHAT, prompt: ["a", "b"], max_tokens: 2 });
    expect(many.choices.map((c) => c.index).sort()).toEqual([0, 1]);
    const stream = await client.completions.create({ model: CHAT, prompt: "x", max_tokens: 4, stream: true });
    let pieces = 0;
    for await (const chunk of stream) if (chunk.choices[0]?.text) pieces++;
    expect(pieces).toBeGreaterThanOrEqual(3);
  });

  test("responses, not streaming: a completed message with output text", async () => {
    const res = await client.responses.create({ model: CHAT, input: "Hello", max_output_tokens: 5 });
    expect(res.status).toBe("completed");
    expect(res.model).toBe(CHAT);
    expect(res.output_text.length).toBeGreaterThan(0);
    expect(res.usage!.output_tokens).toBe(5);
  });

  test("responses, streaming: created first, completed last, then [DONE]", async () => {
    const stream = await client.responses.create({
      model: CHAT,
      input: [{ role: "user", content: "Hello" }],
      max_output_tokens: 5,
      stream: true,
    });
    const types: string[] = [];
    let deltas = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") deltas += event.delta;
    }
    expect(types[0]).toBe("response.created");
    expect(types.at(-1)).toBe("response.completed");
    expect(types).toContain("response.output_text.delta");
    expect(deltas.length).toBeGreaterThan(0);

    const raw = await (await post("/v1/responses", { model: CHAT, input: "x", max_output_tokens: 2, stream: true })).text();
    expect(raw.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });
});

describe("embeddings and reranking", () => {
  test("a batch embeds the same as float and as base64", async () => {
    const input = ["first text", "second text", "third"];
    const floats = await client.embeddings.create({ model: EMBED, input, encoding_format: "float" });
    expect(floats.data).toHaveLength(3);
    expect(floats.model).toBe(EMBED);
    const b64 = await post("/v1/embeddings", { model: EMBED, input, encoding_format: "base64" });
    const body = await b64.json();
    for (const [i, item] of body.data.entries()) {
      const bytes = Buffer.from(item.embedding as string, "base64");
      const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
      const expected = floats.data[i]!.embedding;
      expect(decoded.length).toBe(expected.length);
      decoded.forEach((v, j) => expect(v).toBeCloseTo(expected[j]!, 5));
    }
    // The client's own default (base64, decoded by the SDK) agrees too.
    const viaSdk = await client.embeddings.create({ model: EMBED, input });
    expect(viaSdk.data[0]!.embedding[0]).toBeCloseTo(floats.data[0]!.embedding[0]!, 5);
  });

  test("different texts embed differently", async () => {
    const res = await client.embeddings.create({ model: EMBED, input: ["cats", "quantum chromodynamics"], encoding_format: "float" });
    expect(res.data[0]!.embedding).not.toEqual(res.data[1]!.embedding);
  });

  test("rerank answers at /rerank, /reranking and /reranker, sorted by score", async () => {
    for (const path of ["/v1/rerank", "/v1/reranking", "/api/v1/reranker"]) {
      const res = await post(path, { model: RERANK, query: "fruit", documents: ["apple", "car", "banana"] });
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.results.map((r: any) => r.index).sort()).toEqual([0, 1, 2]);
      const scores = body.results.map((r: any) => r.relevance_score);
      expect(scores).toEqual([...scores].sort((a: number, b: number) => b - a));
    }
  });
});

describe("errors", () => {
  test("an embedding request to a chat model is 501; a chat request to an embedding model is 400", async () => {
    const emb = await post("/v1/embeddings", { model: CHAT, input: "x" });
    expect(emb.status).toBe(501);
    const chat = await post("/v1/chat/completions", { model: EMBED, messages: [{ role: "user", content: "x" }] });
    expect(chat.status).toBe(400);
    // Lemonade's words, which name the route's kind of generation.
    expect((await chat.json()).error).toEqual({ message: "This model does not support chat completion. Only LLM models support this endpoint.", type: "invalid_request_error" });
    const completion = await post("/v1/completions", { model: EMBED, prompt: "x" });
    expect(completion.status).toBe(400);
    expect((await completion.json()).error.message).toBe("This model does not support completion. Only LLM models support this endpoint.");
    const resp = await post("/v1/responses", { model: EMBED, input: "x" });
    expect(resp.status).toBe(400);
    expect((await resp.json()).error.code).toBe("model_not_applicable");
    const rr = await post("/v1/rerank", { model: CHAT, query: "q", documents: ["d"] });
    expect(rr.status).toBe(400);
  });

  test("an unknown model is a 404 the SDK raises as NotFoundError", async () => {
    const err = await client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "x" }] }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe("model_not_found");
    expect(err.type).toBe("model_not_found");
    expect(err.param).toBe("model");
  });

  test("schema failures: missing messages, wrong type", async () => {
    const missing = await post("/v1/chat/completions", { model: CHAT });
    expect(missing.status).toBe(400);
    expect((await missing.json()).error).toMatchObject({ code: "missing_argument", param: "messages" });
    const wrong = await post("/v1/embeddings", { model: EMBED, input: 5 });
    expect((await wrong.json()).error).toMatchObject({ code: "invalid_argument", param: "input" });
  });

  test("an engine error comes back normalised: the engine's status, typed by it, its body in details", async () => {
    const res = await post("/v1/chat/completions", { model: CHAT, messages: [{ role: "user", content: "x" }], n_probs: "lots" });
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error).toMatchObject({ type: "invalid_request_error" });
    expect(typeof error.code).toBe("string");
    expect(error.details).toBeDefined();
    expect(error.message).not.toMatch(/verbose|\/tmp\//);
  });
});

describe("llama.cpp extras, stats and metrics", () => {
  test("tokenize uses the most recently used model's tokenizer", async () => {
    await client.chat.completions.create({ model: CHAT, messages: [{ role: "user", content: "x" }], max_tokens: 1 });
    const res = await (await post("/v1/tokenize", { content: "hello world", with_pieces: true })).json();
    expect(res.tokens.map((t: any) => t.piece).join("")).toBe("hello world");
  });

  test("slots: read, save/restore inside the slot folder, traversal refused", async () => {
    await client.chat.completions.create({ model: CHAT, messages: [{ role: "user", content: "remember me" }], max_tokens: 2 });
    const slots = await (await fetch(`${server.url}/v1/slots`)).json();
    expect(slots.length).toBeGreaterThan(0);
    const used = slots.find((s: any) => s.n_prompt_tokens > 0) ?? slots[0];
    const saved = await (await post(`/v1/slots/${used.id}?action=save`, { filename: "conv.bin" })).json();
    expect(saved.n_saved).toBeGreaterThan(0);
    expect(await Bun.file(join(server.cacheDir, "slots", CHAT, "conv.bin")).exists()).toBe(true);
    const restored = await (await post(`/v1/slots/${used.id}?action=restore`, { filename: "conv.bin" })).json();
    expect(restored.n_restored).toBe(saved.n_saved);
    for (const filename of ["../escape.bin", "/etc/passwd", ".hidden", "a/b"]) {
      const res = await post(`/v1/slots/${used.id}?action=save`, { filename });
      expect(res.status).toBe(400);
    }
    expect((await post(`/v1/slots/${used.id}?action=save`, {})).status).toBe(400);
    const erased = await (await post(`/v1/slots/${used.id}?action=erase`, {})).json();
    expect(erased.id_slot).toBe(used.id);
  });

  test("aborting a stream mid-way frees the engine's slot", async () => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: CHAT, messages: [{ role: "user", content: "go on forever" }], max_tokens: 100000, ignore_eos: true, stream: true } as any,
      { signal: controller.signal },
    );
    let seen = 0;
    try {
      for await (const _ of stream as any) {
        if (++seen === 5) {
          const busy = await (await fetch(`${server.url}/v1/slots`)).json();
          expect(busy.some((s: any) => s.is_processing)).toBe(true);
          controller.abort();
        }
      }
    } catch (err) {
      expect((err as Error).name).toMatch(/Abort/);
    }
    const deadline = Date.now() + 5000;
    let slots: any[] = [];
    while (Date.now() < deadline) {
      slots = await (await fetch(`${server.url}/v1/slots`)).json();
      if (slots.every((s) => !s.is_processing)) break;
      await Bun.sleep(25);
    }
    expect(slots.every((s) => !s.is_processing)).toBe(true);
    const health = await (await fetch(`${server.url}/v1/health`)).json();
    expect(health.all_models_loaded.find((m: any) => m.model_name === "tiny-chat").is_busy).toBe(false);
  });

  test("/v1/stats reports the last generation; /metrics has per-model and engine metrics", async () => {
    const res = await client.chat.completions.create({ model: CHAT, messages: [{ role: "user", content: "stats" }], max_tokens: 7 });
    const stats = await (await fetch(`${server.url}/v1/stats`)).json();
    expect(stats.output_tokens).toBe(7);
    expect(stats.prompt_tokens).toBe(res.usage!.prompt_tokens);
    expect(stats.tokens_per_second).toBeGreaterThan(0);
    expect(stats.time_to_first_token).toBeGreaterThan(0);
    expect(stats.request_count_total).toBeGreaterThan(1);

    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    // Labelled by the id /v1/models lists it by: the extra model's bare name, which nothing else holds.
    expect(metrics).toMatch(new RegExp(`lemonade_engine_requests_total\\{model="${CHAT.slice("extra.".length)}",endpoint="chat_completions",status="200"\\} \\d+`));
    // Labelled as Lemonade labels the engine's own series: with the model's whole identity.
    expect(metrics).toMatch(new RegExp(`lemonade_llamacpp_tokens_predicted_total\\{checkpoint="[^"]+",device="cpu",model_name="${CHAT.slice("extra.".length)}",recipe="llamacpp",type="llm"\\} \\d+`));
    expect(metrics.match(/# TYPE lemonade_llamacpp_tokens_predicted_total /g)).toHaveLength(1);
  });

  test("lemonade_model_cache_tokens_total counts the prompt tokens the engine reused from its cache", async () => {
    const cached = async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      return Number(new RegExp(`lemonade_model_cache_tokens_total\\{[^}]*model_name="${CHAT.slice("extra.".length)}"[^}]*\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };
    const before = await cached();
    const ask = () => client.chat.completions.create({ model: CHAT, messages: [{ role: "user", content: "the same words twice, cached" }], max_tokens: 2 });
    let reused = 0;
    for (let i = 0; i < 2; i++) {
      await ask();
      reused += (await (await fetch(`${server.url}/v1/stats`)).json()).cache_tokens ?? 0;
    }
    expect(reused).toBeGreaterThan(0);
    expect((await cached()) - before).toBe(reused);
  });

  test("ctx_size on the request that loads a model sizes its context", async () => {
    await post("/v1/unload", { model_name: EMBED });
    await client.embeddings.create({ model: EMBED, input: "x", ctx_size: 256 } as any);
    const health = await (await fetch(`${server.url}/v1/health`)).json();
    expect(health.all_models_loaded.find((m: any) => m.model_name === "tiny-embed").recipe_options.ctx_size).toBe(256);
  });
});

describe("exactness against the real engine", () => {
  const long = [{ role: "user" as const, content: "word ".repeat(6000) }];

  test("a prompt longer than the loaded context: context_length_exceeded on OpenAI, in one stream event, on Anthropic and Ollama", async () => {
    const err = await client.chat.completions.create({ model: CHAT, messages: long, max_tokens: 1 }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.code).toBe("context_length_exceeded");
    expect(err.type).toBe("invalid_request_error");

    const stream = await (await post("/v1/chat/completions", { model: CHAT, messages: long, max_tokens: 1, stream: true })).text();
    const events = stream.trim().split("\n\n").filter((e) => e.startsWith("data: "));
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.slice(6)).error).toMatchObject({ code: "context_length_exceeded", status_code: 400 });
    expect(stream).not.toContain("[DONE]");

    const anthropic = new Anthropic({ baseURL: server.url, apiKey: "unused", maxRetries: 0 });
    const aerr = await anthropic.messages.create({ model: CHAT, max_tokens: 1, messages: long }).catch((e) => e);
    expect(aerr).toBeInstanceOf(Anthropic.BadRequestError);
    expect(aerr.error).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });

    const oerr = await new Ollama({ host: server.url }).chat({ model: CHAT, messages: long }).catch((e) => e);
    expect(oerr.name).toBe("ResponseError");
    expect(oerr.status_code).toBe(400);
  });

  test("completions logprobs come back in the legacy shape", async () => {
    const res = await client.completions.create({ model: CHAT, prompt: "Once upon", max_tokens: 3, logprobs: 2, temperature: 0 });
    const lp = res.choices[0]!.logprobs!;
    expect(lp.tokens).toHaveLength(3);
    expect(lp.tokens!.join("")).toBe(res.choices[0]!.text);
    expect(lp.token_logprobs!.every((v) => v <= 0)).toBe(true);
    expect(Object.keys(lp.top_logprobs![0]!).length).toBeGreaterThanOrEqual(1);
    expect(Object.keys(lp.top_logprobs![0]!).length).toBeLessThanOrEqual(2);
    expect(lp.text_offset![0]).toBe(0);
    expect(lp.text_offset![1]).toBe(lp.tokens![0]!.length);
    const streamed = await post("/v1/completions", { model: CHAT, prompt: "Once upon", max_tokens: 3, logprobs: 1, temperature: 0, stream: true });
    const chunks = (await streamed.text()).split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)));
    const withProbs = chunks.filter((c) => c.choices[0]?.logprobs);
    expect(withProbs.length).toBeGreaterThanOrEqual(3);
    expect(withProbs[0].choices[0].logprobs).toMatchObject({ tokens: expect.any(Array), token_logprobs: expect.any(Array), text_offset: [0] });
  });

  test("token-id inputs, as LangChain's embeddings send them, and token-id prompts", async () => {
    const vectors = await client.embeddings.create({ model: EMBED, input: [[101, 2023, 2003], [101, 2178]], encoding_format: "float" } as never);
    expect(vectors.data).toHaveLength(2);
    expect(vectors.data[0]!.embedding.length).toBeGreaterThan(0);
    const one = await client.embeddings.create({ model: EMBED, input: [101, 2023, 2003], encoding_format: "float" } as never);
    expect(one.data).toHaveLength(1);
    const completion = await client.completions.create({ model: CHAT, prompt: [1, 2, 3] as never, max_tokens: 2 });
    expect(completion.usage!.prompt_tokens).toBeGreaterThanOrEqual(3);
  });

  test("max_tokens wins over max_completion_tokens", async () => {
    const res = await client.chat.completions.create({ model: CHAT, messages: [{ role: "user", content: "hi" }], max_tokens: 2, max_completion_tokens: 6, ignore_eos: true } as never);
    expect((res as OpenAI.ChatCompletion).usage!.completion_tokens).toBe(2);
  });

  test("responses.stream().finalResponse() assembles the answer; previous_response_id is a clear 400", async () => {
    const final = await client.responses.stream({ model: CHAT, input: "Hello", max_output_tokens: 5 }).finalResponse();
    expect(final.status).toBe("completed");
    expect(final.model).toBe(CHAT);
    expect(final.output_text.length).toBeGreaterThan(0);
    const err = await client.responses.create({ model: CHAT, input: "x", previous_response_id: "resp_1" }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.message).toContain("previous_response_id");
  });

  test("/v1/models context_length is the context the engine runs with", async () => {
    await client.chat.completions.create({ model: CHAT, messages: [{ role: "user", content: "hi" }], max_tokens: 1 });
    const slots = await (await fetch(`${server.url}/v1/slots`)).json();
    const listed = await client.models.retrieve(CHAT);
    expect((listed as unknown as { context_length: number }).context_length).toBe(slots[0].n_ctx);
  });
});
