// The recipes (engine families) of the contract: which model types each serves, the deployment
// label a model gets when it names none, and the recipe options `/v1/load` and
// `/v1/models/{id}/options` accept for it. The engines implement these recipes (engines/); the
// catalog and option resolution read these facts (models/). This module imports nothing of ours.

export type ModelType = "llm" | "embedding" | "reranking" | "transcription" | "image" | "tts" | "classification";

/** Every model type, in the order `/v1/health` lists per-type figures. */
export const MODEL_TYPES: ModelType[] = ["llm", "embedding", "reranking", "transcription", "image", "tts", "classification"];

export type OptionValue = string | number | boolean | null;
export type Options = Record<string, OptionValue>;

export interface OptionSpec {
  kind: "int" | "number" | "string" | "bool";
  default: OptionValue;
  /** `ctx_size`: a positive integer or -1 (automatic). */
  ctx?: boolean;
}

export interface RecipeSpec {
  /** The model types this recipe's engine serves. */
  serves: ModelType[];
  /** The deployment label of a model that names none. */
  defaultLabel: string;
  /** The recipe options a load accepts, with their built-in defaults. */
  options: Record<string, OptionSpec>;
  /** The recipe serves its models before their files are downloaded (kokoro: espeak-ng speaks
   * until Kokoros and the model's files are there), so they count as downloaded. */
  servesWithoutFiles?: boolean;
  /** The checkpoint names a whole repository, and this file inside it stands for the model. */
  repositoryIndex?: string;
  /** Files that must be beside the index for the model to count as downloaded (an interrupted
   * download that left the index alone is fetched again). */
  repositoryFiles?: string[];
}

/** Every recipe's residency options (lemonade.md): idle eviction is off unless `auto_evict` is
 * on; `evict_weight_factor` weighs a model's load time in the eviction score;
 * `downsize_idle_timeout` is accepted and saved, with no effect in this server. */
const COMMON: Record<string, OptionSpec> = {
  auto_evict: { kind: "bool", default: null },
  evict_idle_timeout: { kind: "int", default: 300 },
  downsize_idle_timeout: { kind: "int", default: 60 },
  evict_weight_factor: { kind: "number", default: 1.0 },
};

const ARGS_MERGE: Record<string, OptionSpec> = { merge_args: { kind: "bool", default: true } };

export const RECIPE_SPECS: Record<string, RecipeSpec> = {
  llamacpp: {
    serves: ["llm", "embedding", "reranking"],
    defaultLabel: "chat",
    options: {
      ctx_size: { kind: "int", default: -1, ctx: true },
      llamacpp_backend: { kind: "string", default: "auto" },
      llamacpp_args: { kind: "string", default: "" },
      llamacpp_device: { kind: "string", default: "" },
      ...ARGS_MERGE,
      ...COMMON,
    },
  },
  whispercpp: {
    serves: ["transcription"],
    defaultLabel: "transcription",
    options: {
      whispercpp_backend: { kind: "string", default: "cpu" },
      whispercpp_args: { kind: "string", default: "" },
      ...ARGS_MERGE,
      ...COMMON,
    },
  },
  "sd-cpp": {
    serves: ["image"],
    defaultLabel: "image",
    // Defaults from lemonade.md's load table; a catalog entry's image_defaults come before them.
    options: {
      steps: { kind: "int", default: 20 },
      cfg_scale: { kind: "number", default: 7.0 },
      width: { kind: "int", default: 512 },
      height: { kind: "int", default: 512 },
      sdcpp_backend: { kind: "string", default: "auto" },
      sdcpp_args: { kind: "string", default: "" },
      ...ARGS_MERGE,
      ...COMMON,
    },
  },
  kokoro: { serves: ["tts"], defaultLabel: "tts", options: { ...COMMON }, servesWithoutFiles: true, repositoryIndex: "index.json" },
  /** An encoder classifier: a repository (or folder) of model.onnx, tokenizer.json and config.json. */
  onnxruntime: {
    serves: ["classification"],
    defaultLabel: "classification",
    options: { ...COMMON },
    repositoryIndex: "config.json",
    repositoryFiles: ["model.onnx", "tokenizer.json", "config.json"],
  },
  /** A provider's model: nothing is loaded here, so no load options apply. */
  cloud: { serves: ["llm", "embedding", "reranking"], defaultLabel: "chat", options: {} },
};

/** The options a recipe accepts; an unknown recipe takes only the common ones. */
export function optionSpecs(recipe: string): Record<string, OptionSpec> {
  return RECIPE_SPECS[recipe]?.options ?? COMMON;
}
