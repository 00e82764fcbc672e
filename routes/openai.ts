// OpenAI-compatible inference routes: each one forwards to the model's engine through server/proxy.
import type { Elysia } from "elysia";
import { bind } from "./bind.ts";
import { openai as spec } from "../spec/index.ts";
import { proxyToEngine } from "../server/proxy.ts";
import { ApiError } from "../server/errors.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { ServerContext } from "../server/context.ts";
import { speak } from "../server/speech.ts";
import { transcribe } from "../server/transcribe.ts";

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

export const needsLlm = (code = "") => (model: CatalogModel) =>
  model.type === "llm" ? null : new ApiError(400, code, `Model ${model.id} is not an LLM (its type is ${model.type})`, "model");

const needsEmbedder = (model: CatalogModel) => {
  if (model.recipe !== "llamacpp") return new ApiError(400, "", `Model ${model.id}'s backend (${model.recipe}) cannot embed`, "model");
  if (model.type !== "embedding") {
    return new ApiError(501, "", `Model ${model.id} is a llama.cpp ${model.type} model, not an embedding model`, "model");
  }
  return null;
};

export function openaiRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  const routes = [
    [spec.chatCompletions, "/v1/chat/completions", "chat_completions", needsLlm(), true],
    [spec.completions, "/v1/completions", "completions", needsLlm(), true],
    [spec.responses, "/v1/responses", "responses", needsLlm("model_not_applicable"), true],
    [spec.embeddings, "/v1/embeddings", "embeddings", needsEmbedder, false],
  ] as const;
  for (const [def, path, endpoint, check, generation] of routes) {
    bind(app, def, ({ body, request }) => {
      const { engineBody, loadOptions } = toEngineBody(body);
      return proxyToEngine(ctx, {
        model: body.model,
        path,
        body: engineBody,
        stream: body.stream === true,
        check,
        loadOptions,
        signal: request.signal,
        endpoint,
        generation,
      });
    });
  }
}

export function speechRoute(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  bind(app, spec.audioSpeech, ({ body }) => speak(ctx, body));
  bind(app, spec.audioTranscriptions, ({ request }) => transcribe(ctx, request));
}
