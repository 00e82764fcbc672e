// The documented error rows. An endpoint lists the rows it can answer; the docs' Errors table is
// rendered from them, and server code raises errors only by these names (ApiError.of(E.x); a test
// fails on any other), so code and table agree.

export interface ErrorRow {
  status: number;
  /** The `error.code` field; empty where the docs give none. */
  code: string;
  /** The docs' "When" column. */
  when: string;
  /** The error's `type`, where the docs name one; else the status decides it (lib/api-error.ts). */
  type?: string;
}

const row = (status: number, code: string, when: string, type?: string): ErrorRow => (type ? { status, code, when, type } : { status, code, when });

export const E = {
  invalidJson: row(400, "invalid_json", "The body is not a JSON object"),
  payloadTooLarge: row(413, "payload_too_large", "The body is larger than LEMONADE_MAX_BODY_MB"),
  missingArgument: row(400, "missing_argument", "A required argument is missing"),
  invalidArgument: row(
    400,
    "invalid_argument",
    "An argument or a value nested in it has the wrong JSON type, or a value its schema does not list",
  ),
  unauthorized: row(401, "invalid_api_key", "`LEMONADE_API_KEY` is set and the request does not carry it"),
  adminUnauthorized: row(
    401,
    "invalid_api_key",
    "`LEMONADE_ADMIN_API_KEY` is set and the request does not carry it",
  ),
  aliasNotFound: row(404, "alias_not_found", "No alias of that name exists", "invalid_request_error"),
  aliasInvalid: row(400, "invalid_alias", "The alias names itself as its target, or starts with a reserved prefix (`user.`, `extra.`, `builtin.`)", "invalid_request_error"),
  aliasConflict: row(409, "alias_conflict", "The alias is a model's own name, or the target leads back to the alias through other aliases", "invalid_request_error"),
  // The loading errors' `type` is their code, as Lemonade's model errors carry it.
  modelNotFound: row(404, "model_not_found", "The requested model is not in the registry", "model_not_found"),
  modelNotSupported: row(
    404,
    "model_not_supported",
    "The requested model is filtered out on this system, such as a model whose recipe cannot run here",
    "model_not_supported",
  ),
  slotsPinned: row(
    409,
    "slots_pinned_error",
    "Every loaded model of the requested model's type is pinned, so none can be unloaded to make room",
    "slots_pinned_error",
  ),
  routerResidencyConflict: row(
    409,
    "router_residency_conflict",
    "Loading the requested model would evict a model that a `collection.router` model needs resident on the same NPU",
    "router_residency_conflict",
  ),
  modelLoadError: row(
    500,
    "model_load_error",
    "Loading the requested model fails, such as a model that is not downloaded or a backend that does not start",
    "model_load_error",
  ),
  optionsIoError: row(500, "internal_error", "Reading or saving the model's options fails, for example on an unwritable options file"),
  notSupportedOllama: row(501, "", "Lemonade does not support this Ollama operation"),
  internal: row(500, "", "The request fails unexpectedly"),
  backendError: row(500, "", "The backend reports an error; the backend's own status replaces this one when it sends one"),
  unexpected: row(500, "internal_error", "The request fails unexpectedly"),

  // Any route: the HTTP layer's own refusals.
  routeNotFound: row(404, "not_found", "No route has that path"),
  hostNotAllowed: row(403, "host_not_allowed", "A loopback server gets a `Host` not in `LEMONADE_ALLOWED_HOSTS`"),
  originNotAllowed: row(403, "origin_not_allowed", "The `Origin` is not in `LEMONADE_ALLOWED_ORIGINS`"),
  methodNotAllowed: row(405, "method_not_allowed", "The path has no route for the method; `Allow` names those it has"),
  fileNotFound: row(404, "not_found", "No such file"),

  // Waiting for a model or its engine.
  clientClosed: row(499, "client_closed", "The client closes the request before it is answered"),
  shuttingDown: row(503, "server_shutting_down", "The server is shutting down"),
  serverBusy: row(
    503,
    "server_busy",
    "Too many requests wait for the model's engine already; `Retry-After` says when to try again",
    "server_error",
  ),
  insufficientMemory: row(507, "model_load_error", "The model needs more memory than is free, even after unloading every model that can be"),
  noModelLoaded: row(400, "no_model_loaded", "No model is loaded"),
  unloadedWhileWaiting: row(404, "", "The model is unloaded while the request waits for it"),

  // What the model can serve, checked before or after it loads.
  notAnLlm: row(400, "", "`model` is not an LLM"),
  modelNotApplicable: row(400, "model_not_applicable", "`model` is not of the type the route serves, such as a non-LLM on the Responses API"),
  noVision: row(400, "", "The request carries images and `model` reads none: it has no vision projector (`mmproj`)"),
  cannotEmbed: row(400, "", "`model`'s backend cannot embed, such as a text-to-speech model"),
  notEmbeddingModel: row(501, "", "`model` can embed but is not an embedding model"),
  notAnEmbedder: row(400, "", "`model` is not an embedding model"),
  notReranker: row(400, "", "`model` is not a reranking model"),
  recentLacksCapability: row(400, "", "The most recently used model's recipe does not serve the route (slots, tokenize)"),
  omniChatOnly: row(400, "", "`model` is a `collection.omni`, and the route is not chat completions"),
  routerChatOnly: row(400, "", "`model` is a `collection.router`, and the route is not chat, text completions or responses"),
  noResponsesApi: row(400, "", "The request does not stream and `model` is a cloud model, which has no Responses API"),
  cloudWireMismatch: row(400, "", "`model`'s cloud provider speaks the other API (OpenAI or Anthropic) than the route"),
  cannotTranscribe: row(400, "", "`model` cannot transcribe; the error's `type` is `unsupported_operation`", "unsupported_operation"),
  cannotGenerateImages: row(
    500,
    "",
    "The backend reports an error, for example when `model` cannot serve this route, an error whose `type` is `unsupported_operation`",
    "unsupported_operation",
  ),
  upscalerCannotGenerate: row(400, "", "`model` is an upscaling model, which cannot generate or edit images"),
  undecodableImage: row(400, "invalid_argument", "An uploaded image (or mask) does not decode as a PNG, JPEG or WebP"),
  notMultipart: row(400, "", "The request is not `multipart/form-data`"),
  unreadableMultipart: row(400, "", "The multipart body cannot be read"),
  imageFieldsBoth: row(400, "", "The form has files under both `image` and `image[]`"),
  notUpscaler: row(400, "", "`model` has no `upscaling` label"),
  cannotUpscale: row(400, "", "`model`'s recipe cannot upscale"),
  upscalerNotFound: row(404, "", "`model` names no model in the registry, or downloading it fails", "invalid_request_error"),
  upscaleFailed: row(500, "", "The backend produces no upscaled image"),
  noAudio: row(502, "", "The engine produces no audio"),
  cannotGenerateMeshes: row(400, "", "`model` is not a 3D-generation model (a `trellis` model)", "invalid_request_error"),
  cannotGenerateAudio: row(400, "", "`model` is not an audio-generation model (an `acestep` or `thinksound` model)", "invalid_request_error"),
  unsupportedMediaFormat: row(400, "", "`response_format` is not a format the backend produces natively", "invalid_request_error"),
  invalidInputImage: row(400, "", "`image` is not base64 (or a base64 `data:` URL), or not a PNG, JPEG, BMP or GIF", "invalid_request_error"),
  generationFailed: row(500, "", "The backend reports an error while generating", "backend_error"),
  noGeneratedOutput: row(502, "", "The backend produces no output (it likely crashed or ran out of GPU memory)", "backend_error"),

  // The engine's answer: llama-server's and whisper-server's error types keep their names as the
  // code, and the engine's own status replaces the row's.
  contextLengthExceeded: row(400, "context_length_exceeded", "The request does not fit in the model's context", "invalid_request_error"),
  engineInvalidRequest: row(400, "invalid_request_error", "The backend refuses the request", "invalid_request_error"),
  engineAuthentication: row(401, "authentication_error", "The backend refuses the request's credentials", "invalid_request_error"),
  enginePermission: row(403, "permission_error", "The backend refuses the request as not permitted", "invalid_request_error"),
  engineNotFound: row(404, "not_found_error", "The backend has no such resource", "invalid_request_error"),
  engineServer: row(500, "server_error", "The backend fails while serving the request", "backend_error"),
  engineNotSupported: row(501, "not_supported_error", "The backend does not support the request", "backend_error"),
  engineUnavailable: row(503, "unavailable_error", "The backend is not ready, such as while it loads the model", "backend_error"),
  engineRefused: row(400, "invalid_request", "The backend refuses the request with an error of no known type", "invalid_request_error"),
  engineFailed: row(500, "backend_error", "The backend fails with an error of no known type", "backend_error"),
  backendUnavailable: row(
    503,
    "backend_unavailable",
    "The engine cannot be reached, even after the model is loaded again; sending the request again may succeed",
    "backend_error",
  ),
  poolUnavailable: row(
    503,
    "pool_unavailable",
    "`model` is served by a pool of servers and every member is down (or failed this request); the message names each member and its last error, `Retry-After` when the next is asked again",
    "backend_error",
  ),
  rpcWorkerUnavailable: row(
    503,
    "rpc_worker_unavailable",
    "A worker the model is split across (llamacpp `rpc`) does not answer, refuses the secret, runs another RPC protocol version or serves another model, and the workers that answer cannot hold the model; the message names the worker",
    "backend_error",
  ),
  backendStopped: row(
    502,
    "backend_error",
    "The backend stops answering before it responds, such as an engine that crashed",
    "backend_error",
  ),
  backendTimeout: row(504, "timeout", "The backend does not answer within `global_timeout`", "backend_error"),

  // Ollama's routes answer a string, so their rows carry no code (ollama.md).
  ollamaLoadFailed: row(404, "", "`model` fails to load for any reason other than a residency conflict, such as naming no model or a failed download"),
  ollamaBackendError: row(500, "", "The backend reports an error, whatever its own status"),
  ollamaContextOverflow: row(400, "", "The request does not fit in the model's context"),
  ollamaModelNotFound: row(404, "", "`model` names no model in the registry, or one filtered out on this system"),
  ollamaPullFailed: row(500, "", "A non-streaming download fails"),
  ollamaDeleteFailed: row(500, "", "Deleting fails, for example for an `extra.` model"),

  // Anthropic's Messages route answers any failed load as the model not found, as Lemonade's does.
  messagesLoadFailed: row(
    404,
    "",
    "`model` fails to load for any reason other than a residency conflict, such as naming no model, one filtered out here or a failed download",
    "not_found_error",
  ),

  // Lemonade's lifecycle, downloads and backends.
  modelNotLoaded: row(404, "model_not_loaded", "`model_name` names a model that is not loaded"),
  pinNotLoaded: row(400, "", "`model_name` names a model that is not loaded (Lemonade answers a pin of one as a bad request)", "invalid_request_error"),
  downloadNotFound: row(404, "download_not_found", "`pause` or `cancel` names no job"),

  // The job engine (/v1/jobs).
  invalidJob: row(400, "invalid_job", "The step graph is invalid: no steps, a duplicate or reserved step id, an unknown op, a jump to no later step, or a condition that does not parse"),
  jobLimit: row(429, "job_limit", "The job store holds its limit of jobs and none has finished, so none can be evicted; delete one first"),
  jobNotFound: row(404, "job_not_found", "No job has that id (or it was deleted)"),
  jobNotActive: row(404, "job_not_active", "The job is neither running nor queued, so there is nothing to pause or interrupt"),
  jobNotResumable: row(404, "job_not_resumable", "The job is neither paused nor interrupted, so there is nothing to resume"),
  unknownModel: row(
    400,
    "unknown_model",
    "`model_name` names no model in the registry and defines none (no `checkpoint`, `checkpoints` or `recipe`), and without the `user.` prefix it could not register one",
  ),
  deleteUnknownModel: row(422, "model_not_found", "`model_name` names no model in the registry"),
  deleteExtraModel: row(500, "delete_failed", "The model is an `extra.` model, whose file belongs to its folder"),
  offline: row(400, "lemond_offline", "`offline` is set to `true`"),
  offlineUpdateCheck: row(409, "lemond_offline", "`offline` is set to `true`: no network request is made"),
  hubNotFound: row(404, "download_failed", "The hub has no such repository or file"),
  downloadFailed: row(500, "download_failed", "The download fails, or a file's size or sha256 does not match the hub's; nothing partial counts as downloaded"),
  hubRateLimited: row(429, "download_failed", "The hub refuses more requests for now"),
  hubFailed: row(502, "download_failed", "The hub cannot be reached or answers an error"),
  insufficientStorage: row(507, "insufficient_storage", "The disk has too little free space for the download"),
  unsupportedBackend: row(400, "unsupported_backend", "The recipe/backend pair cannot be installed on this system"),
  installFailed: row(500, "install_failed", "The build fails; the message carries the end of the build's output"),
  installCancelled: row(409, "install_cancelled", "The install was cancelled (`POST /v1/installs/cancel`) before it ended; nothing of it is kept"),
  installNotRunning: row(404, "install_not_running", "No install of that recipe/backend pair is under way"),
  dryRunFailed: row(500, "", "The recipe/backend pair has no release to fetch on this platform (or for that GPU)"),
  providerNotFound: row(404, "provider_not_found", "The provider is not installed: `POST /v1/install` with `backend: \"cloud\"` first", "invalid_request_error"),
  insecureHttp: row(
    400,
    "insecure_http_requires_opt_in",
    "The provider's `base_url` is `http://` and a key would travel over it, without `allow_insecure_http: true`",
    "invalid_request_error",
  ),
  cloudNoKey: row(500, "", "The model's cloud provider has no key (none in the environment, none set with `/v1/cloud/auth`)", "backend_error"),
  authConflict: row(
    409,
    "auth_conflict",
    "`LEMONADE_<PROVIDER>_API_KEY` is set in the server's environment; `error.env_var` names it and the key was not stored",
    "auth_conflict",
  ),
} as const;

/** What any route that loads the model it names can answer. */
export const LOADING_ERRORS: ErrorRow[] = [
  E.modelNotSupported,
  E.modelNotFound,
  E.slotsPinned,
  E.backendError,
  E.modelLoadError,
  E.clientClosed,
  E.shuttingDown,
  E.insufficientMemory,
  E.rpcWorkerUnavailable,
];

/** What a request the proxy forwards to an engine can answer beside the loading errors. */
export const ENGINE_ERRORS: ErrorRow[] = [
  E.contextLengthExceeded,
  E.backendStopped,
  E.serverBusy,
  E.backendUnavailable,
  E.poolUnavailable,
  E.backendTimeout,
];

/** The backend's own errors: what `backendError` stands for in a route's table, each with the
 * backend's status. */
export const BACKEND_ERRORS: ErrorRow[] = [
  E.engineInvalidRequest,
  E.engineRefused,
  E.engineAuthentication,
  E.enginePermission,
  E.engineNotFound,
  E.engineServer,
  E.engineFailed,
  E.engineNotSupported,
  E.engineUnavailable,
];

/** What any route can answer, before or outside its handler. */
export const ANY_ROUTE_ERRORS: ErrorRow[] = [
  E.unauthorized,
  E.adminUnauthorized,
  E.hostNotAllowed,
  E.originNotAllowed,
  E.routeNotFound,
  E.methodNotAllowed,
  E.payloadTooLarge,
  E.unexpected,
];

export type ErrorName = keyof typeof E;

/** The errors that name a model Lemonade could not find, run or load: their `type` is their code,
 * and `param` is `model` (the LemonadeModelError schema's description lists them from here). */
export const MODEL_ERROR_CODES: readonly string[] = [E.modelNotFound, E.modelNotSupported, E.slotsPinned, E.modelLoadError, E.routerResidencyConflict].map((row) => row.code);
