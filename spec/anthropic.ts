// Anthropic-compatible Messages API (anthropic.md), answered by llama.cpp's own Anthropic layer.
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E, ENGINE_ERRORS } from "./errors.ts";
import { ModelName } from "./schemas.ts";

/** Request fields passed on to the engine; any other field is dropped and named in a warning. */
export const MESSAGES_FIELDS = [
  "model", "messages", "system", "max_tokens", "temperature", "top_p", "top_k", "stop_sequences",
  "stream", "tools", "tool_choice", "thinking", "output_config", "metadata",
] as const;

export const WARNING_HEADER = "x-lemonade-warning";

const messagesBody = T.Object(
  {
    model: ModelName,
    messages: T.Array(
      T.Object(
        {
          role: T.String({ description: "`user` or `assistant`." }),
          content: T.Unknown({ description: "Text, or content blocks: `text`, `image`, `tool_use`, `tool_result`, `thinking`." }),
        },
        { title: "AnthropicMessage", additionalProperties: true },
      ),
      { description: "The conversation so far, in Anthropic's format." },
    ),
    max_tokens: T.Optional(T.Integer({ description: "Upper bound on generated tokens." })),
    system: T.Optional(T.Unknown({ description: "System prompt, as a string or text blocks." })),
    temperature: T.Optional(T.Number({ description: "Sampling temperature." })),
    top_p: T.Optional(T.Number({ description: "Nucleus sampling cut-off." })),
    top_k: T.Optional(T.Integer({ description: "Number of top tokens to consider." })),
    stop_sequences: T.Optional(T.Array(T.String(), { description: "Sequences that stop generation." })),
    stream: T.Optional(T.Boolean({ description: "`true` streams Anthropic's server-sent events. Defaults to `false`." })),
    tools: T.Optional(T.Array(T.Unknown(), { description: "Tools the model may call (`name`, `description`, `input_schema`)." })),
    tool_choice: T.Optional(T.Unknown({ description: "`auto`, `any`, `none` or a named tool." })),
    thinking: T.Optional(T.Unknown({ description: "`{\"type\": \"disabled\"}` turns reasoning off on models that think." })),
  },
  { title: "AnthropicMessagesRequest", additionalProperties: true },
);

export const messages = endpoint({
  id: "anthropic.messages",
  method: "POST",
  path: "/messages",
  mount: "versioned",
  page: "anthropic",
  errorStyle: "anthropic",
  access: "api",
  summary: "Generate the next message (Anthropic Messages API)",
  availability: "partially_available",
  description:
    "Generates the next assistant message in Anthropic's Messages format, loading the model on first use. Query parameters such as `?beta=true` are accepted. Reasoning models answer with `thinking` blocks; tool calls come back as `tool_use` blocks and tool results go in as `tool_result` blocks.",
  notes: `Streaming sends Anthropic's events: \`message_start\`, then per block \`content_block_start\`, \`content_block_delta\`s and \`content_block_stop\`, then \`message_delta\` (stop reason and usage) and \`message_stop\`. Fields other than the ones listed (and \`metadata\`, which is taken and not used) are ignored, never refused: each is named, as \`Ignored '<field>' field\`, in the \`${WARNING_HEADER}\` response header (warnings joined by \` | \`) and in the message's \`warnings\` array (a stream's \`message_delta\` carries it); so is a \`beta\` query value other than \`true\`. Thinking blocks come back only when the request sets \`thinking: {type: "enabled"}\`; the answer (streamed or not) always has a text block, empty when the model wrote none and called no tool.`,
  body: messagesBody,
  response: T.Object({
    id: T.String({ description: "Identifier of the message" }),
    type: T.Literal("message", { description: 'Always `"message"`' }),
    role: T.Literal("assistant", { description: 'Always `"assistant"`' }),
    model: T.String({ description: "The model that generated the message" }),
    content: T.Array(T.Unknown(), { description: "Content blocks: `text`, `thinking` or `tool_use`" }),
    stop_reason: T.Union([T.String(), T.Null()], { description: "`end_turn`, `max_tokens`, `stop_sequence` or `tool_use`" }),
    usage: T.Object(
      {
        input_tokens: T.Integer({ description: "Tokens in the prompt" }),
        output_tokens: T.Integer({ description: "Tokens generated" }),
      },
      { description: "Token counts" },
    ),
  }),
  stream: {
    contentType: "text/event-stream",
    event: T.Object(
      { type: T.String({ description: "`message_start`, `content_block_delta`, `message_stop`, ... (also the SSE `event:` name)" }) },
      { title: "AnthropicStreamEvent", additionalProperties: true },
    ),
  },
  errors: [
    E.notAnLlm,
    E.noVision,
    E.cloudWireMismatch,
    E.messagesLoadFailed,
    E.routerResidencyConflict,
    E.backendError,
    E.clientClosed,
    E.shuttingDown,
    E.rpcWorkerUnavailable,
    ...ENGINE_ERRORS,
  ],
  example: {
    body: { model: "Qwen3-0.6B-GGUF", max_tokens: 256, messages: [{ role: "user", content: "Hello" }] },
    response: `{"id": "msg_01", "type": "message", "role": "assistant", "model": "Qwen3-0.6B-GGUF", "content": [{"type": "text", "text": "Hello! How can I help?"}], "stop_reason": "end_turn", "usage": {"input_tokens": 9, "output_tokens": 7}}`,
  },
});

export type MessagesRequest = Static<typeof messages.body>;
export type MessagesResponse = Static<typeof messages.response>;

export const countTokens = endpoint({
  id: "anthropic.count_tokens",
  method: "POST",
  path: "/messages/count_tokens",
  mount: "versioned",
  page: "anthropic",
  errorStyle: "anthropic",
  access: "api",
  summary: "Count the tokens of a Messages request",
  availability: "fully_available",
  description: "Counts the input tokens a Messages request would use, with the model's own tokenizer and chat template, loading the model on first use.",
  body: messagesBody,
  response: T.Object({ input_tokens: T.Integer({ description: "Tokens the request's prompt takes" }) }),
  errors: [E.modelNotSupported, E.modelNotFound, E.cloudWireMismatch, E.modelLoadError],
  example: { body: { model: "Qwen3-0.6B-GGUF", messages: [{ role: "user", content: "Hello" }] }, response: `{"input_tokens": 9}` },
});

export type CountTokensRequest = Static<typeof countTokens.body>;
