// Running the server (lemonade.md): liveness, health, the last request's stats, system info and
// stats, metrics, the log stream and the API reference.
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E } from "./errors.ts";
import { internalConfig, internalSet } from "./internal.ts";
import { Archetype, TuningStatus } from "./tuning.ts";
import { ModelType, Nullable, PerModelType } from "./schemas.ts";
import { AuthHeaderFields, CloudWarnings } from "./backends.ts";

export const RpcSplit = T.Object(
  {
    workers: T.Array(
      T.Object({
        address: T.String({ description: "The worker, `host:port` as configured" }),
        devices: T.Array(T.String(), { description: "Its rpc-server's devices (such as `CPU`, `CUDA0`)" }),
        weights_mib: Nullable(T.Number(), { description: "MiB sent to it while the model loaded: its share of the weights; null while loading" }),
        bytes_sent: T.Integer({ description: "Bytes sent to it over the TLS link since the load" }),
        bytes_received: T.Integer({ description: "Bytes received from it since the load" }),
      }),
      { description: "The workers the model is split across, in `--rpc` order" },
    ),
    missing_workers: T.Array(T.String(), { description: "Workers `rpc: all` asked for that did not answer at load" }),
    tensor_split: T.String({ description: "The `tensor_split` option, or `by free memory` (llama.cpp's default)" }),
    local_weights_mib: Nullable(T.Number(), { description: "MiB of the weights left on this machine (the model file's size less what the workers were sent); null while loading" }),
    lost: T.Optional(T.String({ description: "Why a worker's link dropped, once one has" })),
  },
  { title: "RpcSplit", description: "Lemonade extension: for a model loaded with the llamacpp `rpc` option, the workers and the split of its weights" },
);

export const RpcWorker = T.Object(
  {
    address: T.String({ description: "The worker, `host:port` as configured" }),
    state: T.Union([T.Literal("checking"), T.Literal("ready"), T.Literal("unavailable")], { description: "`checking` until its first health check ends" }),
    error: T.Optional(T.String({ description: "Why it is unavailable" })),
    protocol: T.Optional(T.String({ description: "The RPC protocol version its rpc-server answered HELLO with" })),
    devices: T.Array(
      T.Object({
        name: T.String({ description: "Device name, such as `CPU` or `CUDA0`" }),
        description: T.String({ description: "What rpc-server says the device is" }),
        free_bytes: T.Integer({ description: "Free memory, as rpc-server reports it (capped by the worker's `--memory-limit`)" }),
        total_bytes: T.Integer({ description: "Total memory" }),
      }),
    ),
    busy: T.Boolean({ description: "Whether its rpc-server is serving a model now (it serves one client at a time)" }),
    checked_at: T.Optional(T.Integer({ description: "Unix time of the last health check" })),
  },
  { title: "RpcWorker" },
);

export const LoadedModel = T.Object({
  model_name: T.String({ description: "Name of the loaded model" }),
  checkpoint: T.String({ description: "Full checkpoint identifier" }),
  last_use: T.Number({ description: "Unix timestamp of last access (load or inference)" }),
  type: ModelType,
  device: T.String({ description: 'Space-separated device list: `"cpu"`, `"gpu"`, `"npu"`' }),
  pinned: T.Boolean({ description: "Whether the model is pinned against automatic eviction" }),
  is_busy: T.Boolean({ description: "Whether the model has requests in flight, a load or a downsize in progress" }),
  status: T.Union([T.Literal("ready"), T.Literal("in_use"), T.Literal("downsizing"), T.Literal("downsized"), T.Literal("evicting")], {
    description:
      "Where the model is in its life: `ready` (idle, whole), `in_use` (requests in flight), `downsizing` or `downsized` (idle past `downsize_idle_timeout`: its KV cache freed, its weights loaded; the next request restores it), `evicting` (being unloaded)",
  }),
  is_streaming: T.Boolean({ description: "Whether the model is streaming output tokens right now" }),
  queue_depth: T.Integer({ description: "Lemonade extension: requests waiting for one of the engine's slots (beyond `max_queue`, LEMONADE_MAX_QUEUE, 512 by default, a request is refused with 503 `server_busy` and `Retry-After`)" }),
  slots: T.Integer({ description: "Lemonade extension: requests the engine serves at once (llama-server's `--parallel`)" }),
  slots_in_use: T.Integer({ description: "Lemonade extension: of those, the slots serving a request now" }),
  memory_estimate_bytes: T.Optional(T.Integer({ description: "Lemonade extension: the memory the model takes by the estimate memory admission uses (weights, KV cache at its context size, compute buffers), in bytes; absent for a recipe with no estimate" })),
  recipe: T.String({ description: "Recipe used to load the model, e.g. `llamacpp`" }),
  residency_class: T.Union([T.Literal("standard"), T.Literal("routing_helper")], {
    description:
      "The pool the model counts in: `standard` (against `max_loaded_models` per type) or `routing_helper` (loaded for a collection's routing, a pool per helper model); a model moves between them in place as its use changes",
  }),
  slot_pool: T.String({ description: "The residency pool, `<residency_class>/<type>` (e.g. `standard/llm`); `unmetered` for a cloud model, which counts against no limit" }),
  pid: T.Integer({ description: "Process ID of the backend engine serving this model; `0` for a cloud model" }),
  backend_alive: T.Boolean({ description: "Whether the backend answers: always `true`, since a model whose engine is gone is not listed" }),
  backend_health: T.Union([T.Literal("ready"), T.Literal("busy")], { description: "`busy` while a local backend serves a request, else `ready`; a cloud model's is always `ready`" }),
  loaded: T.Boolean({ description: "Always `true`" }),
  watchdog_reset: T.Boolean({ description: "Whether a hang watchdog restarted the engine: always `false`, since a hung engine is stopped and the model loaded again" }),
  recipe_options: T.Record(T.String(), T.Unknown(), { description: "The options the model was loaded with that differ from the recipe's defaults, and its context size" }),
  launch_command: T.Optional(
    T.Array(T.String(), { description: "The engine's command line, one argument per item, the executable first; absent for a cloud model, which runs no engine" }),
  ),
  max_context_window: T.Optional(T.Integer({ description: "Cloud models: the context window the provider reports" })),
  cost_input_per_million: T.Optional(T.Number({ description: "Cloud models: USD per million input tokens, when the provider reports it" })),
  cost_output_per_million: T.Optional(T.Number({ description: "Cloud models: USD per million output tokens, when the provider reports it" })),
  backend: T.Optional(T.String({ description: "Lemonade extension: the backend the engine runs on, `auto` resolved (such as `cpu`)" })),
  backend_url: T.String({ description: "URL of the backend process serving this model" }),
  rpc: T.Optional(RpcSplit),
});

const PoolMember = T.Object(
  {
    url: T.String({ description: "The member's base URL (never a key)" }),
    state: T.Union([T.Literal("up"), T.Literal("down")], { description: "`down` after it failed a request before answering (unreachable, hung, or answering 502, 503 or 504), until a probe finds it answering again" }),
    in_flight: T.Integer({ description: "Requests it is serving now, for any of the provider's models" }),
    last_error: Nullable(T.String(), { description: "Why it last failed; `null` if it never did" }),
    next_retry: Nullable(T.Number(), { description: "Unix timestamp of its next probe while down; `null` while up" }),
  },
  { title: "PoolMemberHealth" },
);

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
    pinned_models: PerModelType("Pinned models of the type loaded now in the standard pool (the ones `max_models` counts)"),
    pinned_helper_models: PerModelType("Pinned routing helpers of the type loaded now"),
    websocket_port: T.Optional(
      T.Integer({
        description:
          "OS-assigned port of the dedicated WebSocket server (log stream, realtime transcription); the main port serves the same protocols",
      }),
    ),
    telemetry: T.Object(
      {
        enabled: T.Boolean({ description: "Whether telemetry collection is active" }),
        captures: T.Optional(
          T.Array(T.Union([T.Literal("inputs"), T.Literal("outputs"), T.Literal("thinking")]), {
            description: "What spans capture besides token counts and timings (`inputs`, `outputs`, `thinking`: those the `telemetry.hide_*` settings do not hide); only while telemetry is enabled",
          }),
        ),
      },
      { title: "TelemetryState" },
    ),
    update_check_done: T.Boolean({
      description: "Whether the start-up check for newer model revisions has finished",
    }),
    auto_tune: T.Optional(TuningStatus),
    pools: T.Optional(
      T.Array(
        T.Object(
          {
            model_name: T.String({ description: "A model the pool serves (`<provider>.<id>`)" }),
            provider: T.String({ description: "The cloud provider whose members the pool is" }),
            members: T.Array(PoolMember, { description: "Each member, shared by all of the provider's models" }),
          },
          { title: "PoolHealth" },
        ),
        {
          description:
            "Lemonade extension: each model served by a pool of servers (a cloud provider installed with `members`), with its members' states; absent when there is none",
        },
      ),
    ),
    saved_kv_cache: T.Array(
      T.Object(
        {
          model_name: T.String({ description: "The model the conversations were saved from, by the id `/v1/models` lists it by" }),
          conversations: T.Integer({ description: "Conversations saved" }),
          bytes: T.Integer({ description: "Bytes their files take on disk" }),
        },
        { title: "SavedKvCache" },
      ),
      {
        description:
          "Lemonade extension: per model, the KV cache of the recent conversations saved when its engine was unloaded, restored when the model loads again and a prompt continues one (config.json `kv_cache_swap`)",
      },
    ),
  }),
  example: {
    response: `{
  "status": "ok",
  "version": "0.1.0",
  "model_loaded": null,
  "all_models_loaded": [],
  "max_models": {"llm": 1, "embedding": 1, "reranking": 1, "transcription": 1, "image": 1, "tts": 1, "audio-generation": 1, "classification": 1, "mesh": 1},
  "pinned_models": {"llm": 0, "embedding": 0, "reranking": 0, "transcription": 0, "image": 0, "tts": 0, "audio-generation": 0, "classification": 0, "mesh": 0},
  "pinned_helper_models": {"llm": 0, "embedding": 0, "reranking": 0, "transcription": 0, "image": 0, "tts": 0, "audio-generation": 0, "classification": 0, "mesh": 0},
  "websocket_port": 41235,
  "telemetry": {"enabled": false},
  "update_check_done": true,
  "saved_kv_cache": [{"model_name": "Qwen3-0.6B-GGUF", "conversations": 2, "bytes": 18874368}]
}`,
  },
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
              base_url: T.String({ description: "Its base URL, as saved in `config.json` (a pool's first member's)" }),
              members: T.Optional(T.Array(T.String(), { description: "A pool's member base URLs; absent for one server" })),
              allow_insecure_http: T.Boolean({ description: "Whether its key may travel to an `http://` base URL" }),
              ...AuthHeaderFields,
              env_var: T.String({ description: "The environment variable its key is read from (the name, never the value)" }),
              env_var_set: T.Boolean({ description: "Whether that variable is set" }),
              runtime_key_set: T.Boolean({ description: "Whether a key was set with `POST /v1/cloud/auth` (or with a pool member at install)" }),
              models_discovered: T.Integer({ description: "Its models in the catalog" }),
              ...CloudWarnings,
            }),
          ),
        },
        { description: "Cloud providers; absent when none is installed" },
      ),
    ),
    unavailable_recipes: T.Array(T.String(), { description: "Recipes every registered model of which is filtered out on this system (they cannot run here)" }),
    no_fetch_executables: T.Boolean({ description: "The `no_fetch_executables` setting: `true` when engines are never downloaded or built, only those installed are used" }),
    archetype: T.Optional(Archetype),
    rpc_workers: T.Optional(
      T.Array(RpcWorker, {
        description: "Lemonade extension: each RPC worker in `llamacpp.rpc_workers` and its last health check (TCP, TLS, the secret, rpc-server's HELLO and device memory); absent when none is configured",
      }),
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
  },
  "unavailable_recipes": ["ryzenai-llm"],
  "no_fetch_executables": false
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
    "Prometheus text exposition of the server's state at the moment of the scrape. Root-level only. When `LEMONADE_API_KEY` is set it requires bearer authentication with either the API key or `LEMONADE_ADMIN_API_KEY`; otherwise it is open. Per-model series name the model (`model_name`, or `model`) by the id `/v1/models` lists it by: the bare name for the model that holds it, `builtin.NAME` or `extra.NAME` for one a registered or imported model shadows.",
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
}, { title: "LogEntry" });

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

/** The message a spans-channel client authenticates with. */
export const SpansAuth = T.Object({
  type: T.Literal("auth", { description: "Authenticate this connection (again)" }),
  token: T.Optional(T.String({ description: "The API key (or admin key); a leading `Bearer ` is ignored" })),
  api_key: T.Optional(T.String({ description: "The key, when `token` is absent or empty" })),
  client_session_id: T.Optional(T.String({ description: "The session whose keyless requests' spans a guest sees (the `X-Client-Session-Id` those requests send)" })),
}, { title: "SpansAuth" });

/** What the server sends on the spans channel: each finished span as an OTLP/JSON span object,
 * `auth.ok`, or an error event. */
export const SpansServerMessage = T.Union([
  T.Object({ type: T.Literal("auth.ok") }, { title: "SpansAuthOk" }),
  T.Object({
    type: T.Literal("error"),
    error: T.Object({ message: T.String(), type: T.Literal("invalid_request_error") }),
  }, { title: "SpansError" }),
  T.Object({
    traceId: T.String({ description: "The span's trace, 32 hex digits" }),
    spanId: T.String({ description: "The span, 16 hex digits" }),
    name: T.String({ description: "What the span measured, e.g. `chat`" }),
    attributes: T.Array(T.Object({ key: T.String(), value: T.Record(T.String(), T.Unknown()) })),
  }, { title: "Span", description: "A finished span (OTLP/JSON; its other fields as the exporter writes them)", additionalProperties: true }),
]);

export const spansStream = endpoint({
  id: "lemonade.spans_stream",
  method: "WS",
  path: "/spans/stream",
  aliasPaths: ["/traces/stream", ...["/v1", "/api/v1", "/v0", "/api/v0"].flatMap((p) => [`${p}/spans/stream`, `${p}/traces/stream`])],
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "telemetry",
  summary: "Stream finished inference spans over WebSocket",
  availability: "fully_available",
  description:
    "Each finished span (the OpenTelemetry span the server exports, as OTLP/JSON) is sent as one message to the connections allowed to see it: a connection made with the admin key (`LEMONADE_ADMIN_API_KEY`, else `LEMONADE_API_KEY`) sees every span; one made with another accepted key sees the spans of requests made with that key; on a server without `LEMONADE_API_KEY`, a connection without a key sees only the spans of keyless requests that sent its own `X-Client-Session-Id` (given as `?client_session_id=` or in the `auth` message). This is the one WebSocket a client may open without a key when `LEMONADE_API_KEY` is set: it then sends `{\"type\": \"auth\", \"token\": KEY, \"client_session_id\": ID}` and is answered `{\"type\": \"auth.ok\"}`, or an `error` event of type `invalid_request_error`. The key is accepted at connection as for the other sockets (`Authorization`, `?api_key=`, a `bearer.<base64url key>` subprotocol); a wrong one is refused. Served on the main port and on the WebSocket port; also at `/traces/stream`.",
  notes: "Spans are sent without the hash of the caller's key that the server records on them.",
  body: SpansAuth,
  response: SpansServerMessage,
  example: {
    body: { type: "auth", token: "<LEMONADE_API_KEY>", client_session_id: "tab-4f2a" },
    response: `{"type": "auth.ok"}`,
  },
});

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

const PARAMS_DESCRIPTION =
  "Changes settings as `POST /internal/set` does (same checks, same answer), on every API prefix and with the regular API key, as Lemonade registers it: `{\"key\": value, ...}`, nested keys written with dots or as objects. Meant for the `telemetry.*` settings (`telemetry.enabled`, `telemetry.otlp.endpoint`, `telemetry.hide_inputs`, ...), which take effect at once.";

export const paramsSet = endpoint({
  id: "lemonade.params_post",
  method: "POST",
  path: "/params",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  rawBody: true,
  summary: "Change settings (telemetry and more)",
  availability: "fully_available",
  description: PARAMS_DESCRIPTION,
  body: T.Record(T.String(), T.Unknown(), { description: "The settings to change." }),
  response: internalSet.response,
  errors: [E.invalidJson, E.missingArgument, E.invalidArgument],
  example: { body: { telemetry: { enabled: true, otlp: { protocol: "http/json" } } }, response: '{"status": "success", "applied": ["telemetry.enabled", "telemetry.otlp.protocol"], "saved": [], "updated": {"telemetry": {"enabled": true, "otlp": {"protocol": "http/json"}}}}' },
});

export const paramsGet = endpoint({
  id: "lemonade.params_get",
  method: "GET",
  path: "/params",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Read the effective configuration",
  availability: "fully_available",
  description:
    "Every `config.json` setting as the server has it, as `GET /internal/config` answers, on every API prefix and with the regular API key, as Lemonade registers it.",
  response: internalConfig.response,
});

export type HealthResponse = Static<typeof health.response>;
export type SystemInfoResponse = Static<typeof systemInfo.response>;
export type RpcSplitView = Static<typeof RpcSplit>;
