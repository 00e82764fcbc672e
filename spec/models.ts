// Model listing and per-model options (openai.md: /v1/models and /v1/models/{id}...).
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { LayerName, TuningView } from "./tuning.ts";
import { E } from "./errors.ts";

const IncludePaths = T.Optional(
  T.Boolean({
    description:
      "`true` adds each present checkpoint's absolute `path` to its `checkpoint_status` entry, which can reveal local usernames and the cache layout. Defaults to `false`.",
  }),
);

const ModelId = T.String({
  description:
    "Model id, as listed by [`GET /v1/models`](#get-v1models), or an alias. A trailing `:latest`, the tag Ollama clients append, names the bare id when nothing is registered under the tagged name.",
});

export const ImageDefaults = T.Object(
  {
    steps: T.Number({ description: "Inference steps" }),
    cfg_scale: T.Number({ description: "Classifier-free guidance scale" }),
    width: T.Number({ description: "Image width in pixels" }),
    height: T.Number({ description: "Image height in pixels" }),
    sampling_method: T.Optional(T.String({ description: "sd.cpp's sampler, when the model names one" })),
    flow_shift: T.Optional(T.Number({ description: "Flow shift, when the model sets one" })),
  },
  { title: "ImageDefaults", description: "Image models whose registry entry has them: the generation settings the model is made for (20 steps, cfg 7, 512x512 for one the entry leaves out), listed whether or not sd.cpp can run here" },
);

export const ModelObject = T.Object({
  id: T.String({ description: "Model identifier for loading and inference requests" }),
  created: T.Integer({ description: "Always `1234567890`, for OpenAI compatibility" }),
  object: T.Literal("model", { description: 'Always `"model"`' }),
  owned_by: T.Literal("lemonade", { description: 'Always `"lemonade"`' }),
  checkpoint: T.String({ description: "The main checkpoint: `org/name:variant` on Hugging Face, or a local path" }),
  recipe: T.String({ description: "Recipe used to load the model, e.g. `llamacpp`" }),
  size: T.Optional(T.Number({ description: "Size in GB; omitted when unknown" })),
  max_context_window: T.Optional(
    T.Integer({ description: "Largest text context the model supports, read from its GGUF metadata when downloaded" }),
  ),
  context_length: T.Optional(
    T.Integer({
      description:
        "Tokens the model handles in one request: the loaded `ctx_size` while it runs, else the configured `ctx_size`, else `max_context_window`",
    }),
  ),
  downloaded: T.Boolean({ description: "Whether every required checkpoint is on disk" }),
  update_available: T.Boolean({ description: "Whether the model's registry has a newer commit" }),
  suggested: T.Boolean({ description: "Whether the model is recommended for general use" }),
  labels: T.Array(T.String(), { description: "The model's capabilities and characteristics; see Model Labels" }),
  components: T.Array(T.String(), { description: "A collection's component models by the ids listings show them by (a published collection's once its manifest is downloaded); empty for other models" }),
  models: T.Optional(
    T.Array(T.Union([T.Record(T.String(), T.Unknown()), T.Null()]), {
      description: "collection.omni: each component's model object, in the order of `components` (what an export carries); `null` for one no longer registered",
    }),
  ),
  system_prompt: T.Optional(T.String({ description: "collection.omni: its own system prompt, when it has one" })),
  checkpoints: T.Record(T.String(), T.String(), { description: "Every checkpoint by role, such as `main` or `mmproj`" }),
  checkpoint_status: T.Array(
    T.Object({
      type: T.String({ description: "Checkpoint role, e.g. `main`, `mmproj`" }),
      present: T.Boolean({ description: "`true` only when the checkpoint's bytes are complete and readable" }),
      required: T.Boolean({ description: "A missing required checkpoint keeps the model undownloaded" }),
      registry: T.String({ description: "Registry hosting the checkpoint; empty for local files" }),
      path: T.Optional(T.String({ description: "Absolute path; only with `include_paths=true` and when present" })),
    }, { title: "CheckpointStatus" }),
    { description: "One entry per checkpoint, answering whether its bytes are there" },
  ),
  source: T.String({ description: "Where the model came from: `huggingface`, `extra_models_dir`, `local_path` or `cloud`" }),
  canonical_id: T.String({
    description:
      "The model's canonical id: `user.NAME` for a registered model, `extra.NAME` for one in the extra models folder, `builtin.NAME` for a built-in (the key `recipe_options.json` uses); a cloud model's own id. Always accepted as input, as `id` is",
  }),
  shadowed: T.Boolean({
    description:
      "`true` when a source of higher precedence (registered, then extra models folder, then built-in) holds the model's bare name; `id` is then `canonical_id`. A GUI shows such a model as `NAME (registered)`, `NAME (imported)` or `NAME (builtin)`",
  }),
  registry_source: T.String({ description: "Remote registry the checkpoint downloads from: `huggingface` or `modelscope`; `huggingface` for a local or cloud model, which downloads nothing" }),
  recipe_options: T.Record(T.String(), T.Unknown(), {
    description: "The model's own options: its registry row's, with what was saved in `recipe_options.json` on top",
  }),
  image_defaults: T.Optional(ImageDefaults),
  cloud_provider: T.Optional(T.String({ description: "Cloud models only: the provider that serves the model (`checkpoint` is the provider's own id)" })),
  max_output_tokens: T.Optional(T.Number({ description: "Cloud models only: the most tokens one completion can generate, when the provider reports it" })),
  max_completion_tokens: T.Optional(T.Number({ description: "Cloud models only: `max_output_tokens` under its OpenAI name" })),
  cost_input_per_million: T.Optional(T.Number({ description: "Cloud models only: USD per million input tokens, when the provider reports it" })),
  cost_output_per_million: T.Optional(T.Number({ description: "Cloud models only: USD per million output tokens, when the provider reports it" })),
  version: T.Optional(T.String({ description: "Router collections only: the policy document's version" })),
  routing: T.Optional(T.Unknown({ description: "Router collections only: the routing policy, as registered" })),
}, { title: "Model" });

const exampleModel = `{
  "id": "Qwen3-0.6B-GGUF",
  "created": 1234567890,
  "object": "model",
  "owned_by": "lemonade",
  "checkpoint": "unsloth/Qwen3-0.6B-GGUF:Q4_0",
  "recipe": "llamacpp",
  "size": 0.38,
  "max_context_window": 40960,
  "context_length": 4096,
  "downloaded": true,
  "update_available": false,
  "suggested": true,
  "labels": ["chat", "reasoning", "tool-calling"],
  "components": [],
  "checkpoints": {"main": "unsloth/Qwen3-0.6B-GGUF:Q4_0"},
  "checkpoint_status": [
    {"type": "main", "present": true, "required": true, "registry": "huggingface"}
  ],
  "source": "huggingface",
  "canonical_id": "builtin.Qwen3-0.6B-GGUF",
  "shadowed": false,
  "registry_source": "huggingface",
  "recipe_options": {}
}`;

export const list = endpoint({
  id: "openai.models",
  method: "GET",
  path: "/models",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  summary: "List the server's models",
  availability: "partially_available",
  description: "Lists the models available on the server, in OpenAI's format extended with the fields described below.",
  notes:
    "A model alias whose target is listed appears too, as a copy of the target with the alias as its `id`. Every GGUF in the extra models folder is listed as a downloaded model. Each model's `id` is its bare name when its source wins that name (registered, then extra models folder, then built-in), else its `canonical_id`, so a name two sources share is listed once bare and once per shadowed source; a registered collection is listed by its `user.` id even when it wins. Every form (`NAME`, `user.NAME`, `extra.NAME`, `builtin.NAME`) is accepted as input; a prefixed form names only a model of that source.",
  query: T.Object({
    show_all: T.Optional(
      T.Boolean({
        description:
          "`true` also lists catalog models that are not downloaded. Defaults to `false`, which lists downloaded models only.",
      }),
    ),
    include_paths: IncludePaths,
  }),
  head: true,
  response: T.Object({
    object: T.Literal("list", { description: 'Always `"list"`' }),
    data: T.Array(ModelObject, { description: "The model objects" }),
  }),
  example: { response: `{\n  "object": "list",\n  "data": [\n${exampleModel.replace(/^/gm, "    ")}\n  ]\n}` },
});

export const get = endpoint({
  id: "openai.models_id",
  method: "GET",
  path: "/models/:id",
  mount: "versioned",
  page: "openai",
  errorStyle: "lemonade_model",
  access: "api",
  summary: "Read one model",
  availability: "fully_available",
  description: "Returns one model, as the same model object [`GET /v1/models`](#get-v1models) lists.",
  params: T.Object({ id: ModelId }),
  query: T.Object({ include_paths: IncludePaths }),
  response: ModelObject,
  errors: [E.modelNotSupported, E.modelNotFound],
  example: { path: "/v1/models/Qwen3-0.6B-GGUF", response: exampleModel },
});

export const files = endpoint({
  id: "openai.models_id_files",
  method: "GET",
  path: "/models/:id/files",
  mount: "versioned",
  page: "openai",
  errorStyle: "lemonade",
  access: "api",
  summary: "List one model's local files",
  availability: "fully_available",
  description:
    "Lists the resolved local files of one model, for model-detail views. It inventories one model, not drive storage. Each checkpoint role is one entry: a sharded GGUF is listed by its first shard, with that shard's own `size_bytes` (the model's `size` in [`GET /v1/models`](#get-v1models) counts every shard).",
  params: T.Object({
    id: T.String({ description: "Model id, as listed by [`GET /v1/models`](#get-v1models). An alias's id is not accepted here; use its target." }),
  }),
  query: T.Object({
    include_paths: T.Optional(
      T.Boolean({ description: "`true` adds each file's absolute `path`, which can reveal local usernames and the cache layout. Defaults to `false`." }),
    ),
  }),
  response: T.Object({
    model_id: T.String({ description: "The model's public id" }),
    files: T.Array(
      T.Object({
        name: T.String({ description: "Base filename from the resolved path" }),
        path: T.Optional(T.String({ description: "Absolute path; present only with `include_paths=true`" })),
        role: T.String({ description: "Checkpoint role, for example `main` or `mmproj`" }),
        size_bytes: T.Integer({ description: "File size in bytes. Missing files report `0`" }),
        exists: T.Boolean({ description: "Whether the resolved path currently exists on disk" }),
      }),
      { description: "The model's resolved files" },
    ),
  }),
  errors: [E.modelNotSupported, E.modelNotFound],
  example: {
    path: "/v1/models/Qwen3-0.6B-GGUF/files",
    response: `{\n  "model_id": "Qwen3-0.6B-GGUF",\n  "files": [\n    {"name": "Qwen3-0.6B-Q4_0.gguf", "role": "main", "size_bytes": 382156480, "exists": true}\n  ]\n}`,
  },
});

const OptionsBody = T.Object({
  model_name: T.String({ description: "The id from the URL, so that `effective` and `defaults` are complete `/v1/load` bodies" }),
  recipe: T.String({ description: "The recipe the option names belong to" }),
  saved: T.Record(T.String(), T.Unknown(), {
    description: "The model's own entry in `recipe_options.json`: only what was explicitly saved, or `{}`",
  }),
  effective: T.Record(T.String(), T.Unknown(), {
    description:
      "The body a `POST /v1/load` for this model uses now: every option the recipe accepts, resolved through the priority chain. A `ctx_size` of `-1` (automatic) stays `-1` here, so a client can tell it from a fixed size; `resolved_ctx_size` carries the number it comes to",
  }),
  defaults: T.Record(T.String(), T.Unknown(), {
    description: "What `effective` becomes if `saved` is erased. A `ctx_size` of `-1` means the server picks the context size",
  }),
  resolved_ctx_size: T.Optional(
    T.Integer({ description: "The context size a load right now would use, for recipes that take one: `effective.ctx_size` as is, or, when that is `-1`, the size the server picks" }),
  ),
  load_command: T.String({ description: "The curl command that reproduces the load: `effective` posted to `/v1/load`, with `$LEMONADE_BASE_URL` (and `$LEMONADE_API_KEY` on a key-protected server) left for the caller to fill in" }),
  provenance: T.Optional(T.Record(T.String(), LayerName, { description: "Lemonade extension: the layer each `effective` value came from" })),
  tuning: T.Optional(TuningView),
}, { title: "ModelOptions" });

const optionsExample = (saved: string, ctx: number, resolved: number) => `{
  "model_name": "Qwen3-0.6B-GGUF",
  "recipe": "llamacpp",
  "saved": ${saved},
  "effective": {"ctx_size": ${ctx}, "llamacpp_backend": "cpu", "llamacpp_args": "", "merge_args": true, "evict_idle_timeout": 300, "model_name": "Qwen3-0.6B-GGUF"},
  "defaults": {"ctx_size": 4096, "llamacpp_backend": "cpu", "llamacpp_args": "", "merge_args": true, "evict_idle_timeout": 300, "model_name": "Qwen3-0.6B-GGUF"},
  "resolved_ctx_size": ${resolved},
  "load_command": "curl -X POST $LEMONADE_BASE_URL/v1/load -H \\"Content-Type: application/json\\" -d '{\\"ctx_size\\": ${ctx}, \\"llamacpp_backend\\": \\"cpu\\", \\"llamacpp_args\\": \\"\\", \\"merge_args\\": true, \\"evict_idle_timeout\\": 300, \\"model_name\\": \\"Qwen3-0.6B-GGUF\\"}'",
  "provenance": {"ctx_size": "${saved === "{}" ? "config" : "saved"}", "llamacpp_backend": "default", "llamacpp_args": "default", "merge_args": "default", "evict_idle_timeout": "default"},
  "tuning": {"enabled": true, "archetype": "cpu-avx2-8c-32gb", "backend": "cpu", "profile_source": "llama.cpp tools/completion/README.md: threads = physical cores", "params": {"threads": {"value": 8, "source": "profile"}}, "args": "-t 8"}
}`;

const optionsDescription =
  "Per-model options live in `recipe_options.json` in the cache directory, each under the canonical id of the model the name resolves to (`builtin.NAME`, `user.NAME` or `extra.NAME`), so a shadowed built-in keeps its own. A load resolves each option through the priority chain: the `/v1/load` request, then the saved entry, then the model's registry row, then the server configuration, then the built-in default.";

export const optionsGet = endpoint({
  id: "openai.models_id_options_get",
  method: "GET",
  path: "/models/:id/options",
  mount: "versioned",
  page: "openai",
  errorStyle: "lemonade",
  access: "api",
  summary: "Read a model's recipe options by layer",
  availability: "fully_available",
  description: `Reads a model's recipe options, separated by layer, without loading it. ${optionsDescription}`,
  params: T.Object({ id: ModelId }),
  response: OptionsBody,
  errors: [E.modelNotSupported, E.modelNotFound, E.optionsIoError],
  example: { path: "/v1/models/Qwen3-0.6B-GGUF/options", response: optionsExample("{}", 4096, 4096) },
});

export const optionsPost = endpoint({
  id: "openai.models_id_options_post",
  method: "POST",
  path: "/models/:id/options",
  mount: "versioned",
  page: "openai",
  errorStyle: "lemonade",
  access: "api",
  summary: "Save a model's recipe options",
  availability: "fully_available",
  description:
    "Saves recipe options for a model without loading it. The body is a flat object of the recipe options [`/v1/load`](./lemonade.md#post-v1load) accepts: `ctx_size`, `llamacpp_backend`, `llamacpp_args`, `merge_args` and `evict_idle_timeout` for `llamacpp` models.",
  notes:
    "The request merges into the model's saved entry, so keys it leaves out keep their values. `null` removes an option, as do `-1`, `\"\"` and `\"auto\"` for any option but `ctx_size`. A request that fails validation saves nothing. With `dry_run`, nothing is persisted: `effective` and `resolved_ctx_size` describe the state the save would produce, while `saved` keeps reporting the entry on disk. A running model keeps its current options until it is next loaded.",
  params: T.Object({ id: ModelId }),
  body: T.Object(
    {
      ctx_size: T.Optional(
        T.Union([T.Integer(), T.Null()], {
          description: "Context size: a positive whole number, or `-1` to size it automatically.",
        }),
      ),
      dry_run: T.Optional(T.Boolean({ description: "`true` reports what the request would do without doing it. Defaults to `false`." })),
      model_name: T.Optional(T.String({ description: "Ignored; the URL names the model. Accepted so `effective` can be posted back as is." })),
    },
    { additionalProperties: true },
  ),
  response: OptionsBody,
  errors: [
    { status: 400, code: "invalid_argument", when: "The body names an option that the model's recipe does not accept, or sets `pinned`" },
    { status: 400, code: "invalid_argument", when: "`ctx_size` is not a positive whole number or `-1`, or an option has the wrong type" },
    E.modelNotSupported,
    E.modelNotFound,
    E.optionsIoError,
  ],
  example: { path: "/v1/models/Qwen3-0.6B-GGUF/options", body: { ctx_size: 8192 }, response: optionsExample('{"ctx_size": 8192}', 8192, 8192) },
});

export const optionsDelete = endpoint({
  id: "openai.models_id_options_delete",
  method: "DELETE",
  path: "/models/:id/options",
  mount: "versioned",
  page: "openai",
  errorStyle: "lemonade",
  access: "api",
  summary: "Reset a model's recipe options",
  availability: "fully_available",
  description:
    "Resets a model to its defaults by erasing its `recipe_options.json` entry. Defaults from its registry entry and the server's configuration still apply.",
  params: T.Object({ id: ModelId }),
  response: OptionsBody,
  errors: [E.modelNotSupported, E.modelNotFound, E.optionsIoError],
  example: { path: "/v1/models/Qwen3-0.6B-GGUF/options", response: optionsExample("{}", 4096, 4096) },
});

export type ModelResponse = Static<typeof get.response>;
export type ModelOptionsRequest = Static<typeof optionsPost.body>;
export type ModelOptionsResponse = Static<typeof optionsGet.response>;
