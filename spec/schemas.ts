// Schemas shared across endpoint families. Descriptions here are what the docs print.
import { Type as T, type TSchema, type SchemaOptions } from "@sinclair/typebox";
import type { ParamStatus } from "./endpoint.ts";
import { MODEL_ERROR_CODES } from "./errors.ts";

/** Marks a parameter's availability for the docs' Status column (default `available`). */
export function status<S extends TSchema>(schema: S, value: ParamStatus): S {
  return { ...schema, "x-status": value };
}

/** A nullable value: present in the body, possibly `null`. */
export const Nullable = <S extends TSchema>(schema: S, options: SchemaOptions = {}) =>
  T.Union([schema, T.Null()], options);

/** No model name (with its `user.`/`builtin.` prefix, an alias, or a `:latest` tag) is longer: a
 * longer one is refused before any lookup, so no lookup costs time in a client's string. */
export const MAX_MODEL_NAME_BYTES = 256;

export const ModelName = T.String({ description: `The model to run; loaded on first use. At most ${MAX_MODEL_NAME_BYTES} characters.`, minLength: 1, maxLength: MAX_MODEL_NAME_BYTES });

export const ModelType = T.Union(
  ["llm", "embedding", "reranking", "transcription", "image", "tts", "audio-generation", "classification", "mesh"].map((v) => T.Literal(v)),
  { description: "Model type." },
);

/** Per-type counts, as `/v1/health` reports `max_models` and `pinned_models`. */
export const PerModelType = (what: string) =>
  T.Object({
    llm: T.Integer({ description: `${what}: LLM/chat models` }),
    embedding: T.Integer({ description: `${what}: embedding models` }),
    reranking: T.Integer({ description: `${what}: reranking models` }),
    transcription: T.Integer({ description: `${what}: speech-to-text models` }),
    image: T.Integer({ description: `${what}: image models` }),
    tts: T.Integer({ description: `${what}: text-to-speech models` }),
    "audio-generation": T.Integer({ description: `${what}: music and sound-effect generators` }),
    classification: T.Integer({ description: `${what}: text classifiers` }),
    mesh: T.Integer({ description: `${what}: image-to-3D models` }),
  });

export const OpenAIError = T.Object({
  error: T.Object({
    message: T.String({ description: "What went wrong, naming the offending field where there is one." }),
    type: T.String({ description: "The error's class, such as `invalid_request_error`." }),
    code: T.Optional(T.String({ description: "The machine-readable code from the Errors table." })),
    param: T.Optional(T.String({ description: "The offending field, when one is to blame." })),
  }),
}, { title: "OpenAIError" });

export const OllamaError = T.Object({
  error: T.String({ description: "What went wrong." }),
}, { title: "OllamaError" });

export const AnthropicError = T.Object({
  type: T.Literal("error"),
  error: T.Object({
    type: T.String({ description: "The error's class, such as `invalid_request_error`." }),
    message: T.String({ description: "What went wrong." }),
  }),
}, { title: "AnthropicError" });

/** Lemonade's own endpoints: both shapes lemonade.md shows (`{"status": "error", "message"}` and
 * `{"error": "<string>"}`) in one body, plus the machine-readable code. */
export const LemonadeError = T.Object({
  status: T.Literal("error"),
  message: T.String({ description: "What went wrong, naming the offending field where there is one." }),
  error: T.String({ description: "The same message." }),
  code: T.Optional(T.String({ description: "The machine-readable code from the Errors table." })),
  type: T.String({ description: "The error's class, such as `invalid_request_error`." }),
  param: T.Optional(T.String({ description: "The offending field, when one is to blame." })),
}, { title: "LemonadeError" });

export const LemonadeModelError = T.Object({
  status: T.Literal("error"),
  message: T.String({ description: "What went wrong." }),
  code: T.Optional(T.String({ description: "The machine-readable code from the Errors table." })),
  error: T.Object({
    message: T.String({ description: "The same message." }),
    type: T.String({ description: `The model error's code (${MODEL_ERROR_CODES.map((c) => `\`${c}\``).join(", ")}), else the error's class, such as \`invalid_request_error\`.` }),
    code: T.Optional(T.String({ description: "The machine-readable code from the Errors table." })),
    param: T.Optional(T.String({ description: "The offending field: `model` for a model error." })),
    requested_model: T.Optional(T.String({ description: "The model the request named, for a model error." })),
  }),
}, { title: "LemonadeModelError" });

export const SamplingParams = {
  temperature: T.Optional(T.Number({ description: "Sampling temperature." })),
  top_p: T.Optional(
    T.Number({
      description: "Cumulative probability of the top tokens to consider during nucleus sampling, from `0.0` to `1.0`.",
    }),
  ),
  top_k: T.Optional(T.Integer({ description: "Number of top tokens to consider during sampling." })),
  repeat_penalty: T.Optional(
    T.Number({ description: "From `1.0` to `2.0`: `1.0` applies no penalty, and higher values discourage repetition." }),
  ),
  seed: T.Optional(T.Integer({ description: "Random seed for reproducible sampling." })),
};
