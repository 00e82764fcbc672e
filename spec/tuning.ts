// Auto-tune (auto-tune.md): the hardware archetype, the tuning-profile document (archetype ->
// per-backend performance parameters, with per-model overlays, each profile naming where its
// numbers came from), and the routes that show the profiles in use and save a model's locally
// tuned overlay. Quality parameters (temperature, top_p, templates) are out of scope here.
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E } from "./errors.ts";

export const Archetype = T.Object(
  {
    id: T.String({ description: "The exact class, e.g. `nvidia-ada-24gb`, `strix-halo-128gb`, `cpu-avx512-2c-8gb`" }),
    family: T.String({ description: "The class without its size (`nvidia-ada`, `strix-halo`, `cpu-avx2`); a profile may name it to cover every size" }),
    accelerator: T.Union(["cpu", "nvidia", "amd", "apple"].map((v) => T.Literal(v)), { description: "What runs the model: `cpu` when no GPU is used" }),
    memory: T.Union(["discrete", "unified", "system"].map((v) => T.Literal(v)), { description: "`discrete` VRAM, `unified` memory shared by CPU and GPU, or `system` RAM (CPU only)" }),
    memory_gb: T.Number({ description: "The memory models load into, bucketed to the size machines ship with (GB)" }),
    bandwidth_tier: T.Union(["low", "mid", "high", "unknown"].map((v) => T.Literal(v)), { description: "Memory bandwidth tier: under 150 GB/s, under 500 GB/s, above; `unknown` when the chip's figure is not known" }),
    bandwidth_gbps: T.Optional(T.Number({ description: "The chip's published peak memory bandwidth, when known" })),
    isa: T.Union(["avx512", "avx2", "neon", "baseline"].map((v) => T.Literal(v)), { description: "The CPU's widest vector ISA" }),
    cores: T.Integer({ description: "Physical CPU cores" }),
    gpu: T.Optional(T.String({ description: "The GPU the archetype is named after" })),
  },
  { title: "Archetype", description: "The machine's hardware archetype, derived from `/v1/system-info`; the same on every start of the same machine" },
);

const KV_TYPES = ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"];

/** The performance parameters a profile recommends; every field is optional (unset: the next layer's). */
export const TuningParams = T.Object(
  {
    threads: T.Optional(T.Union([T.Integer({ minimum: 1 }), T.Literal("physical-cores")], { description: "CPU threads for generation; `physical-cores` is the machine's physical core count" })),
    batch_size: T.Optional(T.Integer({ minimum: 1, description: "Logical batch size (llama.cpp `-b`)" })),
    ubatch_size: T.Optional(T.Integer({ minimum: 1, description: "Physical micro-batch size (llama.cpp `-ub`)" })),
    gpu_layers: T.Optional(T.Union([T.Integer({ minimum: 0 }), T.Literal("all"), T.Literal("auto")], { description: "Layers offloaded to the GPU (llama.cpp `-ngl`)" })),
    flash_attn: T.Optional(T.Union(["on", "off", "auto"].map((v) => T.Literal(v)), { description: "Flash attention (llama.cpp `-fa`)" })),
    kv_cache_type: T.Optional(T.Union(KV_TYPES.map((v) => T.Literal(v)), { description: "KV cache type for keys and values (llama.cpp `-ctk`/`-ctv`)" })),
    ctx_size: T.Optional(T.Integer({ minimum: 1, description: "Context size, where the archetype's memory calls for a fixed one" })),
  },
  {
    title: "TuningParams",
    additionalProperties: false,
    description: "Auto-tune performance parameters. In a `/v1/load` body (what `lemonade tune` tries) they come before the saved and profile ones, while flags in the model's own `*_args` still win",
  },
);

/** Parameters keyed by `recipe:backend` (`llamacpp:vulkan`) or by recipe alone (any of its backends). */
const ByBackend = T.Record(T.String({ pattern: "^[a-z0-9-]+(:[a-z0-9-]+)?$" }), TuningParams, {
  description: "Parameters by `recipe:backend` (such as `llamacpp:vulkan`) or by recipe alone (`llamacpp`, any backend); the exact backend wins",
});

export const ArchetypeProfile = T.Object(
  {
    archetype: T.String({ minLength: 1, description: "The archetype `id` or `family` the profile is for; an exact id wins over a family" }),
    source: T.String({ minLength: 1, description: "Where the numbers came from (a document, a benchmark contribution); a profile without one is refused" }),
    recommended_backend: T.Optional(T.Record(T.String(), T.String(), { description: "Recipe -> the backend to use when a load asks for `auto`" })),
    backends: ByBackend,
    models: T.Optional(T.Record(T.String(), ByBackend, { description: "Per-model overlays: model name -> parameters by backend, over the archetype's" })),
  },
  { title: "ArchetypeProfile", additionalProperties: false },
);

export const ProfileDocument = T.Object(
  {
    schema_version: T.Literal(1, { description: "The document format; this server reads version 1" }),
    version: T.String({ minLength: 1, description: "The document's own version; a fetched one replaces the cache only when it differs" }),
    profiles: T.Array(ArchetypeProfile),
  },
  { title: "ProfileDocument", additionalProperties: false },
);

/** Where an effective value came from, highest priority first. */
export const LAYERS = ["request", "saved", "registry", "config", "local_tune", "profile_model", "profile", "default"] as const;
export type Layer = (typeof LAYERS)[number];
export const LayerName = T.Union(LAYERS.map((l) => T.Literal(l)), {
  description:
    "The layer a value came from: `request` (the load), `saved` (`recipe_options.json`), `registry` (the model's catalog row), `config` (config.json), `local_tune` (`lemonade tune` on this machine), `profile_model` (the archetype profile's overlay for this model), `profile` (the archetype's backend defaults), `default` (the recipe's)",
});

export const TuningView = T.Object(
  {
    enabled: T.Boolean({ description: "Whether auto-tune applies (`auto_tune` in config.json, `LEMONADE_AUTO_TUNE`; on by default)" }),
    archetype: T.String({ description: "This machine's archetype id" }),
    backend: T.String({ description: "The backend the parameters are for (`auto` resolved)" }),
    profile_source: T.Optional(T.String({ description: "The `source` of the archetype profile in use, when one matches" })),
    params: T.Record(T.String(), T.Object({ value: T.Union([T.String(), T.Number()]), source: LayerName }), {
      description: "Each performance parameter that is set, with the layer it came from; one set in the request's or saved `llamacpp_args` counts as that layer's",
    }),
    args: T.String({ description: "The engine flags auto-tune adds before the model's own `*_args` (empty when none)" }),
    expected_tokens_per_second: T.Optional(T.Number({ description: "Generation speed `lemonade tune` measured for the saved overlay" })),
  },
  { title: "Tuning" },
);

export const TuningStatus = T.Object(
  {
    enabled: T.Boolean({ description: "Whether auto-tune applies" }),
    archetype: Archetype,
    profiles: T.Object({
      version: T.String({ description: "Version of the profile document in use" }),
      source: T.Union(["bundled", "cache"].map((v) => T.Literal(v)), { description: "`bundled` with the server, or `cache` (fetched from `auto_tune_profiles_url`)" }),
      age_s: T.Optional(T.Number({ description: "Seconds since the cached document was fetched" })),
    }),
    retune_suggested: T.Array(
      T.Object({
        model_name: T.String({ description: "A loaded model running well below its expectation, by the id `/v1/models` lists it by" }),
        expected_tokens_per_second: T.Number({ description: "What its tuned overlay measured" }),
        observed_tokens_per_second: T.Number({ description: "The median of its recent requests" }),
        hint: T.String({ description: "What to run" }),
      }),
      { description: "Runtime monitor: loaded models whose recent generation speed is under half their tuned expectation" },
    ),
  },
  { title: "AutoTuneStatus", description: "Lemonade extension: the machine's archetype, the tuning profiles in use and the runtime monitor's re-tune suggestions" },
);

export const profilesGet = endpoint({
  id: "lemonade.profiles",
  method: "GET",
  path: "/tuning/profiles",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "The tuning profiles in use",
  availability: "fully_available",
  description:
    "Lemonade extension. The machine's archetype, the auto-tune state and the profile document in use: the bundled one, or the one fetched from `auto_tune_profiles_url` (cached with its version and age; not fetched when `offline` is on or the URL is unset).",
  response: T.Object({
    status: TuningStatus,
    document: ProfileDocument,
    profile: T.Optional(ArchetypeProfile),
  }),
  example: {
    response: `{
  "status": {"enabled": true, "archetype": {"id": "cpu-avx2-8c-32gb", "family": "cpu-avx2", "accelerator": "cpu", "memory": "system", "memory_gb": 32, "bandwidth_tier": "unknown", "isa": "avx2", "cores": 8}, "profiles": {"version": "2026.12.1", "source": "bundled"}, "retune_suggested": []},
  "document": {"schema_version": 1, "version": "2026.12.1", "profiles": [{"archetype": "cpu-avx2", "source": "llama.cpp tools/completion/README.md: threads = physical cores", "backends": {"llamacpp": {"threads": "physical-cores"}}}]},
  "profile": {"archetype": "cpu-avx2", "source": "llama.cpp tools/completion/README.md: threads = physical cores", "backends": {"llamacpp": {"threads": "physical-cores"}}}
}`,
  },
});

const ModelId = T.String({ description: "Model name" });

const ModelTuning = T.Object({ model_name: T.String({ description: "The model, by the id `/v1/models` lists it by" }), tuning: TuningView }, { title: "ModelTuning" });

export const tuningPost = endpoint({
  id: "lemonade.models_id_tuning_post",
  method: "POST",
  path: "/models/:id/tuning",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Save a model's locally tuned overlay",
  availability: "fully_available",
  description:
    "Lemonade extension, what `lemonade tune` saves: the best parameters measured on this machine for a model and backend. The overlay sits below the model's saved options (which always win) and above the archetype profile's, and applies from the next load.",
  params: T.Object({ id: ModelId }),
  body: T.Object({
    backend: T.String({ minLength: 1, description: "The backend the parameters were measured on (`auto` resolved, such as `cpu`)" }),
    params: TuningParams,
    tokens_per_second: T.Optional(T.Number({ minimum: 0, description: "The generation speed measured with them: the runtime monitor's expectation" })),
  }),
  response: ModelTuning,
  errors: [E.modelNotSupported, E.modelNotFound, E.optionsIoError],
  example: {
    path: "/v1/models/Qwen3-0.6B-GGUF/tuning",
    body: { backend: "cpu", params: { threads: 2, batch_size: 512, ubatch_size: 256 }, tokens_per_second: 41.5 },
    response: `{"model_name": "Qwen3-0.6B-GGUF", "tuning": {"enabled": true, "archetype": "cpu-avx2-2c-8gb", "backend": "cpu", "params": {"threads": {"value": 2, "source": "local_tune"}, "batch_size": {"value": 512, "source": "local_tune"}, "ubatch_size": {"value": 256, "source": "local_tune"}}, "args": "-t 2 -b 512 -ub 256", "expected_tokens_per_second": 41.5}}`,
  },
});

export const tuningDelete = endpoint({
  id: "lemonade.models_id_tuning_delete",
  method: "DELETE",
  path: "/models/:id/tuning",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "lemonade",
  access: "api",
  summary: "Remove a model's locally tuned overlay",
  availability: "fully_available",
  description: "Lemonade extension. Erases what `lemonade tune` saved for the model; the archetype profile applies again from the next load.",
  params: T.Object({ id: ModelId }),
  response: ModelTuning,
  errors: [E.modelNotSupported, E.modelNotFound, E.optionsIoError],
  example: {
    path: "/v1/models/Qwen3-0.6B-GGUF/tuning",
    response: `{"model_name": "Qwen3-0.6B-GGUF", "tuning": {"enabled": true, "archetype": "cpu-avx2-2c-8gb", "backend": "cpu", "params": {}, "args": ""}}`,
  },
});

export type TuningParamsT = Static<typeof TuningParams>;
export type ArchetypeT = Static<typeof Archetype>;
export type ProfileDocumentT = Static<typeof ProfileDocument>;
export type ArchetypeProfileT = Static<typeof ArchetypeProfile>;
export type TuningViewT = Static<typeof TuningView>;
export type TuningStatusT = Static<typeof TuningStatus>;
export type TuningSaveRequest = Static<typeof tuningPost.body>;
