// The OpenAI dialect: request bodies as llama.cpp takes them, which models each route serves,
// how its event streams end, and its error body.
import { ApiError } from "../lib/api-error.ts";
import { E, type ErrorRow } from "../spec/errors.ts";
import { asJson, isJson, jsonItems, type Json } from "../lib/json.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { ModelCheck } from "../runtime/request.ts";
import { sseFramer, type StreamRule } from "../runtime/stream-pump.ts";
import { serves, upstreamJudges, type Capability } from "../spec/recipes.ts";

const DONE = "data: [DONE]\n\n";

/** `{"error": {message, type, code, param}}` */
export function openaiErrorBody(err: ApiError): unknown {
  const error: Record<string, unknown> = { message: err.message, type: err.type };
  if (err.code) error.code = err.code;
  if (err.param) error.param = err.param;
  if (err.extras.retryable !== undefined) error.retryable = err.extras.retryable;
  if (err.extras.details !== undefined) error.details = err.extras.details;
  return { error: { ...err.extras.fields, ...error } };
}

/** `data: {"error": {message, type, code, status_code}}`: the one event a failed stream ends with,
 * with the error's documented fields (a cloud error's `provider`) as its JSON answer has them. */
export function openaiStreamError(err: ApiError): string {
  const error: Record<string, unknown> = { message: err.message, type: err.type };
  if (err.code) error.code = err.code;
  error.status_code = err.status;
  if (err.extras.retryable !== undefined) error.retryable = err.extras.retryable;
  return `data: ${JSON.stringify({ error: { ...err.extras.fields, ...error } })}\n\n`;
}

/** OpenAI's framing: SSE, an SSE comment for the keep-alive, its error event. */
export const openaiFramer = sseFramer(openaiStreamError);

/** Chat and completion streams end with `[DONE]`; anything else stopped short. */
export const chatStream: StreamRule = {
  framer: openaiFramer,
  ending: (tail) => (tail.includes("[DONE]") ? "" : null),
};

/** A stream whose every JSON event is rewritten by `map` (state lives in the closure `make`
 * returns, one per stream); `[DONE]` ends it. */
export function mappedStream(make: () => (event: Json) => Json): StreamRule {
  return {
    framer: openaiFramer,
    translate: () => {
      const map = make();
      let done = false;
      return {
        event(data) {
          if (data === "[DONE]") {
            done = true;
            return DONE;
          }
          return `data: ${JSON.stringify(map(asJson(JSON.parse(data))))}\n\n`;
        },
        end: () => (done ? "" : null),
      };
    },
  };
}

/** A tool call as an engine's answer carries it (`index` in stream deltas). */
export type EngineToolCall = {
  id?: string;
  index?: number;
  function?: { name?: string; arguments?: unknown };
};

/** A message, or a stream delta of one, as an engine's answer carries it. */
export type EngineMessage = {
  role?: string;
  content?: string | null;
  reasoning_content?: string;
  tool_calls?: EngineToolCall[];
};

/** The fields read of an engine's OpenAI-shaped answer or stream event (chat and text
 * completions, from llama-server or a cloud upstream); any of them may be absent. A type, not an
 * interface, so that it is a Json too. */
export type EngineAnswer = {
  id?: string;
  choices?: { index?: number; message?: EngineMessage; delta?: EngineMessage; text?: string; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } };
  /** llama.cpp's own timings, in milliseconds. */
  timings?: { prompt_ms?: number; predicted_ms?: number };
  /** llama.cpp's verbose fields, asked for with `response_fields`. */
  __verbose?: { stopping_word?: string };
  error?: unknown;
};

/** An engine's parsed answer read as an EngineAnswer: the engines speak OpenAI's format, so its
 * fields are taken to have OpenAI's types once the answer is an object; anything else reads as
 * an answer with no fields. */
export function engineAnswer(value: unknown): EngineAnswer {
  return isJson(value) ? (value as EngineAnswer) : {};
}

/** The vectors of an engine's embeddings answer, in input order. */
export function embeddingVectors(answer: unknown): number[][] {
  return jsonItems(asJson(answer).data)
    .sort((a, b) => Number(a.index) - Number(b.index))
    .map((d) => (Array.isArray(d.embedding) ? d.embedding.map(Number) : []));
}

/** Lemonade-only fields, read by the server and not sent on to the engine. `enable_thinking` (or
 * `thinking: false`) becomes the chat-template switch llama.cpp's reasoning templates read, and
 * OpenAI's `json_object` response format becomes the schema llama.cpp turns into a grammar (it
 * constrains nothing for a bare `json_object`). With both token limits, `max_tokens` wins (as
 * llama.cpp reads it); `max_completion_tokens` alone becomes `max_tokens`. */
export function toEngineBody(body: Json) {
  const { ctx_size, enable_thinking, thinking, max_completion_tokens, ...engineBody } = body;
  if (engineBody.max_tokens === undefined && max_completion_tokens !== undefined) engineBody.max_tokens = max_completion_tokens;
  const format = asJson(engineBody.response_format);
  if (format.type === "json_object") {
    engineBody.response_format = { type: "json_schema", json_schema: { schema: format.schema ?? { type: "object" } } };
  }
  const think = typeof enable_thinking === "boolean" ? enable_thinking : typeof thinking === "boolean" ? thinking : undefined;
  if (think !== undefined) {
    engineBody.chat_template_kwargs = { ...asJson(engineBody.chat_template_kwargs), enable_thinking: think };
  } else if (thinking !== undefined) {
    engineBody.thinking = thinking;
  }
  return { engineBody, loadOptions: ctx_size === undefined ? undefined : { ctx_size } };
}

/** /v1/completions on llama.cpp: `echo` is ignored (llama.cpp refuses it), and OpenAI's
 * `logprobs` (true or a count of alternatives) becomes llama.cpp's `n_probs`. */
export function toCompletionBody(engineBody: Json): { body: Json; logprobs: boolean } {
  const { echo, logprobs, ...body } = engineBody;
  if (logprobs === undefined || logprobs === false || logprobs === null) return { body, logprobs: false };
  body.n_probs = typeof logprobs === "number" ? Math.max(1, logprobs) : 1;
  return { body, logprobs: true };
}

/** llama.cpp's chat-shaped `logprobs.content` → the legacy completions shape (`tokens`,
 * `token_logprobs`, `top_logprobs`, `text_offset`), offsets counted from the start of the
 * generated text. Stateful: one per answer, fed its choices in order (a stream chunk by chunk). */
export function legacyLogprobs(): (choice: Json) => void {
  let offset = 0;
  return (choice) => {
    const content = asJson(choice.logprobs).content;
    if (!Array.isArray(content)) return;
    const out = { tokens: [] as string[], token_logprobs: [] as number[], top_logprobs: [] as Record<string, number>[], text_offset: [] as number[] };
    for (const t of jsonItems(content)) {
      const token = String(t.token ?? "");
      out.tokens.push(token);
      out.token_logprobs.push(Number(t.logprob));
      out.top_logprobs.push(Object.fromEntries(jsonItems(t.top_logprobs).map((p) => [String(p.token), Number(p.logprob)])));
      out.text_offset.push(offset);
      offset += token.length;
    }
    choice.logprobs = out;
  };
}

/** Whether an OpenAI chat body (or a Responses `input`) carries an image. */
export function hasImage(body: Json): boolean {
  const items = jsonItems(Array.isArray(body.messages) ? body.messages : body.input);
  return items.some((m) => jsonItems(m.content).some((p) => p.type === "image_url" || p.type === "input_image" || p.type === "image"));
}

/** Whether a model takes images: a vision label or a vision projector among its files; a model
 * its upstream judges (a cloud provider's) is left to it. */
export const hasVision = (model: CatalogModel) => upstreamJudges(model.recipe) || model.labels.includes("vision") || model.checkpoints.mmproj !== undefined;

/** Adds the image check to a route's check, when the request carries an image. */
export function visionCheck(check: ModelCheck, body: Json): ModelCheck {
  if (!hasImage(body)) return check;
  return (model, named) =>
    check(model, named) ??
    (hasVision(model) ? null : ApiError.of(E.noVision, `Model ${named(model)} does not accept images: it has no vision projector (mmproj)`, "messages"));
}

/** Routes that generate text take LLMs only. */
export const needsLlm =
  (row: ErrorRow = E.notAnLlm): ModelCheck =>
  (model, named) =>
    model.type === "llm" ? null : ApiError.of(row, `Model ${named(model)} is not an LLM (its type is ${model.type})`, "model");

/** Chat and text completions refuse a model that is no LLM as Lemonade's server words it, naming
 * the route's kind of generation. */
export const needsLlmFor =
  (what: "chat completion" | "completion"): ModelCheck =>
  (model: CatalogModel) =>
    model.type === "llm" ? null : ApiError.of(E.notAnLlm, `This model does not support ${what}. Only LLM models support this endpoint.`);

/** A model its upstream judges (a cloud provider's: a plain OpenAI-style listing names no
 * capabilities) is left to say for itself whether it embeds or reranks. */
export const needsEmbedder: ModelCheck = (model, named) => {
  if (upstreamJudges(model.recipe)) return null;
  if (!serves(model.recipe, "embeddings")) return ApiError.of(E.cannotEmbed, `Model ${named(model)}'s backend (${model.recipe}) cannot embed`, "model");
  if (model.type !== "embedding") {
    return ApiError.of(E.notEmbeddingModel, `Model ${named(model)} is a ${model.recipe} ${model.type} model, not an embedding model`, "model");
  }
  return null;
};

export const needsReranker: ModelCheck = (model, named) =>
  upstreamJudges(model.recipe) || (serves(model.recipe, "rerank") && model.type === "reranking")
    ? null
    : ApiError.of(E.notReranker, `Model ${named(model)} is not a reranking model (its type is ${model.type}, its recipe ${model.recipe})`, "model");

/** Slots and tokenize reach the most recently used model, whose recipe must serve them. */
export const needs =
  (capability: Capability): ModelCheck =>
  (model, named) =>
    serves(model.recipe, capability) ? null : ApiError.of(E.recentLacksCapability, `The most recently used model, ${named(model)}, has no ${capability} (its recipe is ${model.recipe})`);
