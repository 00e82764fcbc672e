// Models on disk (lemonade.md): pulling and registering, a repository's variants, update checks,
// the registry search, routing-policy checks, server-owned download jobs and deletion.
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { LLAMACPP } from "./recipes.ts";
import { E } from "./errors.ts";

const PullDefinition = {
  model_name: T.String({ minLength: 1, description: "Model to install; a new registration must use the `user.` namespace." }),
  model: T.Optional(T.String({ description: "Accepted in place of `model_name`." })),
  recipe: T.Optional(T.String({ description: "Registration: recipe to load the model with, such as `llamacpp`." })),
  checkpoint: T.Optional(T.String({ description: "Registration: Hugging Face main checkpoint, `org/name:variant`." })),
  checkpoints: T.Optional(
    T.Record(T.String(), T.String(), { description: "Registration: checkpoints by role (`main`, `mmproj`, ...)." }),
  ),
  mmproj: T.Optional(T.String({ description: "Registration: multimodal projector file in the main checkpoint's repo." })),
  labels: T.Optional(T.Array(T.String(), { description: "Registration: labels; at most one deployment mode, one the recipe serves." })),
  reasoning: T.Optional(T.Boolean({ description: "Registration: adds the `reasoning` label." })),
  vision: T.Optional(T.Boolean({ description: "Registration: adds the `vision` label." })),
  embedding: T.Optional(T.Boolean({ description: "Registration: adds the `embeddings` label." })),
  reranking: T.Optional(T.Boolean({ description: "Registration: adds the `reranking` label." })),
  version: T.Optional(T.String({ description: "collection.router: the policy document's version, \"1\"." })),
  routing: T.Optional(T.Unknown({ description: "collection.router: the routing block (candidates, default_model, rules and classifiers, or router)." })),
  components: T.Optional(T.Array(T.String(), { description: "collection.omni: the ordered, non-empty list of its models (none of them a collection)." })),
  models: T.Optional(T.Array(T.Record(T.String(), T.Unknown()), { description: "collection.omni: a definition per component (the registration fields, keyed by `model_name`); components not registered here are registered from them, the others keep their local definition." })),
  system_prompt: T.Optional(T.String({ description: "collection.omni: a system prompt of its own in place of the built-in one." })),
  source: T.Optional(
    T.String({ description: "Registration: the registry the checkpoints come from, `huggingface` (default, alias `hf`) or `modelscope` (alias `ms`; `MODELSCOPE_ENDPOINT`, files under `<cache>/modelscope/hub`)." }),
  ),
};

export const JobSnapshot = T.Object(
  {
    id: T.String({
      description: "Stable download id: `model:<name>`, the name as the pull gave it, or `backend:<recipe>:<backend>` for a backend install (`POST /v1/install` with `stream: true, subscribe: false`)",
    }),
    type: T.Union([T.Literal("model"), T.Literal("backend")], { description: "`model`, or `backend` for a backend install" }),
    model_name: T.String({ description: "The model being downloaded, named as the pull named it; for a backend install, `<recipe>:<backend>`" }),
    canonical_id: T.Optional(
      T.String({
        description:
          "Model jobs: the canonical id of the model being downloaded, as `/v1/models` gives it (`user.NAME`, `extra.NAME`, `builtin.NAME`): the job's model even once `model_name` names another (a registration made since, shadowing the built-in the job downloads)",
      }),
    ),
    status: T.String({ description: "`downloading`, `paused`, `cancelled`, `completed` or `error`" }),
    running: T.Boolean({ description: "Whether the download worker is still active" }),
    file: T.String({ description: "Current file (a backend install's release asset)" }),
    file_index: T.Integer({ description: "Current file's position, from 1" }),
    total_files: T.Integer({ description: "Files in the download" }),
    bytes_downloaded: T.Number({ description: "Bytes of the current file on disk" }),
    bytes_total: T.Number({ description: "Size of the current file" }),
    total_download_size: T.Number({ description: "Bytes across all files" }),
    bytes_previously_downloaded: T.Number({ description: "Bytes of the current file already on disk when the job reached it" }),
    completed_files_bytes: T.Number({ description: "Bytes of the files before the current one" }),
    cumulative_bytes_downloaded: T.Number({ description: "Bytes across the whole job" }),
    overall_bytes_downloaded: T.Number({ description: "Alias of `cumulative_bytes_downloaded`" }),
    percent: T.Number({ description: "Overall progress" }),
    complete: T.Boolean({ description: "Whether the download finished successfully" }),
    error: T.Optional(T.String({ description: "Failed jobs only: what went wrong" })),
  },
  { title: "DownloadJob", description: "A server-owned download job" },
);

const pullErrors = [
  { status: 400, code: "invalid_argument", when: "A registration names two deployment modes, or one the recipe cannot serve; nothing is registered" },
  { status: 400, code: "lemond_offline", when: "`offline` is set to `true`" },
  E.unknownModel,
  E.modelNotSupported,
  E.modelNotFound,
  { status: 404, code: "download_failed", when: "The hub has no such repository or file" },
  { status: 500, code: "download_failed", when: "The download fails, or a file's size or sha256 does not match the hub's; nothing partial counts as downloaded" },
  E.insufficientStorage,
];

export const pull = endpoint({
  id: "lemonade.pull",
  method: "POST",
  path: "/pull",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Install a model, registering it first when defined",
  availability: "partially_available",
  description:
    "Downloads a registered model's files into the Hugging Face cache, or registers a `user.*` model (`checkpoint` or `checkpoints`, `recipe`, labels) in `user_models.json` and then downloads it. Files already complete are kept; a partial file resumes where it stopped. Each file's size and, where the hub gives it, sha256 are checked before it counts as downloaded. A pull of a model already downloading joins that download.",
  notes:
    'With `stream: true` the answer is Server-Sent Events: `event: progress` with `{"file", "file_index", "total_files", "bytes_downloaded", "bytes_total", "total_download_size", "bytes_previously_downloaded", "percent"}`, then `event: complete` (the figures of the last file at `percent` 100, or `{"status": "ok"}` when nothing was left to download) or `event: error` with `{"error"}` (and `code` `unknown_model` for a name that cannot be registered); a download paused or cancelled through `POST /v1/downloads/control` ends the stream after its last `progress` event, with neither `complete` nor `error`. With `stream: true, subscribe: false` the server starts a download job it owns and answers with its snapshot at once; follow it with `GET /v1/downloads` and steer it with `POST /v1/downloads/control`. Pulling a paused job again resumes it. A `collection.router` registration (`recipe`, `version` \"1\", `components`, `routing`) is a collection: its `components` are checked as those of an omni collection, every model its policy names (candidates, classifier and router models) must be among them, and the policy is checked as `POST /v1/routing/validate` checks it and stored as written; naming it in a chat or completions request routes the request (the `x-lemonade-route` header, and `x_lemonade_route` with `route_trace: true`). A `collection.omni` registration names its `components` (each a registered regular model, or one defined in `models`, registered first) or, for a published collection, the `checkpoint` of the repository holding `<RepoName>.json`; the pull downloads every component not yet downloaded. Naming it in a chat runs the server-side tool loop.',
  bodyAliases: { model: "model_name" },
  body: T.Object(
    {
      ...PullDefinition,
      stream: T.Optional(T.Boolean({ description: "`true` answers with Server-Sent Events reporting progress. Defaults to `false`." })),
      subscribe: T.Optional(
        T.Boolean({ description: "With `stream: true`: `false` starts a server-owned job and answers with its snapshot at once. Defaults to `true`." }),
      ),
    },
    { additionalProperties: true },
  ),
  response: T.Union([
    T.Object(
      {
        status: T.Literal("success", { description: 'Always `"success"`' }),
        message: T.String({ description: "What was installed" }),
        model_name: T.String({ description: "The model, as the request named it" }),
      },
      { description: "Installed (without `stream`)" },
    ),
    JobSnapshot,
  ]),
  stream: {
    contentType: "text/event-stream",
    event: T.Object(
      {
        file: T.Optional(T.String({ description: "`progress`: the file downloading" })),
        file_index: T.Optional(T.Integer({ description: "`progress`: its position, from 1" })),
        total_files: T.Optional(T.Integer({ description: "`progress`: files in the download" })),
        bytes_downloaded: T.Optional(T.Number({ description: "`progress`: bytes of the file downloaded" })),
        bytes_total: T.Optional(T.Number({ description: "`progress`: the file's size" })),
        total_download_size: T.Optional(T.Number({ description: "`progress`: bytes of every file in the download" })),
        bytes_previously_downloaded: T.Optional(T.Number({ description: "`progress`: bytes of the file already on disk when its download began" })),
        percent: T.Optional(T.Number({ description: "Overall progress; `100` on `complete`" })),
        status: T.Optional(T.Literal("ok", { description: "`complete`, when nothing was left to download" })),
        model_name: T.Optional(T.String({ description: "`complete`: the model installed, named as the request named it" })),
        error: T.Optional(T.String({ description: "`error`: what went wrong" })),
        code: T.Optional(T.String({ description: "`error`: `unknown_model` for a name that is not registered and, without the `user.` prefix, cannot be" })),
      },
      { title: "PullProgressEvent", additionalProperties: true, description: "The data of an `event: progress`, `complete` or `error`" },
    ),
  },
  errors: pullErrors,
  example: { body: { model_name: "Qwen3-0.6B-GGUF" }, response: '{"status": "success", "message": "Installed model: Qwen3-0.6B-GGUF", "model_name": "Qwen3-0.6B-GGUF"}' },
});

export const register = endpoint({
  id: "lemonade.models_register",
  method: "POST",
  path: "/models/register",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Register a user model without downloading it",
  availability: "fully_available",
  description:
    "Registers or updates a `user.*` model definition in `user_models.json` without downloading anything. The label rules of `/v1/pull` apply.",
  bodyAliases: { model: "model_name" },
  body: T.Object({ ...PullDefinition, recipe: T.String({ description: "Recipe to load the model with, such as `llamacpp`." }) }, { additionalProperties: true }),
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"`' }),
    message: T.String({ description: "What was registered" }),
    model_name: T.String({ description: "The public ID `/v1/models` lists it by (the bare name)" }),
    canonical_model_name: T.String({ description: "The stable `user.*` registration ID" }),
    model: T.Object({ id: T.String(), recipe: T.String(), downloaded: T.Boolean() }, { description: "The model as registered" }),
  }),
  errors: pullErrors.slice(0, 1),
  example: {
    body: { model_name: "user.Phi-4-Mini-GGUF", checkpoint: "unsloth/Phi-4-mini-instruct-GGUF:Q4_K_M", recipe: LLAMACPP },
    response: '{"status": "success", "message": "Registered model: user.Phi-4-Mini-GGUF", "model_name": "Phi-4-Mini-GGUF", "canonical_model_name": "user.Phi-4-Mini-GGUF", "model": {"id": "Phi-4-Mini-GGUF", "recipe": "llamacpp", "downloaded": false}}',
  },
});

export const pullVariants = endpoint({
  id: "lemonade.pull_variants",
  method: "GET",
  path: "/pull/variants",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "List a GGUF repository's quantizations",
  availability: "fully_available",
  description:
    "Reads a Hugging Face GGUF repository's file list and groups it into variants (one file per quantization, or a folder of shards), top five first (`Q4_K_M`, `UD-Q4_K_XL`, `Q8_0`, `Q4_0`, then by name), with the `mmproj` files and suggestions for registering it. A repository with no GGUF that holds `<RepoName>.json`, a collection `lemonade export` wrote, is reported as `recipe: \"collection.omni\"`, `repo_kind: \"collection\"`, no variants and its `component_count`; pull it by registering `{recipe: \"collection.omni\", checkpoint: <repo>}`.",
  query: T.Object({
    checkpoint: T.String({ description: "Hugging Face repo id, e.g. `unsloth/Qwen3-8B-GGUF`, or its URL (`https://huggingface.co/unsloth/Qwen3-8B-GGUF`)." }),
    source: T.Optional(T.String({ description: "`huggingface` (default, alias `hf`) or `modelscope` (alias `ms`)." })),
  }),
  response: T.Object({
    checkpoint: T.String({ description: "Echoed input" }),
    recipe: T.String({ description: "Suggested recipe: `llamacpp`, or `collection.omni` for a published collection" }),
    repo_kind: T.Optional(T.Literal("collection", { description: "Present for a published collection" })),
    component_count: T.Optional(T.Integer({ description: "A published collection's number of components" })),
    suggested_name: T.String({ description: "Repo id without the owner, for a `user.` name" }),
    suggested_labels: T.Array(T.String(), { description: "`vision` when mmproj files exist, `embeddings`/`reranking` when the repo id says so" }),
    mmproj_files: T.Array(T.String(), { description: "The repo's `mmproj-*.gguf` files" }),
    variants: T.Array(
      T.Object({
        name: T.String({ description: "Quantization or folder name" }),
        primary_file: T.String({ description: "The file to name in the checkpoint (the first shard when split)" }),
        files: T.Array(T.String(), { description: "Every file of the variant" }),
        sharded: T.Boolean({ description: "Whether the variant is split into shards" }),
        size_bytes: T.Integer({ description: "Bytes across its files" }),
      }),
      { description: "Up to five variants" },
    ),
  }),
  errors: [
    { status: 400, code: "invalid_argument", when: "`checkpoint` is malformed (it must contain `/`)" },
    { status: 400, code: "lemond_offline", when: "`offline` is set to `true`" },
    { status: 400, code: "invalid_argument", when: "The repository's `<RepoName>.json` is not a collection manifest (or is over 5 MiB)" },
    { status: 404, code: "download_failed", when: "The hub has no such repository" },
    { status: 500, code: "download_failed", when: "The hub cannot be reached or answers an error" },
  ],
  example: {
    query: "checkpoint=unsloth/Qwen3-8B-GGUF",
    response: `{"checkpoint": "unsloth/Qwen3-8B-GGUF", "recipe": "llamacpp", "suggested_name": "Qwen3-8B-GGUF", "suggested_labels": [], "mmproj_files": [], "variants": [{"name": "Q4_K_M", "primary_file": "Qwen3-8B-Q4_K_M.gguf", "files": ["Qwen3-8B-Q4_K_M.gguf"], "sharded": false, "size_bytes": 4920000000}]}`,
  },
});

export const checkUpdates = endpoint({
  id: "lemonade.check_updates",
  method: "POST",
  path: "/models/check-updates",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Check downloaded models for newer upstream commits",
  availability: "fully_available",
  description:
    "Compares each downloaded Hugging Face model's cached commit with its repository's current one. Models with a newer commit report `update_available: true` in `/v1/models` until pulled again.",
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"`' }),
    updates_available: T.Integer({ description: "How many models have a newer commit" }),
    models: T.Array(T.String(), { description: "Those models" }),
  }),
  errors: [{ status: 409, code: "lemond_offline", when: "`offline` is set to `true`: no network request is made" }],
  example: { response: '{"status": "success", "updates_available": 1, "models": ["Qwen3-4B-GGUF"]}' },
});

/** What `POST /v1/routing/validate` answers for a `policy` that is neither a document nor a name. */
export const ROUTING_POLICY_MESSAGE = "'policy' must be a JSON object (a collection.router definition) or a registered router's name";

export const routingValidate = endpoint({
  id: "lemonade.routing_validate",
  method: "POST",
  path: "/routing/validate",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Check a routing policy",
  availability: "partially_available",
  description:
    "Checks a `collection.router` policy document (`version` \"1\", `routing`) as a registration would, against the models registered now, without registering anything. Candidates (each once), `default_model`, every `route_to`, classifier references and labels, regexes (no nested unbounded quantifiers), match nodes (one logical operator alone, or leaf conditions; a non-empty `rules` list and `any`/`all` lists) and metadata comparators are checked; the answer is the policy as the engine runs it, the `router` sugar desugared into an `llm` classifier `__router` and identity rules `__route_0`, `__route_1`, ... (one per candidate, the rule id the route header names). `llm`, `semantic_similarity` and `classifier` classifiers are evaluated (a `classifier` names an `onnxruntime` classification model and lists the labels its rules use; they score as `/v1/classify` scores them); the reserved presets (`pii_detection`, `prompt_safety`, ...) are refused: this server does not evaluate them yet.",
  notes:
    "Lemonade's form tries a policy on a test request: `policy` (a `collection.router` document inline, `{\"version\": \"1\", \"recipe\": \"collection.router\", \"components\": [...], \"routing\": {...}}`, whose names are taken as given but must each be among its `components`, or a registered router's name), the test `prompt`, `has_images`, `has_tools` and `metadata` (string values); the answer is the `decision` (`route_to`, `matched_rule`, `default_used`, `outputs`, `trace`) and the `normalized_policy`. A classifier that cannot run fails open, as a routed request does: its `on_error` decides the condition. Without `policy`, the body itself is the policy document and the answer is `valid` and the normalised `routing`.",
  body: T.Object(
    {
      policy: T.Optional(T.Union([T.String({ minLength: 1 }), T.Record(T.String(), T.Unknown())], { description: "The policy to try: a `collection.router` definition, or a registered router's name" })),
      prompt: T.Optional(T.String({ description: "The test request's text" })),
      has_images: T.Optional(T.Boolean({ description: "Whether the test request carries images" })),
      has_tools: T.Optional(T.Boolean({ description: "Whether the test request carries tools" })),
      metadata: T.Optional(T.Record(T.String(), T.String(), { description: "The test request's metadata" })),
      version: T.Optional(T.String()),
      routing: T.Optional(T.Unknown({ description: "Without `policy`: the routing block: candidates, default_model, rules (and classifiers), or router" })),
    },
    { additionalProperties: true },
  ),
  // Lemonade's wording for each test field of the wrong type.
  invalidFieldMessage: ([field, key]) =>
    field === "policy"
      ? ROUTING_POLICY_MESSAGE
      : field === "metadata"
        ? key === undefined
          ? "'metadata' must be a JSON object of string values"
          : `'metadata' value for key '${key}' must be a string`
        : field === "prompt"
          ? "'prompt' must be a string"
          : field === "has_images" || field === "has_tools"
            ? `'${field}' must be a boolean`
            : undefined,
  response: T.Union([
    T.Object(
      {
        decision: T.Object(
          {
            version: T.Literal("1"),
            route_to: T.String({ description: "The candidate the request goes to" }),
            matched_rule: T.String({ description: "The rule that matched; empty when the default was used" }),
            default_used: T.Boolean(),
            outputs: T.Record(T.String(), T.Unknown(), { description: "The matched rule's outputs" }),
            trace: T.Array(T.Record(T.String(), T.Unknown()), { description: "Each condition evaluated, with its result (and a classifier's label and score)" }),
          },
          { title: "RouteDecision" },
        ),
        normalized_policy: T.Record(T.String(), T.Unknown(), { description: "The policy as evaluated: `routing` normalised, the `router` sugar desugared" }),
      },
      { title: "RoutingTryResponse", description: "With `policy`" },
    ),
    T.Object(
      {
        valid: T.Literal(true),
        routing: T.Unknown({ description: "The normalised policy: candidates, default_model, classifiers, rules" }),
      },
      { title: "RoutingValidResponse", description: "Without `policy`" },
    ),
  ]),
  errors: [
    {
      status: 400,
      code: "invalid_argument",
      when: "The policy is not valid (the message names the key and why), a `policy` name is no registered router, or `prompt`, `has_images`, `has_tools` or `metadata` has the wrong type",
    },
  ],
  example: {
    body: { version: "1", routing: { candidates: ["Qwen3-0.6B-GGUF"], default_model: "Qwen3-0.6B-GGUF", rules: [{ id: "code", match: { keywords_any: ["python"] }, route_to: "Qwen3-0.6B-GGUF" }] } },
    response:
      '{"valid": true, "routing": {"candidates": ["Qwen3-0.6B-GGUF"], "default_model": "Qwen3-0.6B-GGUF", "classifiers": [], "rules": [{"id": "code", "match": {"keywords_any": ["python"]}, "route_to": "Qwen3-0.6B-GGUF"}]}}',
  },
});

export const registrySearch = endpoint({
  id: "lemonade.registry_search",
  method: "GET",
  path: "/registry/search",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Search Hugging Face for model repositories",
  availability: "partially_available",
  description:
    "Searches the Hugging Face hub (`HF_ENDPOINT`) for repositories matching a text. Candidates only: `/v1/pull/variants` checks what a repository holds. ModelScope is not supported.",
  query: T.Object({
    query: T.Optional(T.String({ description: "Search text, at least 3 characters after trimming. `q` is accepted as an alias." })),
    q: T.Optional(T.String({ description: "Alias of `query`." })),
    source: T.Optional(T.String({ description: "`huggingface` (default, alias `hf`) or `modelscope` (alias `ms`)." })),
    limit: T.Optional(T.Integer({ minimum: 1, maximum: 50, description: "Most results, 1 to 50. Default 12." })),
    format: T.Optional(T.Literal("gguf", { description: "`gguf` favours GGUF repositories and is echoed back." })),
  }),
  response: T.Object({
    query: T.String({ description: "The search text" }),
    source: T.String({ description: "`huggingface`" }),
    format: T.Optional(T.String({ description: "Present when `format=gguf` was asked" })),
    total: T.Integer({ description: "Matches the hub reported" }),
    results: T.Array(T.Unknown(), {
      description:
        "Up to `limit` repositories with `repository_id`, `display_name`, `source`, `repository_type`, `description`, `tags`, `task`, `downloads`, `likes` and `has_gguf`",
    }),
  }),
  errors: [
    { status: 400, code: "invalid_argument", when: "`query` is shorter than 3 characters, or `source` is not `huggingface`" },
    { status: 400, code: "lemond_offline", when: "`offline` is set to `true`" },
    E.hubRateLimited,
    { status: 502, code: "download_failed", when: "The hub cannot be reached or answers an error" },
  ],
  example: {
    query: "query=qwen&format=gguf",
    response: `{"query": "qwen", "source": "huggingface", "format": "gguf", "total": 1, "results": [{"repository_id": "unsloth/Qwen3-8B-GGUF", "display_name": "Qwen3-8B-GGUF", "source": "huggingface", "repository_type": "model", "description": "", "tags": ["gguf"], "task": "text-generation", "downloads": 12000, "likes": 40, "has_gguf": true}]}`,
  },
});

export const downloads = endpoint({
  id: "lemonade.downloads",
  method: "GET",
  path: "/downloads",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "List server-owned download jobs",
  availability: "fully_available",
  description:
    "Lists the download jobs started with `POST /v1/pull` or `POST /v1/install` and `stream: true, subscribe: false`. Active, paused, cancelled, failed and completed jobs stay listed until removed.",
  response: T.Array(JobSnapshot, { description: "The jobs, as a bare array (lemonade.md)" }),
  example: {
    response: `[{"id": "model:Qwen3-0.6B-GGUF", "type": "model", "model_name": "Qwen3-0.6B-GGUF", "canonical_id": "builtin.Qwen3-0.6B-GGUF", "status": "downloading", "running": true, "file": "Qwen3-0.6B-Q4_0.gguf", "file_index": 1, "total_files": 1, "bytes_downloaded": 104857600, "bytes_total": 382156480, "total_download_size": 382156480, "bytes_previously_downloaded": 0, "completed_files_bytes": 0, "cumulative_bytes_downloaded": 104857600, "overall_bytes_downloaded": 104857600, "percent": 27, "complete": false}]`,
  },
});

export const downloadsControl = endpoint({
  id: "lemonade.downloads_control",
  method: "POST",
  path: "/downloads/control",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Pause, cancel or remove a download job",
  availability: "fully_available",
  description:
    "`pause` stops the job and keeps its partial files, so pulling the model again resumes where it stopped; `cancel` stops it and deletes its partial files; `remove` forgets a stopped job (a running one is cancelled first). A backend install (`backend:<recipe>:<backend>`) cannot pause: `pause` or `cancel` stops it and keeps nothing of it (the partial download, the unpacked files), the installed version, if any, stays, and installing again starts over. A completed job stays `completed`. `pause` and `cancel` answer with the job's snapshot once the worker has stopped; `remove` answers `{\"status\": \"ok\"}`, with `\"missing\": true` when there was no such job.",
  body: T.Object({
    id: T.String({ description: "Download id, such as `model:Qwen3-0.6B-GGUF`." }),
    action: T.Union([T.Literal("pause"), T.Literal("cancel"), T.Literal("remove")], { description: "`pause`, `cancel` or `remove`." }),
  }),
  response: T.Union([
    JobSnapshot,
    T.Object(
      {
        status: T.Literal("ok", { description: 'Always `"ok"`' }),
        missing: T.Optional(T.Literal(true, { description: "Present when there was no such job" })),
      },
      { description: "`remove` answers" },
    ),
  ]),
  errors: [{ status: 404, code: "download_not_found", when: "`pause` or `cancel` names no job" }],
  example: {
    body: { id: "model:Qwen3-0.6B-GGUF", action: "pause" },
    response: `{
  "id": "model:Qwen3-0.6B-GGUF", "type": "model", "model_name": "Qwen3-0.6B-GGUF", "canonical_id": "builtin.Qwen3-0.6B-GGUF",
  "status": "paused", "running": false,
  "file": "Qwen3-0.6B-Q4_0.gguf", "file_index": 1, "total_files": 1, "bytes_downloaded": 152862592, "bytes_total": 382156480,
  "total_download_size": 382156480, "bytes_previously_downloaded": 0, "completed_files_bytes": 0,
  "cumulative_bytes_downloaded": 152862592, "overall_bytes_downloaded": 152862592, "percent": 40, "complete": false
}`,
  },
});

export const deleteModel = endpoint({
  id: "lemonade.delete",
  method: "POST",
  path: "/delete",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Delete a downloaded model",
  availability: "fully_available",
  description:
    "Deletes a model's files from the Hugging Face cache, unloading it first when it is loaded. A `user.*` model's registration is removed too. Files another downloaded model shares are kept. A model that is not downloaded is deleted as well, as Lemonade does: what a stopped download left is removed, and a `user.*` model is unregistered. A cloud model has nothing on disk: it is unloaded and stays listed while its provider lists it (`POST /v1/uninstall` removes the provider). The message names the model as the request did.",
  bodyAliases: { model: "model_name" },
  body: T.Object({
    model_name: T.String({ minLength: 1, description: "The model to delete." }),
    model: T.Optional(T.String({ description: "Accepted in place of `model_name`." })),
  }),
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"`' }),
    message: T.String({ description: "What was deleted" }),
  }),
  errors: [
    E.modelNotSupported,
    { status: 422, code: "model_not_found", when: "`model_name` names no model in the registry" },
    { status: 500, code: "delete_failed", when: "The model is an `extra.` model, whose file belongs to its folder" },
  ],
  example: { body: { model_name: "Qwen3-0.6B-GGUF" }, response: '{"status": "success", "message": "Deleted model: Qwen3-0.6B-GGUF"}' },
});

export type PullRequest = Static<typeof pull.body>;
export type PullResponse = Static<typeof pull.response>;
export type RegisterRequest = Static<typeof register.body>;
export type RegisterResponse = Static<typeof register.response>;
export type PullVariantsResponse = Static<typeof pullVariants.response>;
export type CheckUpdatesResponse = Static<typeof checkUpdates.response>;
export type RegistrySearchQuery = Static<typeof registrySearch.query>;
export type RegistrySearchResponse = Static<typeof registrySearch.response>;
export type DownloadsControlRequest = Static<typeof downloadsControl.body>;
export type DownloadsControlResponse = Static<typeof downloadsControl.response>;
export type DeleteModelResponse = Static<typeof deleteModel.response>;
export type RoutingValidateRequest = Static<typeof routingValidate.body>;
export type RoutingValidateResponse = Static<typeof routingValidate.response>;
