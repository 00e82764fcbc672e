// How models look to clients: the OpenAI-style model object, the options-by-layer view, and the
// Ollama details block. Each combines the catalog (what exists), the router (what runs) and the
// saved options.
import { basename } from "node:path";
import type { CatalogModel } from "../models/catalog.ts";
import { parseCheckpoint } from "../models/hf-cache.ts";
import { optionSpecs, validateOption, OptionError, type Options } from "../models/recipe-options.ts";
import type { ServerContext } from "./context.ts";

export function modelObject(ctx: ServerContext, model: CatalogModel, includePaths = false, id = model.id) {
  const files = ctx.catalog.files(model);
  const slot = ctx.router.list().find((s) => s.model.id === model.id);
  const saved = ctx.recipeOptions.saved(model.id);
  const maxContext = ctx.catalog.maxContextWindow(model);
  const configuredCtx = ctx.router.resolve(model).ctx_size;
  const contextLength = slot?.ctxSize ?? (typeof configuredCtx === "number" && configuredCtx > 0 ? configuredCtx : maxContext);
  const hub = model.source === "huggingface";
  return {
    id,
    created: 1234567890,
    object: "model" as const,
    owned_by: "lemonade" as const,
    checkpoint: model.checkpoints.main ?? "",
    recipe: model.recipe,
    ...(model.size !== undefined ? { size: model.size } : {}),
    ...(maxContext !== undefined ? { max_context_window: maxContext } : {}),
    ...(contextLength !== undefined ? { context_length: contextLength } : {}),
    downloaded: files.every((f) => f.exists),
    update_available: ctx.updatesAvailable.has(model.id),
    suggested: model.suggested,
    labels: model.labels,
    components: [],
    checkpoints: model.checkpoints,
    checkpoint_status: files.map((f) => ({
      type: f.role,
      present: f.exists,
      required: true,
      registry: hub ? "huggingface" : "",
      ...(includePaths && f.path ? { path: f.path } : {}),
    })),
    source: model.source,
    ...(hub ? { registry_source: "huggingface" } : {}),
    recipe_options: { ...model.registryOptions, ...saved },
  };
}

/** Every model to list: downloaded ones (or all with `showAll`), plus aliases of listed models. */
export function listModels(ctx: ServerContext, showAll: boolean, includePaths: boolean) {
  const listed = ctx.catalog
    .all()
    .filter((m) => ctx.catalog.isSupported(m) && (showAll || ctx.catalog.isDownloaded(m)))
    .map((m) => modelObject(ctx, m, includePaths));
  const byId = new Map(listed.map((m) => [m.id, m]));
  for (const { alias, target } of ctx.aliases.list()) {
    const model = ctx.catalog.find(target);
    const base = model && byId.get(model.id);
    if (base && !byId.has(alias)) listed.push({ ...base, id: alias });
  }
  return listed;
}

export function optionsView(ctx: ServerContext, model: CatalogModel, saved: Options = ctx.recipeOptions.saved(model.id)) {
  const effective = ctx.router.resolve(model, undefined, saved);
  const defaults = ctx.router.resolve(model, undefined, {});
  const takesCtx = "ctx_size" in optionSpecs(model.recipe);
  return {
    model_name: model.id,
    recipe: model.recipe,
    saved: ctx.recipeOptions.saved(model.id),
    effective: { ...effective, model_name: model.id },
    defaults: { ...defaults, model_name: model.id },
    ...(takesCtx ? { resolved_ctx_size: ctx.router.resolvedCtxSize(model, effective) } : {}),
  };
}

const CLEARS = new Set<unknown>([null, -1, "", "auto"]);

/** Merges a POST /options body into the saved entry; throws OptionError naming the bad key. */
export function mergeSavedOptions(model: CatalogModel, saved: Options, body: Record<string, unknown>): Options {
  const next: Options = { ...saved };
  for (const [key, value] of Object.entries(body)) {
    if (key === "model_name" || key === "dry_run") continue;
    if (key === "pinned") throw new OptionError("'pinned' belongs to /v1/load, not to saved options");
    const clears = key === "ctx_size" ? value === null : CLEARS.has(value);
    if (clears) {
      if (!(key in optionSpecs(model.recipe))) validateOption(model.recipe, key, value);
      delete next[key];
    } else {
      next[key] = validateOption(model.recipe, key, value);
    }
  }
  return next;
}

/** Ollama's `details` block, inferred from name, recipe and checkpoint. */
export function ollamaDetails(model: CatalogModel) {
  const size = /(\d+(?:\.\d+)?)[Bb](?![a-z])/.exec(model.id)?.[1];
  const checkpoint = model.checkpoints.main ?? "";
  const variant = model.source === "huggingface" ? (parseCheckpoint(checkpoint).variant ?? "") : basename(checkpoint);
  const quant = /(I?Q\d+(?:_[A-Z0-9]+)*|F16|BF16|F32)/i.exec(variant)?.[1]?.toUpperCase() ?? "";
  return {
    parent_model: "" as const,
    format: "gguf" as const,
    family: model.recipe,
    families: [model.recipe],
    parameter_size: size ? `${size}B` : "",
    quantization_level: quant,
  };
}
