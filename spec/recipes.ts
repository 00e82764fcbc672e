// The recipes (engine families) of the contract: which model types each serves, what it can do
// and at which engine path, the deployment label a model gets when it names none, and the recipe
// options `/v1/load` and `/v1/models/{id}/options` accept for it, with their config.json section,
// CLI flag and docs. The engines implement these recipes (engines/); the catalog, the protocols,
// config, the CLI, metrics and memory admission read these facts. This module imports nothing of ours.

/** `audio-generation`: text to an audio clip (music, sound effects); `mesh`: an image to a 3D mesh. */
export type ModelType = "llm" | "embedding" | "reranking" | "transcription" | "image" | "tts" | "audio-generation" | "classification" | "mesh";

/** Every model type, in the order `/v1/health` lists per-type figures. */
export const MODEL_TYPES: ModelType[] = ["llm", "embedding", "reranking", "transcription", "image", "tts", "audio-generation", "classification", "mesh"];

export type OptionValue = string | number | boolean | null;
export type Options = Record<string, OptionValue>;

export interface OptionSpec {
  kind: "int" | "number" | "string" | "bool";
  default: OptionValue;
  /** `ctx_size`: a positive integer or -1 (automatic). */
  ctx?: boolean;
  /** What the option does, for the load body's docs. */
  doc?: string;
}

/** What a recipe can be asked to do. */
export type Capability =
  | "chat"
  | "completions"
  | "embeddings"
  | "rerank"
  | "tokenize"
  | "slots"
  | "transcribe"
  | "speech"
  | "image.generate"
  | "image.edit"
  | "upscale"
  | "classify"
  | "audio.generate"
  | "mesh.generate";

/** `server`: an engine process per model, reached over HTTP; `in-process`: runs in the server per
 * request (espeak-ng speech); `one-shot`: one command per request (sd-cli upscaling). */
export type RecipeKind = "server" | "in-process" | "one-shot";

/** How a recipe's models' memory is estimated before a load is admitted: `gguf` reads the
 * weights and KV-cache shape from the GGUF header (models/memory-fit.ts). */
export type MemoryEstimate = "gguf";

export interface RecipeSpec {
  /** Absent means `server`. */
  kind?: RecipeKind;
  /** The model types this recipe's engine serves. */
  serves: ModelType[];
  /** Each capability the recipe serves, at its path on its engine (`true` for an in-process or
   * one-shot recipe, which has no engine to reach, and for a capability the recipe's engine serves
   * through a conversation of its own, several routes long: engines/engine.ts `generate`). */
  capabilities: Partial<Record<Capability, string | true>>;
  /** Recipes of another kind that serve a capability for this recipe's models: always when the
   * recipe's engine lacks it (sd-cli upscales for sd-cpp), else until that engine is installed and
   * the model's files are there (espeak-ng speaks for kokoro). */
  standIns?: Partial<Record<Capability, string>>;
  /** The deployment label of a model that names none. */
  defaultLabel: string;
  /** Labels every model of the recipe carries, whatever its own say. */
  defaultCapabilities?: string[];
  /** The recipe options a load accepts, with their built-in defaults. */
  options: Record<string, OptionSpec>;
  /** The option that picks the backend; the CLI spells it `--<cliFlag> BACKEND`. */
  backendOption?: string;
  cliFlag?: string;
  /** The `lemonade load --help` heading the recipe's flags stand under, as Lemonade's backends
   * name theirs (recipes that share one share its heading). */
  cliGroup?: string;
  /** The config.json section (`<section>.backend`, `.args`, `.<backend>_bin`), and which of its
   * keys are recipe options server-wide (key -> option). */
  config?: { section: string; options: Record<string, string> };
  /** Where the engine exposes Prometheus metrics and the prefix of its metric names; `/metrics`
   * renames `<prefix>:x` to `lemonade_<prefix>_x`. */
  metrics?: { path: string; prefix: string };
  memory?: MemoryEstimate;
  /** The engine's OpenAI speech route: the `model` it expects in the body and the engine name the
   * X-Lemonade-Speech-Engine header gives it. */
  speech?: { model: string; engine: string };
  /** The recipe serves its models before their files are downloaded (kokoro: espeak-ng speaks
   * until Kokoros and the model's files are there), so they count as downloaded. */
  servesWithoutFiles?: boolean;
  /** How the engine takes each auto-tune performance parameter (spec/tuning.ts): per parameter,
   * the flags it sets, each with its aliases (the first is the one the server writes). A flag the
   * model's own `*_args` already hold is the user's, and auto-tune leaves it alone. */
  tuning?: { args: string; flags: Record<string, string[][]> };
  /** Lemonade lists the recipe's models wherever it runs (its engine is one it downloads for
   * every platform), so they are listed here too even when the engine cannot be had on this
   * machine; loading one then fails saying why. */
  listedEverywhere?: boolean;
  /** The model's kind is its upstream's to judge: a provider's plain listing names no type or
   * modality, so whether a model embeds, reranks or takes images is left to the provider, which
   * answers its own error for a request the model cannot serve. */
  upstreamJudgesModels?: boolean;
  /** The checkpoint names a whole repository, and this file inside it stands for the model. */
  repositoryIndex?: string;
  /** Files that must be beside the index for the model to count as downloaded (an interrupted
   * download that left the index alone is fetched again). */
  repositoryFiles?: string[];
}

/** llama.cpp's recipe name, for what is named after it: its doc page (llamacpp.md) and the examples. */
export const LLAMACPP = "llamacpp";

/** The recipe a bare GGUF checkpoint loads with: a GGUF in the extra models folder, a pull
 * registration or a CLI `pull` naming no recipe. */
export const GGUF_RECIPE = LLAMACPP;

/** Every recipe's residency options (lemonade.md, the multi-model guide's dynamic VRAM
 * management): idle downsize and eviction are off unless `auto_evict` is on; `evict_weight_factor`
 * weighs a model's load time in the eviction score. */
const COMMON: Record<string, OptionSpec> = {
  auto_evict: {
    kind: "bool",
    default: null,
    doc: "`true` downsizes the model after `downsize_idle_timeout` seconds idle and unloads it after `evict_idle_timeout`, and lets GPU memory pressure evict it; unset takes the server's `auto_evict` setting (`false` by default). A pinned model is never downsized or evicted so.",
  },
  evict_idle_timeout: { kind: "int", default: 300, doc: "Seconds idle before an `auto_evict` model is unloaded; `0` as soon as it is idle. Default `300`." },
  downsize_idle_timeout: {
    kind: "int",
    default: 60,
    doc: "Seconds idle before an `auto_evict` model is downsized: its KV cache is freed (llama.cpp: its slots erased) and its weights stay loaded; the next request is served as before. `0` as soon as it is idle. Default `60`.",
  },
  evict_weight_factor: {
    kind: "number",
    default: 1.0,
    doc: "Weighs the model's load time in the eviction score (idle time over load time times this); above 1 keeps it longer. Default `1.0`.",
  },
};

const ARGS_MERGE: Record<string, OptionSpec> = {
  merge_args: { kind: "bool", default: true, doc: "`true` (default) appends the model's `*_args` to the server-wide ones; `false` uses the model's alone." },
};

/** The OpenAI-compatible text routes, as llama-server (and servers like it) serve them. */
const OPENAI_TEXT = { chat: "/v1/chat/completions", completions: "/v1/completions" } as const;

export const RECIPE_SPECS: Record<string, RecipeSpec> = {
  llamacpp: {
    cliGroup: "Llama.cpp Backend Options",
    serves: ["llm", "embedding", "reranking"],
    capabilities: { ...OPENAI_TEXT, embeddings: "/v1/embeddings", rerank: "/v1/rerank", tokenize: "/tokenize", slots: "/slots" },
    defaultLabel: "chat",
    options: {
      ctx_size: { kind: "int", default: -1, ctx: true, doc: "llamacpp: context size. `-1` sizes it automatically from the model; omit it to use the saved value." },
      llamacpp_backend: {
        kind: "string",
        default: "auto",
        doc: "llamacpp: `auto` (default), `cpu` (built from source into the cache), `system` (`llama-server` on PATH), or a backend config.json points at a binary.",
      },
      llamacpp_args: {
        kind: "string",
        default: "",
        doc: "llamacpp: extra llama-server arguments: only thread, batching, memory, precision, RoPE, sampling, reasoning and logging flags (such as `--threads`, `--parallel`, `--batch-size`, `--cache-type-k`, `-fa`, `--temp`, `--reasoning-format`). Refused: the flags the server sets (`-m`, `--port`, `--host`, `--ctx-size`, `-ngl`, `--jinja`, `--mmproj`, `--embeddings`, `--reranking`, ...), those that write or read outside the model's folders, and any other.",
      },
      llamacpp_device: { kind: "string", default: "", doc: "llamacpp: llama-server's `--device` list, such as `Vulkan0`; empty leaves its default." },
      rpc: {
        kind: "string",
        default: "",
        doc: "llamacpp: the RPC workers (`lemonade worker`) to split the model's layers across: `all` for every one in `llamacpp.rpc_workers` that answers, a comma-separated list of some of them (`host:port`), or empty for none. The model then loads with every layer offloaded (`-ngl all`) to the workers and this machine's GPUs.",
      },
      tensor_split: {
        kind: "string",
        default: "",
        doc: "llamacpp: with `rpc`, the share of the layers each device takes (llama-server's `--tensor-split`, such as `1,1`): the workers first, in the order they are used, then this machine's GPUs; empty splits by each device's free memory.",
      },
      ...ARGS_MERGE,
      ...COMMON,
    },
    backendOption: "llamacpp_backend",
    cliFlag: "llamacpp",
    config: { section: "llamacpp", options: { backend: "llamacpp_backend", args: "llamacpp_args" } },
    metrics: { path: "/metrics", prefix: "llamacpp" },
    memory: "gguf",
    // llama-server's flags (tools/server/README.md).
    tuning: {
      args: "llamacpp_args",
      flags: {
        threads: [["-t", "--threads"]],
        batch_size: [["-b", "--batch-size"]],
        ubatch_size: [["-ub", "--ubatch-size"]],
        gpu_layers: [["-ngl", "--n-gpu-layers", "--gpu-layers"]],
        flash_attn: [["-fa", "--flash-attn"]],
        kv_cache_type: [["-ctk", "--cache-type-k"], ["-ctv", "--cache-type-v"]],
      },
    },
  },
  whispercpp: {
    cliGroup: "Whisper.cpp Options",
    serves: ["transcription"],
    capabilities: { transcribe: "/inference" },
    defaultLabel: "transcription",
    // Lemonade marks every whisper.cpp model as one /realtime can stream to.
    defaultCapabilities: ["realtime-transcription"],
    options: {
      whispercpp_backend: { kind: "string", default: "cpu", doc: "whispercpp: `auto`, `cpu` or `system`." },
      whispercpp_args: { kind: "string", default: "", doc: "whispercpp: extra whisper-server arguments: only decoding, thread and device flags (such as `--threads`, `--beam-size`, `--language`, `--no-gpu`); the server sets `-m`, `--port`, `--host`." },
      ...ARGS_MERGE,
      ...COMMON,
    },
    backendOption: "whispercpp_backend",
    cliFlag: "whispercpp",
    config: { section: "whispercpp", options: { backend: "whispercpp_backend", args: "whispercpp_args" } },
  },
  "sd-cpp": {
    cliGroup: "Stable Diffusion Options",
    serves: ["image"],
    capabilities: { "image.generate": "/v1/images/generations", "image.edit": "/v1/images/edits" },
    // sd-server has no upscale route in the release Lemonade pins: sd-cli upscales, one image a run.
    standIns: { upscale: "sd-cli" },
    defaultLabel: "image",
    // Defaults from lemonade.md's load table; a catalog entry's image_defaults come before them.
    options: {
      steps: { kind: "int", default: 20, doc: "sd-cpp: inference steps. Default `20`." },
      cfg_scale: { kind: "number", default: 7.0, doc: "sd-cpp: classifier-free guidance scale. Default `7.0`." },
      width: { kind: "int", default: 512, doc: "sd-cpp: image width in pixels. Default `512`." },
      height: { kind: "int", default: 512, doc: "sd-cpp: image height in pixels. Default `512`." },
      sdcpp_backend: {
        kind: "string",
        default: "auto",
        doc: "sd-cpp: `auto` (default), `system` (`sd-server` on PATH), or a backend config.json points at a binary.",
      },
      sdcpp_args: {
        kind: "string",
        default: "",
        doc: "sd-cpp: extra sd-server arguments: only sampling, thread, memory and precision flags (such as `--threads`, `--sampling-method`, `--vae-tiling`, `--offload-to-cpu`, `--diffusion-fa`, `--type`); the server sets `-m`, `--diffusion-model`, `--llm`, `--vae`, `--listen-port`, `--listen-ip`, and flags that read other files, reach the network or serve other content are refused.",
      },
      ...ARGS_MERGE,
      ...COMMON,
    },
    backendOption: "sdcpp_backend",
    listedEverywhere: true,
    cliFlag: "sdcpp",
    config: {
      section: "sdcpp",
      options: { backend: "sdcpp_backend", args: "sdcpp_args", steps: "steps", cfg_scale: "cfg_scale", width: "width", height: "height" },
    },
  },
  kokoro: {
    serves: ["tts"],
    capabilities: { speech: "/v1/audio/speech" },
    standIns: { speech: "espeak-ng" },
    speech: { model: "kokoro", engine: "kokoros" },
    // `kokoro.cpu_bin` points at the user's own Kokoros.
    config: { section: "kokoro", options: {} },
    defaultLabel: "tts",
    options: { ...COMMON },
    servesWithoutFiles: true,
    repositoryIndex: "index.json",
  },
  /** An encoder classifier: a repository (or folder) of model.onnx, tokenizer.json and config.json. */
  onnxruntime: {
    serves: ["classification"],
    capabilities: { classify: "/classify" },
    defaultLabel: "classification",
    options: { ...COMMON },
    repositoryIndex: "config.json",
    repositoryFiles: ["model.onnx", "tokenizer.json", "config.json"],
  },
  /** vLLM serving a safetensors checkpoint: a whole repository, config.json at its root. */
  vllm: {
    cliGroup: "vLLM Options",
    serves: ["llm", "embedding"],
    capabilities: { ...OPENAI_TEXT, embeddings: "/v1/embeddings" },
    defaultLabel: "chat",
    options: {
      vllm_backend: { kind: "string", default: "auto", doc: "vllm: `auto` or `system` (`vllm` on PATH, or the binary config.json `vllm.system_bin` names)." },
      vllm_args: { kind: "string", default: "", doc: "vllm: extra `vllm serve` arguments: only memory, parallelism, precision and scheduling flags (such as `--max-model-len`, `--gpu-memory-utilization`, `--dtype`, `--tensor-parallel-size`); the server sets `--host`, `--port`, `--model`, `--served-model-name`." },
      ...ARGS_MERGE,
      ...COMMON,
    },
    backendOption: "vllm_backend",
    cliFlag: "vllm",
    config: { section: "vllm", options: { backend: "vllm_backend", args: "vllm_args" } },
    metrics: { path: "/metrics", prefix: "vllm" },
    repositoryIndex: "config.json",
  },
  /** TRELLIS.2's trellis-server (trellis.cpp): an image to a textured mesh, one at a time. The
   * checkpoint is a repository of GGUFs the engine reads as a folder. */
  trellis: {
    cliGroup: "3D Generation Options",
    serves: ["mesh"],
    capabilities: { "mesh.generate": true },
    defaultLabel: "3d",
    options: {
      trellis_backend: { kind: "string", default: "auto", doc: "trellis: `auto` (default: the first backend config.json points at a binary, else `system`), `system` (`trellis-server` on PATH), or a backend config.json's `trellis.<backend>_bin` names." },
      trellis_args: { kind: "string", default: "", doc: "trellis: extra trellis-server arguments; the server sets `--models`, `--host`, `--port` and `--res`." },
      ...ARGS_MERGE,
      ...COMMON,
    },
    backendOption: "trellis_backend",
    cliFlag: "trellis",
    config: { section: "trellis", options: { backend: "trellis_backend", args: "trellis_args" } },
  },
  /** ACE-Step's ace-server (acestep.cpp): music, instrumental or sung, as jobs the engine runs
   * (`/lm` for the lyrics' audio codes, `/synth` for the audio, `/job` polled). */
  acestep: {
    cliGroup: "Audio Generation Options",
    serves: ["audio-generation"],
    capabilities: { "audio.generate": true },
    defaultLabel: "audio-generation",
    options: {
      acestep_backend: { kind: "string", default: "auto", doc: "acestep: `auto` (default: the first backend config.json points at a binary, else `system`), `system` (`ace-server` on PATH), or a backend config.json's `acestep.<backend>_bin` names." },
      ...COMMON,
    },
    backendOption: "acestep_backend",
    cliFlag: "acestep",
    config: { section: "acestep", options: { backend: "acestep_backend" } },
  },
  /** ThinkSound's ts-server: sound effects from a caption, answered as WAV. The checkpoint is a
   * repository of GGUFs (the diffusion, text and VAE networks and their tokenizers). */
  thinksound: {
    cliGroup: "Audio Generation Options",
    serves: ["audio-generation"],
    capabilities: { "audio.generate": true },
    defaultLabel: "audio-generation",
    options: {
      thinksound_backend: { kind: "string", default: "auto", doc: "thinksound: `auto` (default: the first backend config.json points at a binary, else `system`), `system` (`ts-server` on PATH), or a backend config.json's `thinksound.<backend>_bin` names." },
      ...COMMON,
    },
    backendOption: "thinksound_backend",
    cliFlag: "thinksound",
    config: { section: "thinksound", options: { backend: "thinksound_backend" } },
    repositoryIndex: "dit-bf16.gguf",
    repositoryFiles: ["dit-bf16.gguf", "t5-bf16.gguf", "metaclip-text-f32.gguf", "vae-f32.gguf", "t5-tokenizer.gguf", "clip-tokenizer.gguf"],
  },
  /** espeak-ng in the server process, speaking (ffmpeg encoding) for kokoro models. */
  "espeak-ng": { kind: "in-process", serves: ["tts"], capabilities: { speech: true }, defaultLabel: "tts", options: {} },
  /** sd-cli, one run per image, upscaling with an ESRGAN model for sd-cpp models. */
  "sd-cli": { kind: "one-shot", serves: ["image"], capabilities: { upscale: true }, defaultLabel: "image", options: {} },
  /** A provider's model: nothing is loaded here, so no load options apply. */
  cloud: {
    serves: ["llm", "embedding", "reranking"],
    capabilities: { ...OPENAI_TEXT, embeddings: "/v1/embeddings", rerank: "/v1/rerank" },
    defaultLabel: "chat",
    options: {},
    upstreamJudgesModels: true,
  },
};

/** The options a recipe accepts; an unknown recipe takes only the common ones. */
export function optionSpecs(recipe: string): Record<string, OptionSpec> {
  return RECIPE_SPECS[recipe]?.options ?? COMMON;
}

/** Whether a recipe serves a capability, on its own engine or through a stand-in. */
export function serves(recipe: string, capability: Capability): boolean {
  const spec = RECIPE_SPECS[recipe];
  return spec?.capabilities[capability] !== undefined || spec?.standIns?.[capability] !== undefined;
}

/** Whether a recipe's models are judged by their upstream, not here (`upstreamJudgesModels`). */
export const upstreamJudges = (recipe: string): boolean => RECIPE_SPECS[recipe]?.upstreamJudgesModels === true;

/** The path a capability has on the recipe's engine; throws for one it does not serve there. */
export function enginePath(recipe: string, capability: Capability): string {
  const path = RECIPE_SPECS[recipe]?.capabilities[capability];
  if (typeof path !== "string") throw new Error(`Recipe ${recipe} serves no ${capability} on its engine`);
  return path;
}

/** The engine path every recipe that serves `capability` on its engine declares, for routes that
 * forward before the model is resolved (to the most recently used one, or a name the proxy
 * resolves). Throws when recipes disagree: such a recipe needs the path taken per model. */
export function sharedEnginePath(capability: Capability): string {
  const paths = new Set(Object.values(RECIPE_SPECS).flatMap((r) => (typeof r.capabilities[capability] === "string" ? [r.capabilities[capability]] : [])));
  if (paths.size !== 1) throw new Error(`Recipes serve ${capability} at ${paths.size ? [...paths].join(" and ") : "no engine path"}; a shared path needs exactly one`);
  return [...paths][0]!;
}

/** The recipes with a config.json section. */
const configured = () => Object.values(RECIPE_SPECS).flatMap((r) => (r.config ? [r.config] : []));

/** The config.json sections whose `<backend>_bin` keys name a backend's binary. */
export const CONFIG_SECTIONS: string[] = configured().map((c) => c.section);

/** config.json section keys that are recipe options server-wide (`llamacpp.args` -> `llamacpp_args`). */
export const RECIPE_DEFAULT_KEYS: Record<string, string> = Object.fromEntries(
  configured().flatMap((c) => Object.entries(c.options).map(([key, option]) => [`${c.section}.${key}`, option])),
);

/** What each recipe option does, for the load body's fields (every recipe's options are accepted). */
export const OPTION_DOCS: Record<string, string> = Object.fromEntries(
  Object.values(RECIPE_SPECS).flatMap((r) => Object.entries(r.options).flatMap(([name, o]) => (o.doc ? [[name, o.doc]] : []))),
);
