// The protocol adapters' pure parts: request translation, stream-end rules, error mapping.
import { describe, expect, test } from "bun:test";
import { ApiError } from "../../lib/api-error.ts";
import { chatStream, openaiErrorBody, responsesStream, toEngineBody } from "../../protocols/openai.ts";
import { anthropicErrorBody, messagesStream, splitKnown } from "../../protocols/anthropic.ts";
import { details, ollamaError, samplingFrom, toOpenAIMessages } from "../../protocols/ollama.ts";
import type { CatalogModel } from "../../models/catalog.ts";

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

  test("stream ends: chat needs [DONE]; Responses gets the [DONE] llama.cpp leaves out; a short stream is an error", () => {
    expect(chatStream.ending('data: {"x":1}\n\ndata: [DONE]\n\n')).toBe("");
    expect(chatStream.ending('data: {"x":1}\n\n')).toBeNull();
    expect(responsesStream.ending('event: response.completed\ndata: {"type":"response.completed"}\n\n')).toBe("data: [DONE]\n\n");
    expect(responsesStream.ending('data: {"type":"response.output_text.delta"}\n\n')).toBeNull();
    const event = JSON.parse(chatStream.errorEvent("gone", 502).replace(/^data: /, ""));
    expect(event).toEqual({ error: { message: "gone", type: "backend_error", status_code: 502 } });
  });

  test("error body: message, type from the status, code and param when set", () => {
    expect(openaiErrorBody(new ApiError(404, "model_not_found", "no", "model"))).toEqual({
      error: { message: "no", type: "not_found_error", code: "model_not_found", param: "model" },
    });
  });
});

describe("anthropic", () => {
  test("unknown fields are split off; streams end at message_stop; errors in Anthropic's shape", () => {
    expect(splitKnown({ model: "m", foo: 1 }, new Set(["model"]))).toEqual({ known: { model: "m" }, ignored: ["foo"] });
    expect(messagesStream.ending('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe("");
    expect(messagesStream.ending("event: content_block_delta\n\n")).toBeNull();
    expect(messagesStream.errorEvent("gone", 502)).toStartWith("event: error\ndata: ");
    expect(anthropicErrorBody(new ApiError(400, "x", "bad"))).toEqual({ type: "error", error: { type: "invalid_request_error", message: "bad" } });
  });
});

describe("ollama", () => {
  test("options and top-level sampling keys become llama.cpp's; num_predict is max_tokens", () => {
    expect(samplingFrom({ options: { temperature: 0.1, num_predict: 5, repeat_penalty: 1.2 }, temperature: 0.7, seed: 3 })).toEqual({
      temperature: 0.7,
      seed: 3,
      max_tokens: 5,
      repeat_penalty: 1.2,
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
    expect(out[2]).toEqual({ role: "tool", content: "42", name: "f" });
  });

  test.each([
    ["a missing model is 404", new ApiError(404, "model_not_found", "x"), "serve", 404],
    ["a failed load is 404", new ApiError(500, "model_load_error", "x"), "serve", 404],
    ["pinned slots keep their 409", new ApiError(409, "slots_pinned_error", "x"), "serve", 409],
    ["a request mistake keeps its 400", new ApiError(400, "invalid_argument", "x"), "serve", 400],
    ["an engine failure is 500", new ApiError(502, "backend_error", "x"), "serve", 500],
    ["a failed pull is 500", new ApiError(404, "download_failed", "x"), "pull", 500],
    ["deleting what is not there is 404", new ApiError(404, "model_not_downloaded", "x"), "delete", 404],
    ["another delete failure is 500", new ApiError(409, "x", "x"), "delete", 500],
  ] as const)("%s", (_name, err, step, status) => {
    expect(ollamaError(err, step).status).toBe(status);
  });

  test("details: parameter size from the name, quantization from the checkpoint", () => {
    const model = { id: "Qwen3-0.6B-GGUF", recipe: "llamacpp", source: "huggingface", checkpoints: { main: "unsloth/Qwen3-0.6B-GGUF:Q4_K_M" } } as unknown as CatalogModel;
    expect(details(model)).toMatchObject({ family: "llamacpp", parameter_size: "0.6B", quantization_level: "Q4_K_M", format: "gguf" });
  });
});
