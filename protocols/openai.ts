// The OpenAI dialect: request bodies as llama.cpp takes them, which models each route serves,
// how its event streams end, and its error body.
import { ApiError } from "../lib/api-error.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { ModelCheck, StreamRule } from "../runtime/proxy.ts";

const DONE = "data: [DONE]\n\n";

/** `{"error": {message, type, code, param}}` */
export function openaiErrorBody(err: ApiError): unknown {
  const error: Record<string, string> = { message: err.message, type: err.type };
  if (err.code) error.code = err.code;
  if (err.param) error.param = err.param;
  return { error };
}

function streamError(message: string, status: number): string {
  return `data: ${JSON.stringify({ error: { message, type: "backend_error", status_code: status } })}\n\n`;
}

/** Chat and completion streams end with `[DONE]`; anything else stopped short. */
export const chatStream: StreamRule = {
  ending: (tail) => (tail.includes("[DONE]") ? "" : null),
  errorEvent: streamError,
};

/** Responses streams end with `response.completed`; llama.cpp leaves out the `[DONE]` the docs
 * promise after it, so the proxy adds it. */
export const responsesStream: StreamRule = {
  ending: (tail) => (tail.includes("[DONE]") ? "" : tail.includes('"type":"response.completed"') ? DONE : null),
  errorEvent: streamError,
};

/** Lemonade-only fields, read by the server and not sent on to the engine. `enable_thinking` (or
 * `thinking: false`) becomes the chat-template switch llama.cpp's reasoning templates read, and
 * OpenAI's `json_object` response format becomes the schema llama.cpp turns into a grammar (it
 * constrains nothing for a bare `json_object`). */
export function toEngineBody(body: Record<string, unknown>) {
  const { ctx_size, enable_thinking, thinking, ...engineBody } = body;
  const format = engineBody.response_format as { type?: string; schema?: unknown } | undefined;
  if (format?.type === "json_object") {
    engineBody.response_format = { type: "json_schema", json_schema: { schema: format.schema ?? { type: "object" } } };
  }
  const think = typeof enable_thinking === "boolean" ? enable_thinking : typeof thinking === "boolean" ? thinking : undefined;
  if (think !== undefined) {
    const kwargs = (engineBody.chat_template_kwargs as Record<string, unknown> | undefined) ?? {};
    engineBody.chat_template_kwargs = { ...kwargs, enable_thinking: think };
  } else if (thinking !== undefined) {
    engineBody.thinking = thinking;
  }
  return { engineBody, loadOptions: ctx_size === undefined ? undefined : { ctx_size } };
}

/** Routes that generate text take LLMs only. */
export const needsLlm =
  (code = ""): ModelCheck =>
  (model: CatalogModel) =>
    model.type === "llm" ? null : new ApiError(400, code, `Model ${model.id} is not an LLM (its type is ${model.type})`, "model");

export const needsEmbedder: ModelCheck = (model) => {
  if (model.recipe !== "llamacpp") return new ApiError(400, "", `Model ${model.id}'s backend (${model.recipe}) cannot embed`, "model");
  if (model.type !== "embedding") {
    return new ApiError(501, "", `Model ${model.id} is a llama.cpp ${model.type} model, not an embedding model`, "model");
  }
  return null;
};

export const needsReranker: ModelCheck = (model) =>
  model.recipe === "llamacpp" && model.type === "reranking"
    ? null
    : new ApiError(400, "", `Model ${model.id} is not a llama.cpp reranking model`, "model");

/** Slots and tokenize reach the most recently used model, which must be a llama.cpp one. */
export const needsLlamacpp: ModelCheck = (model) =>
  model.recipe === "llamacpp" ? null : new ApiError(400, "", `The most recently used model, ${model.id}, is not a llama.cpp model`);
