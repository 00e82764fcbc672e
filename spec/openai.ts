// OpenAI-compatible inference endpoints (openai.md), proxied to the model's llama-server.
import { Type as T } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E } from "./errors.ts";
import { ModelName, SamplingParams, status } from "./schemas.ts";

const StringOrList = (description: string) => T.Union([T.String(), T.Array(T.String())], { description });

const common = {
  model: ModelName,
  stream: T.Optional(
    T.Boolean({
      description: "`true` sends the response as server-sent events as it progresses; `false` sends one response once complete. Defaults to `false`.",
    }),
  ),
  stop: T.Optional(StringOrList("Sequences that stop generation, as a string or an array of strings. The returned text leaves them out.")),
  ...SamplingParams,
  frequency_penalty: T.Optional(
    T.Number({ description: "From `-2.0` to `2.0`: positive values discourage tokens in proportion to how often they have appeared." }),
  ),
  max_tokens: T.Optional(T.Integer({ description: "Upper bound on generated tokens." })),
  ctx_size: T.Optional(
    T.Integer({
      description: "Lemonade extension: context size to load the model with, when this request loads it. Ignored when the model is already loaded.",
    }),
  ),
};

const inferenceErrors = [
  { status: 400, code: "", when: "`model` is not an LLM" },
  E.modelNotSupported,
  E.modelNotFound,
  E.slotsPinned,
  { status: 500, code: "", when: "The backend reports an error; the backend's own status replaces this one when it sends one" },
  { status: 502, code: "backend_error", when: "The backend stops answering before it responds, such as an engine that crashed" },
  E.modelLoadError,
];

const streamNotes =
  "Streaming passes the backend's server-sent events through as they arrive and ends with `data: [DONE]`. When the backend fails after the stream has started, an error event `{\"error\": {\"message\", \"type\": \"backend_error\", \"status_code\"}}` is sent in place of the rest of the stream, with no `[DONE]` after it. A client that disconnects cancels the backend request.";

const Message = T.Object(
  {
    role: T.String({ description: "`system`, `user`, `assistant` or `tool`." }),
    content: T.Optional(T.Unknown({ description: "Text, or an array of content parts (text and images)." })),
  },
  { additionalProperties: true },
);

export const chatCompletions = endpoint({
  id: "openai.chat_completions",
  method: "POST",
  path: "/chat/completions",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  summary: "Generate the next message in a conversation",
  modality: "messages -> completion",
  availability: "partially_available",
  description: "Generates the next assistant message for a conversation, loading the model if it is not loaded.",
  notes: streamNotes,
  body: T.Object(
    {
      messages: T.Array(Message, {
        description: "The conversation so far, in OpenAI's message format: each message has a `role` and `content`.",
      }),
      ...common,
      logprobs: T.Optional(T.Boolean({ description: "`true` returns the log probability of each output token. Defaults to `false`." })),
      tools: T.Optional(T.Array(T.Unknown(), { description: "A list of tools the model may call." })),
      tool_choice: T.Optional(
        status(T.Unknown({ description: "Which tool the model must call, in OpenAI's format: `auto`, `none` or `required`." }), "partial"),
      ),
      response_format: T.Optional(
        T.Unknown({ description: 'The format the model must output, in OpenAI\'s format, such as `{"type": "json_object"}`.' }),
      ),
      max_completion_tokens: T.Optional(T.Integer({ description: "OpenAI's name for `max_tokens`." })),
      stream_options: T.Optional(
        T.Object(
          { include_usage: T.Optional(T.Boolean()) },
          { description: "`include_usage: true` adds a last chunk with the request's token counts." },
        ),
      ),
    },
    { additionalProperties: true },
  ),
  errors: inferenceErrors,
  example: {
    body: { model: "Qwen3-0.6B-GGUF", messages: [{ role: "user", content: "What is the population of Paris?" }], stream: false },
    response: `{
  "id": "chatcmpl-cJjl2vW81HgtjvknoAdqxCGKeEtNOG4u",
  "object": "chat.completion",
  "created": 1793827645,
  "model": "Qwen3-0.6B-GGUF",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "About 2.1 million people live in Paris."}, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 15, "completion_tokens": 12, "total_tokens": 27}
}`,
  },
});

export const completions = endpoint({
  id: "openai.completions",
  method: "POST",
  path: "/completions",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  summary: "Continue a text prompt",
  modality: "prompt -> completion",
  availability: "partially_available",
  description: "Continues a text prompt, loading the model if it is not loaded.",
  notes: streamNotes,
  body: T.Object(
    {
      prompt: StringOrList("The text to continue, as a string or an array of strings."),
      ...common,
      echo: T.Optional(
        status(T.Boolean({ description: "`true` asks the backend to return the prompt before the completion. llama.cpp models ignore it." }), "partial"),
      ),
      logprobs: T.Optional(
        T.Union([T.Boolean(), T.Integer()], {
          description: "`true`, or a number of top alternatives per token, returns the log probability of each output token.",
        }),
      ),
    },
    { additionalProperties: true },
  ),
  errors: inferenceErrors,
  example: {
    body: { model: "Qwen3-0.6B-GGUF", prompt: "The capital of France is", max_tokens: 8 },
    response: `{
  "id": "cmpl-2d7b3b0e",
  "object": "text_completion",
  "created": 1793827645,
  "model": "Qwen3-0.6B-GGUF",
  "choices": [{"index": 0, "text": " Paris, a city of", "logprobs": null, "finish_reason": "length"}],
  "usage": {"prompt_tokens": 6, "completion_tokens": 8, "total_tokens": 14}
}`,
  },
});
