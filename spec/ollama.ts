// Ollama-compatible endpoints (ollama.md). Root-level `/api/*` routes with `{"error": "..."}` bodies.
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E } from "./errors.ts";
import { ModelName, status } from "./schemas.ts";

/** The Ollama version reported to clients: recent enough for their version checks. */
export const OLLAMA_COMPAT_VERSION = "0.16.1";

export const version = endpoint({
  id: "ollama.version",
  method: "GET",
  path: "/api/version",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "Report the Ollama version",
  availability: "fully_available",
  description:
    "Reports an Ollama version recent enough for Ollama clients' version checks. [`GET /v1/health`](./lemonade.md#get-v1health) reports Lemonade's own version.",
  response: T.Object({ version: T.String({ description: "The Ollama version Lemonade reports to clients." }) }),
  example: { response: `{"version": "${OLLAMA_COMPAT_VERSION}"}` },
});

const Details = T.Object(
  {
    parent_model: T.Literal("", { description: "Always empty" }),
    format: T.Literal("gguf", { description: "Always `gguf`" }),
    family: T.String({ description: "The model's recipe, e.g. `llamacpp`" }),
    families: T.Array(T.String(), { description: "A list holding only `family`" }),
    parameter_size: T.String({ description: "From the model name, e.g. `0.6B`; empty when the name has none" }),
    quantization_level: T.String({ description: "From the checkpoint, e.g. `Q4_0`; empty when the checkpoint has none" }),
  },
  { title: "OllamaModelDetails", description: "Inferred from the model name, recipe and checkpoint" },
);

const ZERO_DIGEST = "sha256:" + "0".repeat(64);

export const tags = endpoint({
  id: "ollama.tags",
  method: "GET",
  path: "/api/tags",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "List downloaded models",
  availability: "fully_available",
  description: "Lists the downloaded models in Ollama's format.",
  response: T.Object({
    models: T.Array(
      T.Object({
        name: T.String({ description: "Lemonade model name with a `:latest` tag" }),
        model: T.String({ description: "Same as `name`" }),
        modified_at: T.String({ description: "Always `2024-01-01T00:00:00Z`" }),
        size: T.Integer({ description: "Size in bytes, from the registry's estimate (in GiB); the files on disk for a model with none" }),
        digest: T.String({ description: "Always an all-zero sha256" }),
        details: Details,
      }),
      { description: "The downloaded models" },
    ),
  }),
  errors: [E.internal],
  example: {
    response: `{"models": [{"name": "Qwen3-0.6B-GGUF:latest", "model": "Qwen3-0.6B-GGUF:latest", "modified_at": "2024-01-01T00:00:00Z", "size": 408021893, "digest": "${ZERO_DIGEST}", "details": {"parent_model": "", "format": "gguf", "family": "llamacpp", "families": ["llamacpp"], "parameter_size": "0.6B", "quantization_level": "Q4_0"}}]}`,
  },
});

export type TagsResponse = Static<typeof tags.response>;

export const ps = endpoint({
  id: "ollama.ps",
  method: "GET",
  path: "/api/ps",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "List loaded models",
  availability: "fully_available",
  description: "Lists the loaded models in Ollama's format.",
  notes: "[`GET /v1/health`](./lemonade.md#get-v1health) reports the loaded models in full.",
  response: T.Object({
    models: T.Array(
      T.Object({
        name: T.String({ description: "Lemonade model name with a `:latest` tag" }),
        model: T.String({ description: "Same as `name`" }),
        size: T.Integer({ description: "Always `0`" }),
        digest: T.String({ description: "Always an all-zero sha256" }),
        details: Details,
        expires_at: T.String({ description: "Always `2099-01-01T00:00:00Z`" }),
        size_vram: T.Integer({ description: "Always `0`" }),
      }),
      { description: "The loaded models" },
    ),
  }),
  errors: [E.internal],
  example: {
    response: `{"models": [{"name": "Qwen3-0.6B-GGUF:latest", "model": "Qwen3-0.6B-GGUF:latest", "size": 0, "digest": "${ZERO_DIGEST}", "details": {"parent_model": "", "format": "gguf", "family": "llamacpp", "families": ["llamacpp"], "parameter_size": "0.6B", "quantization_level": "Q4_0"}, "expires_at": "2099-01-01T00:00:00Z", "size_vram": 0}]}`,
  },
});

export type PsResponse = Static<typeof ps.response>;

export { ZERO_DIGEST };

const OllamaMessage = T.Object(
  {
    role: T.String({ description: "`system`, `user`, `assistant` or `tool`." }),
    content: T.Optional(T.String({ description: "The message text." })),
    images: T.Optional(T.Array(T.String(), { description: "Base64-encoded images, for vision models." })),
    tool_calls: T.Optional(T.Array(T.Unknown(), { description: "The assistant's tool calls, arguments as objects." })),
  },
  { additionalProperties: true },
);

const Options = T.Optional(
  status(
    T.Record(T.String(), T.Unknown(), {
      description:
        "Sampling options: `temperature`, `top_p`, `seed`, `stop`, `num_predict` (maximum generated tokens) and `repeat_penalty`, which is sent as OpenAI's `frequency_penalty`. These keys are also accepted at the top level, where they win. `num_ctx` sets the context size when this request loads the model, unless `ctx_size` is sent. Other keys are ignored.",
    }),
    "partial",
  ),
);

const KeepAlive = T.Optional(
  T.Union([T.Number(), T.String()], {
    description: "`0` with an empty input unloads the model, answering with `done_reason: \"unload\"`. Other values are ignored.",
  }),
);

const CtxSize = T.Optional(
  T.Integer({ description: "Lemonade extension: context size to load the model with, when this request loads it." }),
);

const Stream = T.Optional(
  T.Boolean({
    description: "`true` streams the response as newline-delimited JSON; `false` sends one response once complete. Defaults to `true`.",
  }),
);

const loadErrors = [
  E.ollamaContextOverflow,
  E.ollamaLoadFailed,
  E.routerResidencyConflict,
  E.ollamaBackendError,
  E.internal,
];

/** Token counts and timings, optional: a streamed line other than the last two leaves them out. */
const Counts = {
  prompt_eval_count: T.Optional(T.Integer({ description: "Prompt tokens" })),
  eval_count: T.Optional(T.Integer({ description: "Generated tokens" })),
  total_duration: T.Optional(T.Integer({ description: "Always `0`" })),
  load_duration: T.Optional(T.Integer({ description: "Always `0`" })),
  prompt_eval_duration: T.Optional(T.Integer({ description: "Prompt processing time in nanoseconds, when the backend reports timings; otherwise `0`" })),
  eval_duration: T.Optional(T.Integer({ description: "Generation time in nanoseconds, when the backend reports timings; otherwise `0`" })),
};

const ChatAnswer = T.Object(
  {
    model: T.String({ description: "The model that generated the response" }),
    created_at: T.String({ description: "Always `2024-01-01T00:00:00Z`" }),
    message: T.Object(
      {
        role: T.Literal("assistant", { description: "Always `assistant`" }),
        content: T.String({ description: "The message text" }),
        thinking: T.Optional(T.String({ description: "Reasoning models only: the model's thinking" })),
        tool_calls: T.Optional(T.Array(T.Unknown(), { description: "Calls to the request's tools, with arguments as objects" })),
      },
      { description: "The assistant's message; in a streamed line, the next piece of it" },
    ),
    done: T.Boolean({ description: "`false` while the message streams; `true` once it ends, and on a response that is not streamed" }),
    done_reason: T.Optional(T.String({ description: "`stop`, `length`, `tool_calls`, or `unload` after an unload request" })),
    ...Counts,
  },
  { title: "OllamaChatResponse" },
);

export const chat = endpoint({
  id: "ollama.chat",
  method: "POST",
  path: "/api/chat",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "Generate the next chat message",
  availability: "partially_available",
  description:
    "Generates the next assistant message for a conversation, loading the model on first use. Lemonade runs it as an OpenAI chat completion and converts the result.",
  notes:
    "Streaming sends one NDJSON line per message piece with `done: false`; when the message ends, a line with `done: true` and the real `done_reason`, then a last `done: true` line with the token counts. A request with tools and streaming runs non-streaming on the backend and answers with two NDJSON lines: the whole message, then the final line.",
  body: T.Object(
    {
      model: ModelName,
      messages: T.Optional(T.Array(OllamaMessage, { description: "Conversation so far. Each message has a `role` and `content`, plus optional `images`, `tool_calls` and, on `tool` messages, `tool_name`." })),
      stream: Stream,
      options: Options,
      tools: T.Optional(T.Array(T.Unknown(), { description: "A list of tools the model may call." })),
      format: T.Optional(
        T.Unknown({ description: "`json` constrains the reply to a JSON object; a JSON schema object constrains it to that schema." }),
      ),
      think: T.Optional(
        T.Union([T.Boolean(), T.String()], { description: "`false` turns reasoning off on models whose chat template supports it; other values leave it on." }),
      ),
      keep_alive: KeepAlive,
      ctx_size: CtxSize,
    },
    { additionalProperties: true },
  ),
  response: ChatAnswer,
  stream: { contentType: "application/x-ndjson", event: ChatAnswer },
  errors: loadErrors,
  example: {
    body: { model: "Qwen3-0.6B-GGUF", messages: [{ role: "user", content: "What is the capital of France?" }], stream: false },
    response: `{"model": "Qwen3-0.6B-GGUF", "created_at": "2024-01-01T00:00:00Z", "message": {"role": "assistant", "content": "The capital of France is **Paris**."}, "done": true, "done_reason": "stop", "prompt_eval_count": 19, "eval_count": 14, "total_duration": 0, "load_duration": 0, "prompt_eval_duration": 27064000, "eval_duration": 71276000}`,
  },
});

export type ChatRequest = Static<typeof chat.body>;
export type ChatResponse = Static<typeof chat.response>;

const GenerateAnswer = T.Object(
  {
    model: T.String({ description: "The model that generated the response" }),
    created_at: T.String({ description: "Always `2024-01-01T00:00:00Z`" }),
    response: T.String({ description: "Generated text; empty for an image model" }),
    image: T.Optional(T.String({ description: "Image models only: the generated image, base64-encoded" })),
    done: T.Boolean({ description: "`true` on a response that is not streamed, and on the last two lines of a stream" }),
    done_reason: T.Optional(T.String({ description: "`stop`, `length`, `load`, or `unload` after an unload request" })),
    context: T.Optional(T.Array(T.Integer(), { description: "Always empty" })),
    ...Counts,
  },
  { title: "OllamaGenerateResponse" },
);

export const generate = endpoint({
  id: "ollama.generate",
  method: "POST",
  path: "/api/generate",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "Continue a prompt",
  availability: "partially_available",
  description:
    "Continues a prompt, loading the model on first use. Lemonade runs it as an OpenAI text completion and converts the result. Naming an image model generates an image instead (never streamed, in `image`). An empty prompt only loads the model.",
  notes:
    "Streaming sends one NDJSON line per text piece with `done: false`; when the text ends, a line with `done: true` and the real `done_reason`, then a last `done: true` line with the token counts.",
  body: T.Object(
    {
      model: ModelName,
      prompt: T.Optional(T.String({ description: "Text to continue, or the image to generate for an image model." })),
      width: T.Optional(T.Integer({ description: "Image models only: image width in pixels. Defaults to `512`." })),
      height: T.Optional(T.Integer({ description: "Image models only: image height in pixels. Defaults to `512`." })),
      steps: T.Optional(T.Integer({ description: "Image models only: inference steps. Defaults to the model's own." })),
      cfg_scale: T.Optional(T.Number({ description: "Image models only: classifier-free guidance scale. Defaults to the model's own." })),
      stream: Stream,
      options: Options,
      seed: T.Optional(T.Integer({ description: "Random seed for reproducible output." })),
      keep_alive: KeepAlive,
      ctx_size: CtxSize,
      system: T.Optional(status(T.String({ description: "System prompt. Ignored: a text completion has no roles." }), "not_available")),
      format: T.Optional(status(T.Unknown({ description: "Output format constraint. Ignored." }), "not_available")),
    },
    { additionalProperties: true },
  ),
  response: GenerateAnswer,
  stream: { contentType: "application/x-ndjson", event: GenerateAnswer },
  errors: loadErrors,
  example: {
    body: { model: "Qwen3-0.6B-GGUF", prompt: "The capital of France is", stream: false },
    response: `{"model": "Qwen3-0.6B-GGUF", "created_at": "2024-01-01T00:00:00Z", "response": " Paris.", "done": true, "done_reason": "stop", "context": [], "prompt_eval_count": 5, "eval_count": 3, "total_duration": 0, "load_duration": 0, "prompt_eval_duration": 0, "eval_duration": 0}`,
  },
});

export type GenerateRequest = Static<typeof generate.body>;
export type GenerateResponse = Static<typeof generate.response>;

const ModelOrName = {
  model: T.Optional(T.String({ description: "The model's name (`name` is accepted too)." })),
  name: T.Optional(T.String({ description: "The model's name, Ollama's older spelling; read before `model` when both are sent, as Lemonade does." })),
};

/** The body that only names a model (show, delete). */
const ModelRef = T.Object(ModelOrName, { title: "OllamaModelRef" });

export const show = endpoint({
  id: "ollama.show",
  method: "POST",
  path: "/api/show",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "Describe a model",
  availability: "fully_available",
  description: "Describes one registered model in Ollama's format.",
  body: ModelRef,
  response: T.Object({
    modelfile: T.String({ description: "A comment saying Lemonade generated it, then a `FROM` line naming the checkpoint" }),
    parameters: T.String({ description: "`num_ctx` followed by the model's configured context size (`-1` when sized at load time)" }),
    template: T.String({ description: "Always empty" }),
    details: Details,
    capabilities: T.Array(T.String(), {
      description: "From the model's labels: `completion` for chat models, `embedding` for embedding models, plus `tools`, `vision` and `thinking`",
    }),
    model_info: T.Record(T.String(), T.Unknown(), {
      description: "`general.architecture` (the recipe) and `<recipe>.context_length` (the context size in `parameters`)",
    }),
  }),
  errors: [E.ollamaModelNotFound, E.internal],
  example: {
    body: { model: "Qwen3-0.6B-GGUF" },
    response: `{"modelfile": "# Modelfile generated by Lemonade\\nFROM unsloth/Qwen3-0.6B-GGUF:Q4_0", "parameters": "num_ctx 4096", "template": "", "details": {"parent_model": "", "format": "gguf", "family": "llamacpp", "families": ["llamacpp"], "parameter_size": "0.6B", "quantization_level": "Q4_0"}, "capabilities": ["completion", "tools", "thinking"], "model_info": {"general.architecture": "llamacpp", "llamacpp.context_length": 4096}}`,
  },
});

export type ShowRequest = Static<typeof show.body>;
export type ShowResponse = Static<typeof show.response>;

export const embed = endpoint({
  id: "ollama.embed",
  method: "POST",
  path: "/api/embed",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "Embed one or more texts",
  availability: "fully_available",
  description: "Returns one embedding per input text, loading the model on first use.",
  body: T.Object(
    {
      model: ModelName,
      input: T.Union([T.String(), T.Array(T.String())], { description: "Text to embed, or an array of texts." }),
      options: Options,
      ctx_size: CtxSize,
    },
    { additionalProperties: true },
  ),
  response: T.Object({
    model: T.String({ description: "The model that produced the embeddings" }),
    embeddings: T.Array(T.Array(T.Number()), { description: "One vector per input, in input order" }),
    total_duration: T.Integer({ description: "Always `0`" }),
    load_duration: T.Integer({ description: "Always `0`" }),
    prompt_eval_count: T.Integer({ description: "Always `0`" }),
  }),
  errors: loadErrors,
  example: { body: { model: "nomic-embed-text-v1-GGUF", input: ["Hello", "World"] }, response: `{"model": "nomic-embed-text-v1-GGUF", "embeddings": [[0.01, -0.02, 0.03], [0.04, 0.05, -0.06]], "total_duration": 0, "load_duration": 0, "prompt_eval_count": 0}` },
});

export type EmbedRequest = Static<typeof embed.body>;
export type EmbedResponse = Static<typeof embed.response>;

export const embeddings = endpoint({
  id: "ollama.embeddings",
  method: "POST",
  path: "/api/embeddings",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "Embed one text in the older format",
  availability: "fully_available",
  description: "Returns the embedding of one text, in Ollama's older single-vector format. `prompt` (or `input`) is required.",
  body: T.Object(
    {
      model: ModelName,
      prompt: T.Optional(T.Union([T.String(), T.Array(T.String())], { description: "Text to embed. For an array, only the first text's embedding is returned." })),
      input: T.Optional(T.Union([T.String(), T.Array(T.String())], { description: "Read when `prompt` is absent, as `prompt` is." })),
      options: Options,
      ctx_size: CtxSize,
    },
    { additionalProperties: true },
  ),
  response: T.Object({
    model: T.String({ description: "The model that produced the embedding" }),
    embedding: T.Array(T.Number(), { description: "The text's embedding vector" }),
  }),
  errors: loadErrors,
  example: { body: { model: "nomic-embed-text-v1-GGUF", prompt: "Hello" }, response: `{"model": "nomic-embed-text-v1-GGUF", "embedding": [0.01, -0.02, 0.03]}` },
});

export type EmbeddingsRequest = Static<typeof embeddings.body>;
export type EmbeddingsResponse = Static<typeof embeddings.response>;

export const pull = endpoint({
  id: "ollama.pull",
  method: "POST",
  path: "/api/pull",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "Download a model",
  availability: "fully_available",
  description:
    "Downloads a registered model. Only models already in Lemonade's registry can be pulled; use [`POST /v1/pull`](./lemonade.md#post-v1pull) to register a new one.",
  notes:
    "Streaming (the default) sends NDJSON: `pulling manifest`, then `downloading <file>` lines with `digest`, `completed` and `total`, then two `success` lines; a failed download ends with a line carrying `error`, and one paused or cancelled through [`POST /v1/downloads/control`](./lemonade.md#post-v1downloadscontrol) ends after its last `downloading` line, with neither.",
  body: T.Object({ ...ModelOrName, stream: Stream }),
  response: T.Object({ status: T.String({ description: "`success` (non-streaming)" }) }),
  stream: {
    contentType: "application/x-ndjson",
    event: T.Object(
      {
        status: T.Optional(T.String({ description: "`pulling manifest`, `downloading <file>` or `success`" })),
        digest: T.Optional(T.String({ description: "The file's digest, on `downloading` lines" })),
        total: T.Optional(T.Number({ description: "The file's size in bytes" })),
        completed: T.Optional(T.Number({ description: "Bytes of it downloaded so far" })),
        error: T.Optional(T.String({ description: "On the last line of a failed download: what went wrong" })),
      },
      { title: "OllamaPullProgress" },
    ),
  },
  errors: [
    E.offline,
    E.ollamaModelNotFound,
    E.ollamaPullFailed,
  ],
  example: { body: { model: "Qwen3-0.6B-GGUF", stream: false }, response: '{"status": "success"}' },
});

export type PullRequest = Static<typeof pull.body>;
export type PullResponse = Static<typeof pull.response>;

export const remove = endpoint({
  id: "ollama.delete",
  method: "DELETE",
  path: "/api/delete",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "Delete a model",
  availability: "fully_available",
  description: "Deletes a downloaded model's files, unloading it first when it is loaded. Success answers `200` with an empty body, as Ollama does.",
  body: ModelRef,
  errors: [
    E.ollamaModelNotFound,
    E.ollamaDeleteFailed,
  ],
  example: { body: { model: "Qwen3-0.6B-GGUF" } },
});

export type DeleteRequest = Static<typeof remove.body>;

const notSupported = (id: string, path: string, summary: string, description = "") =>
  endpoint({
    id,
    method: "POST",
    path,
    mount: "root",
    page: "ollama",
    errorStyle: "ollama",
    access: "api",
    summary,
    availability: "not_available",
    description,
    errors: [E.notSupportedOllama],
  });

export const create = notSupported(
  "ollama.create",
  "/api/create",
  "Create a model from a Modelfile",
  "Register a model with [`POST /v1/pull`](./lemonade.md#post-v1pull) instead.",
);
export const copy = notSupported("ollama.copy", "/api/copy", "Copy a model");
export const push = notSupported("ollama.push", "/api/push", "Push a model to a registry");
export const blobs = notSupported("ollama.blobs", "/api/blobs/:digest", "Upload a blob");
