// llama.cpp-specific endpoints (llamacpp.md): rerank, slots and tokenize, forwarded to a
// llama-server: rerank to the model it names, slots and tokenize to the most recently used one.
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E, ENGINE_ERRORS, LOADING_ERRORS } from "./errors.ts";
import { ModelName } from "./schemas.ts";
import { LLAMACPP } from "./recipes.ts";

const noModelErrors = [
  E.noModelLoaded,
  E.recentLacksCapability,
  E.unloadedWhileWaiting,
  E.backendError,
];

export const rerank = endpoint({
  id: "llamacpp.rerank",
  method: "POST",
  path: "/rerank",
  aliasPaths: ["/reranking", "/reranker"],
  mount: "versioned",
  page: LLAMACPP,
  errorStyle: "openai",
  access: "api",
  summary: "Score documents against a query",
  modality: "query + documents -> relevance-scored documents",
  availability: "fully_available",
  description:
    "Scores each document against a query. Only llama.cpp reranker models, such as `bge-reranker-v2-m3-GGUF`, serve this endpoint. Also served at `/v1/reranking` and `/v1/reranker`.",
  body: T.Object(
    {
      query: T.String({ description: "The search query text." }),
      documents: T.Array(T.String(), { description: "Documents to score against the query." }),
      model: ModelName,
      ctx_size: T.Optional(
        T.Integer({ description: "Lemonade extension: context size to load the model with, when this request loads it." }),
      ),
    },
    { additionalProperties: true },
  ),
  response: T.Object({
    model: T.String({ description: "The model that scored the documents" }),
    object: T.Literal("list", { description: 'Always `"list"`' }),
    results: T.Array(
      T.Object({
        index: T.Integer({ description: "The document's position in `documents`" }),
        relevance_score: T.Number({ description: "How relevant the model rates the document; higher is more relevant" }),
      }),
      { description: "Every input document with its score, sorted by `relevance_score`, highest first" },
    ),
    usage: T.Object(
      {
        prompt_tokens: T.Integer({ description: "Tokens in the query and documents" }),
        total_tokens: T.Integer({ description: "All tokens processed" }),
      },
      { description: "Tokens processed" },
    ),
  }),
  errors: [
    E.notReranker,
    ...LOADING_ERRORS,
    ...ENGINE_ERRORS,
  ],
  example: {
    body: { model: "bge-reranker-v2-m3-GGUF", query: "What is the capital of France?", documents: ["Paris is the capital of France.", "Berlin is in Germany."] },
    response: `{
  "model": "bge-reranker-v2-m3-GGUF",
  "object": "list",
  "results": [{"index": 0, "relevance_score": 8.63}, {"index": 1, "relevance_score": -6.41}],
  "usage": {"prompt_tokens": 31, "total_tokens": 31}
}`,
  },
});

export type RerankRequest = Static<typeof rerank.body>;

export const slots = endpoint({
  id: "llamacpp.slots",
  method: "GET",
  path: "/slots",
  mount: "versioned",
  page: LLAMACPP,
  errorStyle: "openai",
  access: "api",
  summary: "Read each slot's processing state",
  modality: "slots state",
  availability: "fully_available",
  description:
    "Returns the state of each processing slot of the most recently used llama.cpp model. Slots are the parallel contexts that serve concurrent requests.",
  response: T.Array(
    T.Object(
      {
        id: T.Integer({ description: "The slot's ID" }),
        n_ctx: T.Integer({ description: "Context size of the slot" }),
        is_processing: T.Boolean({ description: "Whether the slot is serving a request" }),
        id_task: T.Optional(T.Integer({ description: "The task the slot is processing, or processed last when idle" })),
        params: T.Optional(T.Unknown({ description: "Sampling parameters of the slot's last request" })),
        next_token: T.Optional(T.Unknown({ description: "Generation state of the slot's current request" })),
      },
      { additionalProperties: true },
    ),
    { description: "One entry per slot" },
  ),
  errors: noModelErrors,
  example: { response: `[{"id": 0, "n_ctx": 4096, "is_processing": false, "id_task": 12}]` },
});

export const slotAction = endpoint({
  id: "llamacpp.slots_action",
  metricsLabel: "slots",
  method: "POST",
  path: "/slots/:id",
  mount: "versioned",
  page: LLAMACPP,
  errorStyle: "openai",
  access: "api",
  summary: "Save, restore or erase a slot's prompt cache",
  modality: "prompt cache",
  availability: "fully_available",
  description:
    "Saves a slot's prompt cache to a file, restores it from one, or erases it, so a conversation can resume where it left off. Files live in the model's slot directory under the cache directory (`<cache>/slots/<model>/`); `filename` must be a plain file name inside it.",
  params: T.Object({ id: T.String({ pattern: "^[0-9]+$", description: "The slot to act on." }) }),
  query: T.Object({
    action: T.Union([T.Literal("save"), T.Literal("restore"), T.Literal("erase")], {
      description: "`save` writes the slot's prompt cache to `filename`, `restore` reads it back, and `erase` clears the slot.",
    }),
  }),
  body: T.Optional(
    T.Object({
      filename: T.Optional(
        T.String({ description: "File to save to or restore from, in the model's slot directory. Required for `save` and `restore`." }),
      ),
    }),
  ),
  response: T.Object(
    {
      id_slot: T.Integer({ description: "The slot acted on" }),
      filename: T.Optional(T.String({ description: "`save` and `restore`: the file written or read" })),
      n_saved: T.Optional(T.Integer({ description: "`save`: tokens written" })),
      n_restored: T.Optional(T.Integer({ description: "`restore`: tokens read" })),
      n_erased: T.Optional(T.Integer({ description: "`erase`: tokens cleared" })),
    },
    { additionalProperties: true },
  ),
  errors: [
    { status: 400, code: "invalid_argument", when: "`filename` is missing for `save`/`restore`, or is not a plain file name in the slot directory" },
    { status: 400, code: "invalid_argument", when: "`id` is too large for a 32-bit integer" },
    ...noModelErrors,
  ],
  example: { path: "/v1/slots/0", query: "action=erase", response: '{"id_slot": 0, "n_erased": 46}' },
});

export const tokenize = endpoint({
  id: "llamacpp.tokenize",
  method: "POST",
  path: "/tokenize",
  mount: "versioned",
  page: LLAMACPP,
  errorStyle: "openai",
  access: "api",
  summary: "Tokenize text",
  modality: "tokenization",
  availability: "fully_available",
  description:
    "Tokenizes text with the most recently used llama.cpp model's tokenizer, without using its context window.",
  body: T.Object(
    {
      content: T.String({ description: "The text to tokenize." }),
      add_special: T.Optional(T.Boolean({ description: "Insert special tokens, such as `BOS`. Defaults to `false`." })),
      parse_special: T.Optional(T.Boolean({ description: "Tokenize special tokens; `false` treats them as plain text. Defaults to `true`." })),
      with_pieces: T.Optional(T.Boolean({ description: "Return each token's text piece with its ID. Defaults to `false`." })),
    },
    { additionalProperties: true },
  ),
  response: T.Object({
    tokens: T.Array(T.Unknown(), { description: 'Token IDs, or `{"id", "piece"}` objects when `with_pieces` is `true`' }),
  }),
  errors: noModelErrors,
  example: { body: { content: "This is a test" }, response: '{"tokens": [1986, 374, 264, 1273]}' },
});
