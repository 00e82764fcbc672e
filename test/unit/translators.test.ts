// The protocol adapters' pure parts: request translation, stream-end rules, error mapping.
import { describe, expect, test } from "bun:test";
import { ApiError } from "../../lib/api-error.ts";
import { E } from "../../spec/errors.ts";
import { chatStream, legacyLogprobs, openaiErrorBody, toCompletionBody, toEngineBody, visionCheck } from "../../protocols/openai.ts";
import { checkResponsesBody, responsesStream } from "../../protocols/responses.ts";
import { anthropicErrorBody, messagesStream, splitKnown, toChatBody, toMessage } from "../../protocols/anthropic.ts";
import { engineError } from "../../runtime/engine-error.ts";
import { scrubPaths } from "../../lib/scrub.ts";
import type { StreamRule } from "../../runtime/stream-pump.ts";
import * as ollama from "../../protocols/ollama.ts";
import { details, ollamaError, samplingFrom, toOpenAIMessages } from "../../protocols/ollama.ts";
import type { CatalogModel } from "../../models/catalog.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { anthropic as anthropicSpec, ollama as ollamaSpec } from "../../spec/index.ts";
import { Value } from "@sinclair/typebox/value";
import type { TSchema } from "@sinclair/typebox";

/** The schema errors of a value, as `path: message` lines (none when it matches). */
const schemaErrors = (schema: TSchema, value: unknown) => [...Value.Errors(schema, value)].map((e) => `${e.path}: ${e.message}`);

describe("openai", () => {
  test("Lemonade's own fields stay with the server; thinking becomes the template switch; json_object a schema", () => {
    const { engineBody, loadOptions } = toEngineBody({ model: "m", ctx_size: 8192, enable_thinking: false, response_format: { type: "json_object" } });
    expect(loadOptions).toEqual({ ctx_size: 8192 });
    expect(engineBody).toEqual({
      model: "m",
      chat_template_kwargs: { enable_thinking: false },
      response_format: { type: "json_schema", json_schema: { schema: { type: "object" } } },
    });
    expect(toEngineBody({ thinking: true, chat_template_kwargs: { a: 1 } }).engineBody.chat_template_kwargs).toEqual({ a: 1, enable_thinking: true });
    expect(toEngineBody({ model: "m" }).loadOptions).toBeUndefined();
  });

  test("token limits: max_tokens wins over max_completion_tokens, which alone becomes max_tokens", () => {
    expect(toEngineBody({ max_tokens: 5, max_completion_tokens: 9 }).engineBody).toEqual({ max_tokens: 5 });
    expect(toEngineBody({ max_completion_tokens: 9 }).engineBody).toEqual({ max_tokens: 9 });
  });

  test("stream ends: chat needs [DONE]; a failed stream's one event carries message, type, code and status_code", () => {
    expect(chatStream.ending!('data: {"x":1}\n\ndata: [DONE]\n\n')).toBe("");
    expect(chatStream.ending!('data: {"x":1}\n\n')).toBeNull();
    const err = ApiError.of(E.contextLengthExceeded, "too long");
    const event = JSON.parse(chatStream.framer.error(err).replace(/^data: /, ""));
    expect(event).toEqual({ error: { message: "too long", type: "invalid_request_error", code: "context_length_exceeded", status_code: 400 } });
    expect(chatStream.framer.ping).toBe(": ping\n\n");
  });

  test("completions: echo dropped, logprobs becomes n_probs, and answers come back in the legacy shape", () => {
    expect(toCompletionBody({ prompt: "a", echo: true, logprobs: 3 })).toEqual({ body: { prompt: "a", n_probs: 3 }, logprobs: true });
    expect(toCompletionBody({ prompt: "a", logprobs: false })).toEqual({ body: { prompt: "a" }, logprobs: false });
    const convert = legacyLogprobs();
    const first: Record<string, any> = { logprobs: { content: [{ token: "Hi", logprob: -0.5, top_logprobs: [{ token: "Hi", logprob: -0.5 }, { token: "Yo", logprob: -1 }] }] } };
    const second: Record<string, any> = { logprobs: { content: [{ token: " there", logprob: -0.25, top_logprobs: [] }] } };
    convert(first);
    convert(second);
    expect(first.logprobs).toEqual({ tokens: ["Hi"], token_logprobs: [-0.5], top_logprobs: [{ Hi: -0.5, Yo: -1 }], text_offset: [0] });
    expect(second.logprobs.text_offset).toEqual([2]);
  });

  test("an image sent to a model without vision is refused before any load, naming the model as the listing does", () => {
    const body = { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:," } }] }] };
    const plain = { id: "m", type: "llm", labels: [], checkpoints: { main: "x" } } as unknown as CatalogModel;
    const vision = { ...plain, checkpoints: { main: "x", mmproj: "y" } } as CatalogModel;
    const listed = (m: CatalogModel) => `listed-${m.id}`;
    const refusal = visionCheck(() => null, body)(plain, listed);
    expect(refusal?.status).toBe(400);
    expect(refusal?.message).toStartWith("Model listed-m does not accept images");
    expect(visionCheck(() => null, body)(vision, listed)).toBeNull();
    expect(visionCheck(() => null, { messages: [{ role: "user", content: "hi" }] })(plain, listed)).toBeNull();
  });
});

/** Feeds engine events through a rule's translator; returns the parsed events it wrote. */
function translate(rule: StreamRule, events: unknown[]): { text: string; events: Record<string, any>[] } {
  const t = rule.translate!();
  let text = "";
  for (const ev of events) text += t.event(typeof ev === "string" ? ev : JSON.stringify(ev));
  text += t.end() ?? "<short>";
  const parsed = text
    .split("\n\n")
    .map((b) => b.split("\n").find((l) => l.startsWith("data: "))?.slice(6))
    .filter((d): d is string => !!d && d !== "[DONE]")
    .map((d) => JSON.parse(d));
  return { text, events: parsed };
}

describe("responses", () => {
  test("every item, part and delta event gets its output_index (and content_index); the model is the client's; [DONE] ends it", () => {
    const { text, events } = translate(responsesStream("Tiny"), [
      { type: "response.created", response: { id: "r", status: "in_progress" } },
      { type: "response.output_item.added", item: { id: "rs", type: "reasoning", content: [] } },
      { type: "response.reasoning_text.delta", item_id: "rs", delta: "hm" },
      { type: "response.output_item.added", item: { id: "msg", type: "message", content: [] } },
      { type: "response.content_part.added", item_id: "msg", part: { type: "output_text", text: "" } },
      { type: "response.output_text.delta", item_id: "msg", delta: "Hi" },
      { type: "response.output_item.done", item: { id: "rs", type: "reasoning" } },
      { type: "response.output_item.done", item: { id: "msg", type: "message" } },
      { type: "response.completed", response: { id: "r", model: "/models/tiny.gguf", output: [] } },
    ]);
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    const byType = (t: string) => events.filter((e) => e.type === t);
    expect(byType("response.created")[0].response).toMatchObject({ output: [], model: "Tiny" });
    expect(byType("response.reasoning_text.delta")[0]).toMatchObject({ output_index: 0, content_index: 0 });
    expect(byType("response.content_part.added").map((e) => e.output_index)).toEqual([0, 1]);
    expect(byType("response.output_text.delta")[0]).toMatchObject({ output_index: 1, content_index: 0 });
    expect(byType("response.output_item.done").map((e) => e.output_index)).toEqual([0, 1]);
    expect(byType("response.completed")[0].response.model).toBe("Tiny");
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
  });

  test("previous_response_id is refused with a 400 naming it", () => {
    // A field the definition does not name: the schema lets it through to the check.
    const body = { model: "m", input: "hi", previous_response_id: "resp_1" };
    expect(() => checkResponsesBody(body)).toThrow(/previous_response_id/);
  });
});

describe("anthropic", () => {
  test("unknown fields are split off; errors in Anthropic's shape", () => {
    expect(splitKnown({ model: "m", foo: 1 }, new Set(["model"]))).toEqual({ known: { model: "m" }, ignored: ["foo"] });
    expect(anthropicErrorBody(ApiError.of(E.invalidArgument, "bad"))).toEqual({ type: "error", error: { type: "invalid_request_error", message: "bad" } });
  });

  test("requests: thinking, output_config, tool_choice and tool results become the chat body's", () => {
    // `output_config` is one of the known fields the definition does not name.
    const request = {
      model: "m",
      system: [{ type: "text", text: "be brief" }],
      max_tokens: 5,
      stop_sequences: ["END"],
      thinking: { type: "disabled" },
      output_config: { format: { type: "json_schema", schema: { type: "object" } } },
      tool_choice: { type: "tool", name: "get" },
      tools: [{ name: "get", input_schema: { type: "object" } }, { name: "other" }],
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "get", input: { a: 1 } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "42" }] },
      ],
    };
    const body = toChatBody(request);
    expect(body.messages).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: "hi" },
      { role: "assistant", content: "", tool_calls: [{ id: "t1", type: "function", function: { name: "get", arguments: '{"a":1}' } }] },
      { role: "tool", tool_call_id: "t1", content: "42" },
    ]);
    expect(body.chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(body.response_format).toEqual({ type: "json_schema", json_schema: { name: "output", schema: { type: "object" } } });
    expect(body.tool_choice).toBe("required");
    expect((body.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(["get"]);
    expect(body.stop).toEqual(["END"]);
    expect(toChatBody({ model: "m", messages: [], tool_choice: { type: "any" } }).tool_choice).toBe("required");
    expect(toChatBody({ model: "m", messages: [], thinking: { type: "enabled", budget_tokens: 64 } })).toMatchObject({ chat_template_kwargs: { enable_thinking: true }, thinking_budget_tokens: 64 });
  });

  test("answers: stop sequence, max_tokens and tool_use stop reasons; thinking blocks; the client's model name", () => {
    const chat = (finish: string, message: Record<string, unknown>, word = "") => ({
      id: "chatcmpl-1",
      model: "/m.gguf",
      choices: [{ finish_reason: finish, message }],
      usage: { prompt_tokens: 3, completion_tokens: 2 },
      __verbose: { stopping_word: word },
    });
    const stopped = toMessage(chat("stop", { content: "ab" }, "END"), "Tiny", []);
    expect(stopped).toMatchObject({ model: "Tiny", stop_reason: "stop_sequence", stop_sequence: "END", content: [{ type: "text", text: "ab" }] });
    expect(schemaErrors(anthropicSpec.messages.response, stopped)).toEqual([]);
    expect(toMessage(chat("stop", { content: "ab" }), "Tiny", []).stop_reason).toBe("end_turn");
    expect(toMessage(chat("length", { content: "ab" }), "Tiny", []).stop_reason).toBe("max_tokens");
    const called = chat("tool_calls", { reasoning_content: "hm", tool_calls: [{ id: "c", function: { name: "get", arguments: '{"a":1}' } }] });
    // Thinking blocks only when the request enabled thinking, as Anthropic's API sends them.
    const tool = toMessage(called, "Tiny", ["w"], true);
    expect(tool.content).toEqual([
      { type: "thinking", thinking: "hm", signature: "" },
      { type: "tool_use", id: "c", name: "get", input: { a: 1 } },
    ]);
    expect(tool).toMatchObject({ stop_reason: "tool_use", warnings: ["w"] });
    expect(toMessage(called, "Tiny", []).content).toEqual([{ type: "tool_use", id: "c", name: "get", input: { a: 1 } }]);
    // Always a text block when no tool is called, empty when the model only thought (Lemonade's shape).
    expect(toMessage(chat("length", { content: "", reasoning_content: "hm" }), "Tiny", []).content).toEqual([{ type: "text", text: "" }]);
  });

  test("streams: chat chunks become message_start, blocks, message_delta with the stop reason, message_stop", () => {
    const { events } = translate(messagesStream("Tiny", [], true), [
      { id: "chatcmpl-1", choices: [{ delta: { reasoning_content: "hm" } }] },
      { id: "chatcmpl-1", choices: [{ delta: { content: "Hi" } }] },
      { id: "chatcmpl-1", choices: [{ delta: {}, finish_reason: "stop" }], __verbose: { stopping_word: "END" } },
      { id: "chatcmpl-1", choices: [], usage: { prompt_tokens: 4, completion_tokens: 2 } },
      "[DONE]",
    ]);
    expect(events.map((e) => e.type)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events[0].message.model).toBe("Tiny");
    expect(events[2].delta).toEqual({ type: "thinking_delta", thinking: "hm" });
    expect(events[5]).toMatchObject({ index: 1, delta: { type: "text_delta", text: "Hi" } });
    expect(events[7]).toMatchObject({ delta: { stop_reason: "stop_sequence", stop_sequence: "END" }, usage: { input_tokens: 4, output_tokens: 2 } });
    const short = translate(messagesStream("Tiny", []), [{ id: "x", choices: [{ delta: { content: "a" } }] }]);
    // Without thinking asked for, the reasoning is not sent: the text is the first block.
    const plain = translate(messagesStream("Tiny", []), [
      { id: "chatcmpl-1", choices: [{ delta: { reasoning_content: "hm" } }] },
      { id: "chatcmpl-1", choices: [{ delta: { content: "Hi" }, finish_reason: "stop" }] },
      "[DONE]",
    ]).events;
    expect(plain.filter((e) => e.type === "content_block_start").map((e) => e.content_block.type)).toEqual(["text"]);
    // Nothing written and no tool called: one empty text block; the warnings ride on message_delta.
    const empty = translate(messagesStream("Tiny", ["Ignored 'metadata' field"]), [{ id: "chatcmpl-1", choices: [{ delta: {}, finish_reason: "length" }] }, "[DONE]"]).events;
    expect(empty.map((e) => e.type)).toEqual(["message_start", "content_block_start", "content_block_stop", "message_delta", "message_stop"]);
    expect(empty[1].content_block).toEqual({ type: "text", text: "" });
    expect(empty[3]).toMatchObject({ delta: { stop_reason: "max_tokens" }, warnings: ["Ignored 'metadata' field"] });
    expect(empty[0].message.warnings).toBeUndefined();
    expect(short.text.endsWith("<short>")).toBe(true);
  });
});

describe("engine errors", () => {
  test("a context overflow is a 400 context_length_exceeded; other errors keep the status, typed by it, with no paths", () => {
    const overflow = engineError(
      400,
      JSON.stringify({ error: { code: 400, message: "request (900 tokens) exceeds the available context size (256 tokens), try increasing it", type: "exceed_context_size_error", n_prompt_tokens: 900, n_ctx: 256 } }),
      "Tiny",
    );
    expect(openaiErrorBody(overflow)).toMatchObject({ error: { type: "invalid_request_error", code: "context_length_exceeded" } });
    const server = engineError(500, JSON.stringify({ error: { code: 500, message: "failed to open /home/u/.cache/x/model.gguf", type: "server_error" } }), "Tiny");
    expect(server).toMatchObject({ status: 500, code: "server_error", type: "backend_error", message: "failed to open model.gguf" });
    expect(JSON.stringify(openaiErrorBody(server))).not.toContain("/home/u");
    expect(engineError(404, "Not Found", "Tiny")).toMatchObject({ status: 404, type: "invalid_request_error", message: "Not Found" });
    expect(scrubPaths("C:\\Users\\me\\m.gguf and /tmp/a/b.bin")).toBe("m.gguf and b.bin");
  });
});

describe("ollama", () => {
  test("options and top-level sampling keys become OpenAI's; num_predict is max_tokens, repeat_penalty frequency_penalty (ollama.md)", () => {
    expect(samplingFrom({ options: { temperature: 0.1, num_predict: 5, repeat_penalty: 1.2 }, temperature: 0.7, seed: 3 })).toEqual({
      temperature: 0.7,
      seed: 3,
      max_tokens: 5,
      frequency_penalty: 1.2,
    });
    expect(samplingFrom({ options: { num_predict: -1 } })).toEqual({});
  });

  test("messages: images become image parts; tool-call arguments become strings; tool results keep their name", () => {
    const out = toOpenAIMessages([
      { role: "user", content: "see", images: ["iVBORw0KGgo="] },
      { role: "assistant", content: "", tool_calls: [{ function: { name: "f", arguments: { a: 1 } } }] },
      { role: "tool", content: "42", tool_name: "f" },
    ]);
    expect(out[0]!.content).toEqual([
      { type: "text", text: "see" },
      { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
    ]);
    expect(out[1]!.tool_calls).toEqual([{ id: "call_0", type: "function", function: { name: "f", arguments: '{"a":1}' } }]);
    expect(out[2]).toEqual({ role: "tool", content: "42", name: "f", tool_call_id: "call_0" });
    const two = toOpenAIMessages([
      { role: "assistant", content: "", tool_calls: [{ id: "a", function: { name: "f", arguments: {} } }, { id: "b", function: { name: "g", arguments: {} } }] },
      { role: "tool", content: "G", tool_name: "g" },
      { role: "tool", content: "F", tool_name: "f" },
    ]);
    expect(two.slice(1).map((m) => m.tool_call_id)).toEqual(["b", "a"]);
  });

  test.each([
    ["a missing model is 404", ApiError.of(E.modelNotFound, "x"), "serve", 404],
    ["a failed load is 404", ApiError.of(E.modelLoadError, "x"), "serve", 404],
    ["a pinned-slots refusal is 404 too", ApiError.of(E.slotsPinned, "x"), "serve", 404],
    ["a router residency conflict is 409", ApiError.of(E.routerResidencyConflict, "x"), "serve", 409],
    ["a context overflow the engine found is 400", ApiError.of(E.contextLengthExceeded, "x").with({ fromEngine: true }), "serve", 400],
    ["another engine error is 500 whatever its status", ApiError.of(E.engineNotFound, "x").with({ fromEngine: true }), "serve", 500],
    ["a request mistake keeps its 400", ApiError.of(E.invalidArgument, "x"), "serve", 400],
    ["an engine failure is 500", ApiError.of(E.backendUnavailable, "x").with({ fromEngine: true }), "serve", 500],
    ["a failed pull is 500", ApiError.of(E.hubNotFound, "x"), "pull", 500],
    ["deleting a model the registry does not know is 404", ApiError.of(E.modelNotFound, "x"), "delete", 404],
    ["another delete failure is 500", ApiError.of(E.authConflict, "x"), "delete", 500],
  ] as const)("%s", (_name, err, step, status) => {
    expect(ollamaError(err, step).status).toBe(status);
  });

  test("details: parameter size from the name, quantization from the checkpoint", () => {
    const model = { id: "Qwen3-0.6B-GGUF", recipe: "llamacpp", source: "huggingface", checkpoints: { main: "unsloth/Qwen3-0.6B-GGUF:Q4_K_M" } } as unknown as CatalogModel;
    expect(details(model)).toMatchObject({ family: "llamacpp", parameter_size: "0.6B", quantization_level: "Q4_K_M", format: "gguf" });
  });

  test("whole answers match their definitions' response schemas", async () => {
    // The proxy's answer is the engine's; the route's translation is what is checked.
    const answering = (engine: unknown) =>
      ({ proxy: { toModel: async () => Response.json(engine) }, catalog: { find: () => undefined }, scheduler: {}, options: {} }) as unknown as Pick<ServerContext, "catalog" | "options" | "proxy" | "scheduler">;
    const signal = new AbortController().signal;
    const usage = { prompt_tokens: 3, completion_tokens: 2 };
    const chatCtx = answering({ choices: [{ message: { content: "hi", reasoning_content: "hm", tool_calls: [{ function: { name: "f", arguments: '{"a":1}' } }] }, finish_reason: "stop" }], usage, timings: { prompt_ms: 1, predicted_ms: 2 } });
    const chat = await ollama.chat(chatCtx, { model: "m", messages: [{ role: "user", content: "hi" }], stream: false }, signal, "ollama_chat");
    expect(schemaErrors(ollamaSpec.chat.response, await (chat as Response).json())).toEqual([]);
    const generated = await ollama.generate(answering({ choices: [{ text: "ab", finish_reason: "length" }], usage }), { model: "m", prompt: "x", stream: false }, signal, "ollama_generate");
    expect(schemaErrors(ollamaSpec.generate.response, await (generated as Response).json())).toEqual([]);
    const vectors = answering({ data: [{ index: 1, embedding: [0.5] }, { index: 0, embedding: [0.25] }] });
    const embedded = await ollama.embed(vectors, { model: "m", input: ["a", "b"] }, signal, "ollama_embed");
    expect(embedded.embeddings).toEqual([[0.25], [0.5]]);
    expect(schemaErrors(ollamaSpec.embed.response, embedded)).toEqual([]);
    expect(schemaErrors(ollamaSpec.embeddings.response, await ollama.embeddings(vectors, { model: "m", prompt: "a" }, signal, "ollama_embeddings"))).toEqual([]);
  });
});
