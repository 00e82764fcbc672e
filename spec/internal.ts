// The admin-only /internal routes (lemonade.md): model aliases, the effective configuration, live
// settings, pinning and shutdown.
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E } from "./errors.ts";

const Alias = T.Object({
  alias: T.String({ description: "The alias name" }),
  target: T.String({ description: "The model the alias resolves to" }),
  downloaded: T.Boolean({ description: "Whether the target model is downloaded" }),
  recipe: T.String({ description: "The target's recipe; `llamacpp` when the target is not in the catalog (yet), as Lemonade reports it" }),
});

export const aliasesList = endpoint({
  id: "lemonade.aliases_get",
  method: "GET",
  path: "/internal/aliases",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade_model",
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
  errorStyle: "lemonade_model",
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
  errors: [E.aliasInvalid, E.aliasConflict],
});

export const aliasesDelete = endpoint({
  id: "lemonade.aliases_delete",
  method: "DELETE",
  path: "/internal/aliases/:alias",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade_model",
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

const SettingSchema = T.Object(
  {
    type: T.String({ description: "The JSON type a value must have, its default's: `string`, `number`, `boolean`, `array` or `object`" }),
    default: T.Unknown({ description: "Lemonade's default" }),
    description: T.Optional(T.String({ description: "What the setting does on this server; absent for keys kept but without effect here" })),
    enum: T.Optional(T.Array(T.String(), { description: "The only values it takes" })),
    minimum: T.Optional(T.Number({ description: "The smallest value it takes" })),
    maximum: T.Optional(T.Number({ description: "The largest value it takes" })),
    special: T.Optional(T.Number({ description: "One value it takes outside `minimum`..`maximum`, such as `-1` (automatic or unlimited)" })),
    integer: T.Optional(T.Boolean({ description: "`true`: whole numbers only" })),
  },
  { title: "SettingSchema" },
);

export const internalConfigSchema = endpoint({
  id: "lemonade.internal_config_schema",
  method: "GET",
  path: "/internal/config/schema",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "admin",
  summary: "Describe every setting",
  availability: "fully_available",
  description:
    "Every `config.json` setting, nested ones as `section.key`, with the type `POST /internal/set` checks, its default, and for those with an effect here what it does and the values it takes (a range, an allowed value outside it, or a list). The web app's Settings panel is built from it.",
  response: T.Record(T.String(), SettingSchema),
  example: {
    response:
      '{"ctx_size": {"type": "number", "default": -1, "description": "The default context size of a load; -1 sizes it automatically from the model and memory.", "minimum": 1, "maximum": 2147483647, "special": -1, "integer": true}, "log_level": {"type": "string", "default": "info", "description": "How much the server logs.", "enum": ["trace", "debug", "info", "warning", "error", "critical", "fatal", "none"]}}',
  },
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
    "Sets one or more settings, `{\"key\": value, ...}`, nested keys written with dots (`llamacpp.backend`) or as objects; a backend key may also be written flat, as backend flags spell it (`llamacpp_args`, `vllm_args`), and `no_broadcast` is `broadcast` negated (two spellings of one key with different values are refused). `auto_evict` (`false` by default; the answer for models whose own is unset) and `auto_evict_threshold_pct` (`0.90`) are settings too. Each is checked against its default's type first (nothing is saved when one is refused), then saved in `config.json` atomically and applied at once where the server can: `max_loaded_models`, `log_level`, `ctx_size`, `offline`, `auto_evict`, `auto_evict_threshold_pct`, `extra_models_dir` (rescanned), `host` and `port` (the server listens anew), every `telemetry.*` setting (the next span and the next export batch use it). The answer lists which took effect now and which are saved for the next start.",
  body: T.Record(T.String(), T.Unknown(), { description: "The settings to change." }),
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"`' }),
    updated: T.Record(T.String(), T.Unknown(), { description: "The settings changed and their new values, nested as `config.json` holds them (`{\"llamacpp\": {\"args\": ...}}`)" }),
    applied: T.Array(T.String(), { description: "Settings in effect now" }),
    saved: T.Array(T.String(), { description: "Settings saved, which take effect at the next start" }),
  }),
  errors: [{ status: 400, code: "invalid_argument", when: "A key is not a Lemonade setting, or its value has the wrong type or is out of range" }],
  example: { body: { max_loaded_models: 2, "llamacpp.backend": "cpu" }, response: '{"status": "success", "updated": {"max_loaded_models": 2, "llamacpp": {"backend": "cpu"}}, "applied": ["max_loaded_models"], "saved": ["llamacpp.backend"]}' },
});

export const internalPin = endpoint({
  id: "lemonade.internal_pin",
  method: "POST",
  path: "/internal/pin",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade_model",
  access: "admin",
  summary: "Pin or unpin a loaded model",
  availability: "fully_available",
  description: "Pins a loaded model so eviction never picks it, or unpins it. Idempotent.",
  // Read by the handler, which refuses a missing field in Lemonade's words.
  rawBody: true,
  body: T.Object({
    model_name: T.Optional(T.String({ description: "A loaded model (`model_name` or `model` is required)." })),
    model: T.Optional(T.String({ description: "Accepted in place of `model_name`, and read first when both are sent." })),
    pinned: T.Boolean({ description: "`true` pins, `false` unpins." }),
  }),
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"`' }),
    model_name: T.String({ description: "The model, as the request named it" }),
    pinned: T.Boolean({ description: "Its pinned state now" }),
  }),
  errors: [E.invalidJson, E.missingArgument, E.invalidArgument, E.pinNotLoaded],
});

export const simulateVramPressure = endpoint({
  id: "lemonade.internal_simulate_vram_pressure",
  method: "POST",
  path: "/internal/simulate-vram-pressure",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "admin",
  summary: "Run one GPU-memory pressure check with a given usage",
  availability: "fully_available",
  description:
    "A test and admin hook of dynamic VRAM management (multi-model guide): runs one pressure check at once as if `pct` of GPU memory were in use, so that with `auto_evict` on and `pct` at or past `auto_evict_threshold_pct` the most disposable idle `auto_evict` model is unloaded. A negative `pct` runs the idle check alone (downsize and evict by idle time). With `auto_evict` off it does nothing.",
  body: T.Object({ pct: T.Optional(T.Number({ description: "GPU memory in use, 0 to 1; negative: the idle check alone. Default `0`." })) }),
  response: T.Object({ status: T.Literal("ok", { description: 'Always `"ok"`' }) }, { title: "SimulateVramPressureResponse" }),
  example: { body: { pct: 0.95 }, response: '{"status": "ok"}' },
});

export const telemetryFlush = endpoint({
  id: "lemonade.telemetry_flush",
  method: "POST",
  path: "/internal/telemetry/flush",
  mount: "root",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "admin",
  summary: "Force-flush queued telemetry spans",
  availability: "fully_available",
  description:
    "Sends every trace span queued in memory to the configured OTLP collector now, instead of at the next batch (`telemetry.otlp.send_batch_size` spans or `telemetry.otlp.batch_timeout_s`), and answers once they are sent. A batch waiting to be retried is tried once more, then dropped if it fails. With nothing queued, or telemetry never enabled, it answers at once.",
  response: T.Object({ status: T.Literal("flushed", { description: 'Always `"flushed"`' }) }, { title: "TelemetryFlushResponse" }),
  example: { response: '{"status": "flushed"}' },
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
  description: "Unloads every model (their engines stopped) before it answers, then stops the server, as SIGTERM does.",
  response: T.Object({ status: T.Literal("shutting down", { description: 'Always `"shutting down"`' }) }),
  example: { response: '{"status": "shutting down"}' },
});

export type AliasesListResponse = Static<typeof aliasesList.response>;
export type AliasSetRequest = Static<typeof aliasesSet.body>;
export type AliasSetResponse = Static<typeof aliasesSet.response>;
export type AliasDeleteResponse = Static<typeof aliasesDelete.response>;
export type SettingsRequest = Static<typeof internalSet.body>;
export type SettingsResponse = Static<typeof internalSet.response>;
export type PinResponse = Static<typeof internalPin.response>;
export type ShutdownResponse = Static<typeof internalShutdown.response>;
export type TelemetryFlushResponse = Static<typeof telemetryFlush.response>;
