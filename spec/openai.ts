// OpenAI-compatible inference endpoints (openai.md), proxied to the model's llama-server.
import { Type as T, type Static, type TSchema } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E, ENGINE_ERRORS, LOADING_ERRORS } from "./errors.ts";
import { ModelName, SamplingParams, status } from "./schemas.ts";

export type SpeechFormat = "mp3" | "wav" | "opus" | "pcm";

/** Speech is 24 kHz mono; `pcm` is its raw 16-bit little-endian samples. */
export const SPEECH_SAMPLE_RATE = 24000;

export const SPEECH_CONTENT_TYPES: Record<SpeechFormat, string> = {
  mp3: "audio/mpeg",
  wav: "audio/wav",
  opus: "audio/opus",
  pcm: `audio/l16;rate=${SPEECH_SAMPLE_RATE};endianness=little-endian`,
};

const StringOrList = (description: string) => T.Union([T.String(), T.Array(T.String())], { description });
/** Text, or token ids (OpenAI's clients, LangChain's embeddings among them, send token arrays). */
const TextOrTokens = (description: string) =>
  T.Union([T.String(), T.Array(T.String()), T.Array(T.Integer()), T.Array(T.Array(T.Integer()))], {
    description: `${description} Token ids, as an array or an array of arrays, are also accepted.`,
  });

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

/** What a request forwarded to the model's engine can answer. */
const forwardErrors = [...LOADING_ERRORS, ...ENGINE_ERRORS];

const inferenceErrors = [E.notAnLlm, E.noVision, E.cloudWireMismatch, E.cloudNoKey, ...forwardErrors];

const streamNotes =
  "Streaming passes the backend's server-sent events through as they arrive and ends with `data: [DONE]`. When the backend fails after the stream has started, an error event `{\"error\": {\"message\", \"type\": \"backend_error\", \"status_code\"}}` is sent in place of the rest of the stream, with no `[DONE]` after it. A client that disconnects cancels the backend request.";

const Message = T.Object(
  {
    role: T.String({ description: "`system`, `user`, `assistant` or `tool`." }),
    content: T.Optional(T.Unknown({ description: "Text, or an array of content parts (text and images)." })),
  },
  { additionalProperties: true },
);

const Usage = T.Object(
  {
    prompt_tokens: T.Integer({ description: "Tokens in the prompt" }),
    completion_tokens: T.Integer({ description: "Tokens generated" }),
    total_tokens: T.Integer({ description: "Both together" }),
  },
  { title: "Usage", additionalProperties: true, description: "Token counts" },
);

const FinishReason = T.Union([T.String(), T.Null()], { description: "`stop`, `length` or `tool_calls`; `null` until the last chunk" });

/** Passed through from the engine: the fields every engine sends, others kept as they come. */
const ChatCompletion = T.Object(
  {
    id: T.Optional(T.String({ description: "Identifier of the completion" })),
    object: T.Literal("chat.completion", { description: 'Always `"chat.completion"`' }),
    created: T.Optional(T.Integer({ description: "Unix time it was made" })),
    model: T.String({ description: "The model that generated it" }),
    choices: T.Array(
      T.Object(
        {
          index: T.Integer(),
          message: T.Object(
            {
              role: T.Literal("assistant"),
              content: T.Union([T.String(), T.Null()], { description: "The reply; `null` when the model only calls tools" }),
              reasoning_content: T.Optional(T.String({ description: "Reasoning models only: the model's thinking" })),
              tool_calls: T.Optional(T.Array(T.Unknown(), { description: "Calls to the request's tools" })),
            },
            { additionalProperties: true },
          ),
          finish_reason: FinishReason,
        },
        { additionalProperties: true },
      ),
    ),
    usage: T.Optional(Usage),
  },
  { title: "ChatCompletion", additionalProperties: true },
);

const ChatCompletionChunk = T.Object(
  {
    id: T.Optional(T.String({ description: "Identifier of the completion, the same on every chunk" })),
    object: T.Literal("chat.completion.chunk", { description: 'Always `"chat.completion.chunk"`' }),
    created: T.Optional(T.Integer({ description: "Unix time it was made" })),
    model: T.Optional(T.String({ description: "The model generating it" })),
    choices: T.Array(
      T.Object(
        {
          index: T.Integer(),
          delta: T.Object(
            {
              role: T.Optional(T.String({ description: "`assistant`, on the first chunk" })),
              content: T.Optional(T.Union([T.String(), T.Null()], { description: "The next piece of the reply" })),
              reasoning_content: T.Optional(T.Union([T.String(), T.Null()], { description: "Reasoning models only: the next piece of the thinking" })),
              tool_calls: T.Optional(T.Array(T.Unknown(), { description: "Pieces of calls to the request's tools" })),
            },
            { additionalProperties: true, description: "The next piece of the message" },
          ),
          finish_reason: FinishReason,
        },
        { additionalProperties: true },
      ),
      { description: "Empty on the last chunk of a request with `stream_options.include_usage`" },
    ),
    usage: T.Optional(Usage),
  },
  { title: "ChatCompletionChunk", additionalProperties: true, description: "One `data:` event of a streamed chat completion; the stream ends with `data: [DONE]`" },
);

/** A whole completion, and (`object` the same) each streamed chunk of one. */
const Completion = T.Object(
  {
    id: T.Optional(T.String({ description: "Identifier of the completion" })),
    object: T.Literal("text_completion", { description: 'Always `"text_completion"`' }),
    created: T.Optional(T.Integer({ description: "Unix time it was made" })),
    model: T.Optional(T.String({ description: "The model that generated it" })),
    choices: T.Array(
      T.Object({ index: T.Integer(), text: T.String({ description: "The continuation, or its next piece" }), finish_reason: FinishReason }, { additionalProperties: true }),
    ),
    usage: T.Optional(Usage),
  },
  { title: "Completion", additionalProperties: true },
);

const sse = (event: TSchema) => ({ contentType: "text/event-stream", event }) as const;

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
  response: ChatCompletion,
  stream: sse(ChatCompletionChunk),
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

export type ChatCompletionRequest = Static<typeof chatCompletions.body>;

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
      prompt: TextOrTokens("The text to continue, as a string or an array of strings."),
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
  response: Completion,
  stream: sse(Completion),
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

export type CompletionRequest = Static<typeof completions.body>;

export const responses = endpoint({
  id: "openai.responses",
  method: "POST",
  path: "/responses",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  summary: "Generate a response in OpenAI's Responses format",
  modality: "prompt/messages -> event",
  availability: "fully_available",
  description:
    "Generates a model response to an input, in OpenAI's Responses format, loading the model if it is not loaded. llama.cpp answers it natively; streaming sends `response.created`, `response.in_progress`, output item and delta events, then `response.completed` and `data: [DONE]`.",
  notes: streamNotes,
  body: T.Object(
    {
      input: T.Union([T.String(), T.Array(T.Unknown())], { description: "The input, as a string or an array of input items." }),
      model: ModelName,
      max_output_tokens: T.Optional(T.Integer({ description: "Upper bound on generated tokens." })),
      temperature: SamplingParams.temperature,
      repeat_penalty: SamplingParams.repeat_penalty,
      top_k: SamplingParams.top_k,
      top_p: SamplingParams.top_p,
      stream: common.stream,
      ctx_size: common.ctx_size,
    },
    { additionalProperties: true },
  ),
  stream: sse(
    T.Object(
      { type: T.String({ description: "`response.created`, `response.output_text.delta`, `response.completed`, ..." }) },
      { title: "ResponsesStreamEvent", additionalProperties: true, description: "One `data:` event of a streamed response; the stream ends with `data: [DONE]`" },
    ),
  ),
  errors: [{ status: 400, code: "model_not_applicable", when: "`model` is not an LLM" }, E.noVision, E.noResponsesApi, ...forwardErrors],
  example: {
    body: { model: "Llama-3.2-1B-Instruct-GGUF", input: "What is the population of Paris?" },
    response: `{
  "id": "resp_Cxow6uUoxWRLPnhhXU7QEvXjMrKaBGYi",
  "object": "response",
  "created_at": 1793827678,
  "model": "Llama-3.2-1B-Instruct-GGUF",
  "status": "completed",
  "output": [{"type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "About 2.1 million people."}]}],
  "usage": {"input_tokens": 42, "output_tokens": 8, "total_tokens": 50}
}`,
  },
});

export type ResponsesRequest = Static<typeof responses.body>;

export const embeddings = endpoint({
  id: "openai.embeddings",
  method: "POST",
  path: "/embeddings",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  summary: "Embed text as vectors",
  modality: "text -> vector representations",
  availability: "fully_available",
  description:
    "Returns vector representations (embeddings) of the input text, loading the model if it is not loaded. Embedding models use the `llamacpp` recipe.",
  body: T.Object(
    {
      input: TextOrTokens("The text to embed, as a string or an array of strings."),
      model: ModelName,
      encoding_format: T.Optional(
        T.Union([T.Literal("float"), T.Literal("base64")], { description: "`float` or `base64`. Defaults to `float`." }),
      ),
      ctx_size: common.ctx_size,
    },
    { additionalProperties: true },
  ),
  response: T.Object({
    object: T.Literal("list", { description: 'Always `"list"`' }),
    data: T.Array(
      T.Object({
        object: T.Literal("embedding", { description: 'Always `"embedding"`' }),
        index: T.Integer({ description: "Position of the input text in the request" }),
        embedding: T.Union([T.Array(T.Number()), T.String()], {
          description: "The vector, as an array of floats, or a base64 string of little-endian float32 when `encoding_format` is `base64`",
        }),
      }),
      { description: "One embedding per input" },
    ),
    model: T.String({ description: "The model that produced the embeddings" }),
    usage: T.Object(
      {
        prompt_tokens: T.Integer({ description: "Tokens in the input" }),
        total_tokens: T.Integer({ description: "Tokens processed in total" }),
      },
      { description: "Token usage" },
    ),
  }),
  errors: [
    E.cannotEmbed,
    ...forwardErrors,
    E.notEmbeddingModel,
  ],
  example: {
    body: { model: "nomic-embed-text-v1-GGUF", input: ["Hello, world!", "Lemonade is refreshing"] },
    response: `{
  "object": "list",
  "data": [
    {"object": "embedding", "index": 0, "embedding": [0.0123, -0.0456, 0.0789]},
    {"object": "embedding", "index": 1, "embedding": [0.0234, -0.0567, 0.0891]}
  ],
  "model": "nomic-embed-text-v1-GGUF",
  "usage": {"prompt_tokens": 12, "total_tokens": 12}
}`,
  },
});

export type EmbeddingsRequest = Static<typeof embeddings.body>;
export type EmbeddingsResponse = Static<typeof embeddings.response>;

export const SPEECH_FORMATS = ["mp3", "wav", "opus", "pcm"] as const;

export const audioSpeech = endpoint({
  id: "openai.audio_speech",
  method: "POST",
  path: "/audio/speech",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  summary: "Generate speech from text",
  modality: "text -> audio",
  availability: "partially_available",
  description:
    "Generates speech audio from text. `kokoro-v1` speaks on Kokoros (neural, `kokoros`) once its release is installed (`lemonade backends install kokoro:cpu`) and the model's files are downloaded (`lemonade pull kokoro-v1`); until then the embedded espeak-ng speaks under Kokoro's and OpenAI's voice names, and ffmpeg encodes the result at 24 kHz mono. The `X-Lemonade-Speech-Engine` header of the answer names the engine that spoke (`kokoros` or `espeak-ng`).",
  notes:
    "`response_format` is `mp3` (default), `wav`, `opus` (Ogg) or `pcm` (16-bit little-endian at 24 kHz, `audio/l16;rate=24000;endianness=little-endian`). With `stream: true` or `stream_format: \"audio\"` the audio flows as it is produced; streaming produces `pcm` only, and another `response_format` is a 400.",
  body: T.Object(
    {
      input: T.String({ minLength: 1, description: "The text to speak." }),
      model: ModelName,
      voice: T.Optional(
        status(
          T.String({ description: "OpenAI's voices (`alloy`, `ash`, `coral`, ...) or Kokoro's (`af_sky`, `am_echo`, `bf_emma`, `bm_george`, ...). Defaults to `shimmer`." }),
          "partial",
        ),
      ),
      speed: T.Optional(T.Number({ minimum: 0.25, maximum: 4, description: "Speaking speed, from `0.25` to `4.0`. Defaults to `1.0`." })),
      response_format: T.Optional(
        T.Union(
          SPEECH_FORMATS.map((f) => T.Literal(f)),
          { description: "Container for the returned audio: `mp3`, `wav`, `opus` or `pcm`. Defaults to `mp3`, or `pcm` when streaming." },
        ),
      ),
      stream_format: T.Optional(T.Literal("audio", { description: "`audio` streams the response." })),
      stream: T.Optional(T.Boolean({ description: "`true` streams the response, like `stream_format: audio`." })),
    },
    { additionalProperties: true },
  ),
  contentType: "audio/mpeg",
  errors: [
    { status: 400, code: "model_not_applicable", when: "`model` is not a text-to-speech model" },
    { status: 400, code: "invalid_argument", when: "`voice` is not a voice the engine knows" },
    E.modelNotSupported,
    E.modelNotFound,
    { status: 500, code: "model_load_error", when: "The speech engine is not installed (espeak-ng and ffmpeg from Debian)" },
    E.noAudio,
  ],
  example: { body: { model: "kokoro-v1", input: "Lemonade can speak!", voice: "af_sky", response_format: "mp3" } },
});

export const audioTranscriptions = endpoint({
  id: "openai.audio_transcriptions",
  method: "POST",
  path: "/audio/transcriptions",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  rawBody: true,
  summary: "Transcribe an audio file to text",
  modality: "audio file -> text",
  availability: "partially_available",
  description:
    "Transcribes an audio file to text, loading the model on first use. Whisper models run on whisper.cpp (`whisper-server`). The body is `multipart/form-data`; audio in any format ffmpeg reads (WAV, MP3, FLAC, OGG, ...) at any rate is converted to the 16 kHz mono WAV whisper.cpp takes.",
  body: T.Object({
    file: T.Unknown({ description: "The audio file to transcribe." }),
    model: ModelName,
    language: T.Optional(T.String({ description: "The audio's language (ISO 639-1, e.g. `en`). Defaults to `auto`, which detects it." })),
    response_format: T.Optional(
      T.Union(
        ["json", "verbose_json", "text", "srt", "vtt"].map((f) => T.Literal(f)),
        { description: "`json`, `verbose_json`, `text`, `srt` or `vtt`. Defaults to `json`." },
      ),
    ),
    prompt: T.Optional(T.String({ description: "Text to guide the transcription's style or continue a previous segment." })),
    temperature: T.Optional(T.Number({ description: "Sampling temperature. Defaults to `0`." })),
  }),
  response: T.Object({
    text: T.String({ description: "The transcribed text" }),
    segments: T.Optional(T.Array(T.Unknown(), { description: "`verbose_json` only: timestamped segments" })),
  }),
  errors: [
    E.notMultipart,
    E.unreadableMultipart,
    E.missingArgument,
    E.invalidArgument,
    E.cannotTranscribe,
    ...forwardErrors,
  ],
  example: { response: `{"text": "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."}` },
});

export const realtime = endpoint({
  id: "openai.realtime",
  method: "WS",
  path: "/realtime",
  aliasPaths: ["/v1/realtime", "/api/v1/realtime", "/v0/realtime", "/api/v0/realtime"],
  mount: "root",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  summary: "Realtime Audio Transcription, OpenAI SDK compatible",
  modality: "streaming audio -> text",
  availability: "partially_available",
  description:
    "Stream 16 kHz mono PCM16 audio and receive transcriptions as you speak. Connect to `ws://localhost:13305/v1/realtime?model=Whisper-Tiny` (also `/realtime`). The same protocol answers on the dedicated WebSocket port `/v1/health` reports as `websocket_port`, at `ws://localhost:<websocket_port>/realtime?model=...`. When `LEMONADE_API_KEY` is set, pass `?api_key=KEY`. The server sends `session.created`; the client sends `session.update` (model, `turn_detection` `{threshold, silence_duration_ms, prefix_padding_ms}` — defaults 0.01, 800, 250 — or `null` for explicit commits), `input_audio_buffer.append` (`audio`: base64 PCM16, about 85-256 ms per message), `input_audio_buffer.commit` and `input_audio_buffer.clear`.",
  notes:
    "The server answers `session.updated`, `input_audio_buffer.speech_started` / `speech_stopped` (server VAD on RMS energy), `input_audio_buffer.committed` / `cleared`, interim `conversation.item.input_audio_transcription.delta` while speech goes on, the final `conversation.item.input_audio_transcription.completed` with `transcript`, and `error`. With `turn_detection: null` no VAD or interim events are sent until `input_audio_buffer.commit`. The input buffer holds at most 10 minutes of audio: an append beyond it is dropped with an `error` event whose code is `input_audio_buffer_full`; commit or clear to go on.",
  body: T.Object({
    type: T.String({ description: "`session.update`, `input_audio_buffer.append`, `input_audio_buffer.commit` or `input_audio_buffer.clear`." }),
    session: T.Optional(T.Unknown({ description: "`session.update`: `model` and `turn_detection`." })),
    audio: T.Optional(T.String({ description: "`input_audio_buffer.append`: base64-encoded PCM16, 16 kHz mono." })),
  }),
  query: T.Object({ model: T.Optional(T.String({ description: "The transcription model, e.g. `Whisper-Tiny`." })) }),
  example: {
    body: { type: "input_audio_buffer.append", audio: "<base64 PCM16>" },
    response: `{"type": "conversation.item.input_audio_transcription.completed", "item_id": "item_1", "content_index": 0, "transcript": "Hello, this is a test transcription."}`,
  },
});

export type SpeechRequest = Static<typeof audioSpeech.body>;
