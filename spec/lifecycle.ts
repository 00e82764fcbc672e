// Loading and unloading models (lemonade.md): the load body carries every recipe's options,
// each documented by its recipe's option docs (spec/recipes.ts OPTION_DOCS).
import { Type as T, type Static, type TSchema } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { TuningParams } from "./tuning.ts";
import { E } from "./errors.ts";
import { OPTION_DOCS, RECIPE_SPECS } from "./recipes.ts";

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
  errorStyle: "lemonade_model",
  access: "api",
  summary: "Load a model into memory",
  availability: "partially_available",
  description:
    "Explicitly loads a registered model, starting its engine, so that the first request does not wait. When the type's `max_loaded_models` limit is reached, the least recently used unpinned model of that type is unloaded first, after its in-flight requests finish. Loading a model that is already loaded with the same options only updates `pinned`; different options reload it.",
  notes:
    "Recipe option fields have three-state semantics: omitting a field keeps its saved per-model value; an explicit `null` ignores the saved value for this load only; a concrete value overrides it. Priority, highest first: this request, `recipe_options.json`, the model's registry row, the server configuration, built-in defaults. `\"\"` and `\"auto\"` (a string option other than `*_args`, whose `\"\"` clears the flags) and `-1` (a number other than `ctx_size`) are unset, as Lemonade reads them: the next layer answers. With `save_options: true`, the request's concrete values replace the saved entry, for this load too (unset ones are not saved), while a `null` keeps the saved value for that key. A field that is none of these is ignored, as Lemonade ignores it.",
  body: T.Object(
    {
      model_name: T.String({ minLength: 1, description: "Name of the model to load." }),
      pinned: T.Optional(T.Boolean({ description: "`true` pins the model against eviction. Defaults to `false`." })),
      save_options: T.Optional(
        T.Boolean({ description: "`true` saves the request's recipe options to `recipe_options.json`, replacing the model's entry." }),
      ),
      tuning: T.Optional(TuningParams),
      ...loadOptionFields(),
    },
    // Lemonade reads the fields it knows and ignores the rest.
    { additionalProperties: true },
  ),
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"`' }),
    message: T.String({ description: "What was loaded, naming the model as `model_name` does" }),
    model_name: T.String({ description: "The model loaded, as the request named it (an alias by its target)" }),
    checkpoint: T.String({ description: "Its main checkpoint" }),
    recipe: T.String({ description: "Its recipe" }),
  }),
  errors: [E.modelNotSupported, E.modelNotFound, E.slotsPinned, E.modelLoadError, E.rpcWorkerUnavailable],
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
  response: T.Object({
    status: T.Literal("success", { description: 'Always `"success"` on success' }),
    message: T.String({ description: "What was done" }),
    model_name: T.Optional(T.String({ description: "The model unloaded, as the request named it (an alias by its target); absent when every model was" })),
  }),
  errors: [E.modelNotLoaded],
  example: { body: { model_name: "Qwen3-0.6B-GGUF" }, response: '{"status": "success", "message": "Model unloaded successfully", "model_name": "Qwen3-0.6B-GGUF"}' },
});

export type LoadRequest = Static<typeof load.body>;
export type LoadResponse = Static<typeof load.response>;
export type UnloadResponse = Static<typeof unload.response>;
