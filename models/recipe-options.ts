// Per-model recipe options: what each recipe accepts, the saved layer (recipe_options.json), and
// the priority chain a load resolves through:
//   request > saved (recipe_options.json) > registry row > server configuration > built-in default.
import { join } from "node:path";
import { ApiError } from "../lib/api-error.ts";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import { E } from "../spec/errors.ts";
import { optionSpecs, type Options, type OptionValue } from "../spec/recipes.ts";

/** An option value a recipe does not take: the documented 400 invalid_argument. */
export class OptionError extends ApiError {
  constructor(message: string) {
    super(E.invalidArgument, message);
  }
}

/** Checks one option value against its spec; null is always allowed (it means "not set here"). */
export function validateOption(recipe: string, key: string, value: unknown): OptionValue {
  const spec = optionSpecs(recipe)[key];
  if (!spec) throw new OptionError(`Option '${key}' is not accepted by the ${recipe} recipe`);
  if (value === null) return null;
  if (spec.kind === "int") {
    if (typeof value !== "number" || !Number.isInteger(value)) throw new OptionError(`Option '${key}' must be a whole number`);
    if (spec.ctx && ((value !== -1 && value < 1) || value >= 2 ** 31)) throw new OptionError(`Option '${key}' must be -1 or a whole number from 1 to 2^31 - 1`);
    return value;
  }
  if (spec.kind === "number") {
    if (typeof value !== "number" || !Number.isFinite(value)) throw new OptionError(`Option '${key}' must be a number`);
    return value;
  }
  if (spec.kind === "bool") {
    if (typeof value !== "boolean") throw new OptionError(`Option '${key}' must be true or false`);
    return value;
  }
  if (typeof value !== "string") throw new OptionError(`Option '${key}' must be a string`);
  return value;
}

/** The layers a resolution reads, highest priority first. Undefined keys fall through; a null in
 * the request skips the saved layer for that key only. */
export interface Layers {
  request?: Record<string, unknown>;
  saved: Options;
  registry: Record<string, unknown>;
  config: Options;
}

export function resolveOptions(recipe: string, layers: Layers): Options {
  const out: Options = {};
  for (const [key, spec] of Object.entries(optionSpecs(recipe))) {
    const req = layers.request?.[key];
    const candidates: unknown[] = [
      req,
      req === null ? undefined : layers.saved[key],
      layers.registry[key],
      layers.config[key],
    ];
    const found = candidates.find((v) => v !== undefined && v !== null);
    out[key] = (found as OptionValue | undefined) ?? spec.default;
  }
  const mergeArgs = out.merge_args !== false;
  for (const argsKey of Object.keys(out).filter((k) => k.endsWith("_args"))) {
    // With merge_args, server-wide args come first and the model's own follow (later flags win).
    const global = layers.config[argsKey];
    if (mergeArgs && typeof global === "string" && global && out[argsKey] !== global) {
      out[argsKey] = `${global} ${out[argsKey]}`.trim();
    }
  }
  return out;
}

/** Checks the recipe options a load request carries (unknown keys are not options and pass). */
export function validateRequestOptions(recipe: string, options: Record<string, unknown>): void {
  const specs = optionSpecs(recipe);
  for (const [k, v] of Object.entries(options)) if (v !== undefined && k in specs) validateOption(recipe, k, v);
}

/** A concrete `ctx_size` as it is; -1 (automatic): what fits in memory when that is known
 * (models/memory-fit.ts), else the trained window capped at 32768. */
export function resolvedCtxSize(options: Options, trained: number | undefined, auto?: number): number {
  const ctx = options.ctx_size;
  if (typeof ctx === "number" && ctx > 0) return ctx;
  return auto ?? Math.min(trained ?? 4096, 32768);
}

/** `save_options` on a load: concrete values replace the saved entry; a null keeps what was saved. */
export function optionsToSave(recipe: string, saved: Options, request: Record<string, unknown>): Options {
  const next: Options = {};
  // `pinned` is no recipe option, but a load saves it with the rest (lemonade.md).
  if (typeof request.pinned === "boolean") next.pinned = request.pinned;
  else if (saved.pinned !== undefined) next.pinned = saved.pinned;
  for (const key of Object.keys(optionSpecs(recipe))) {
    const v = request[key];
    if (v === null) {
      if (saved[key] !== undefined) next[key] = saved[key]!;
    } else if (v !== undefined) next[key] = v as OptionValue;
  }
  return next;
}

const CLEARS = new Set<unknown>([null, -1, "", "auto"]);

/** Merges a POST /options body into the saved entry; throws OptionError naming the bad key. */
export function mergeSavedOptions(recipe: string, saved: Options, body: Record<string, unknown>): Options {
  const next: Options = { ...saved };
  for (const [key, value] of Object.entries(body)) {
    if (key === "model_name" || key === "dry_run") continue;
    if (key === "pinned") throw new OptionError("'pinned' belongs to /v1/load, not to saved options");
    const clears = key === "ctx_size" ? value === null : CLEARS.has(value);
    if (clears) {
      if (!(key in optionSpecs(recipe))) validateOption(recipe, key, value);
      delete next[key];
    } else {
      next[key] = validateOption(recipe, key, value);
    }
  }
  return next;
}

/** What a load of a model uses: its resolved options and the context size they come to. */
export interface LoadSpec {
  options: Options;
  ctxSize: number;
  /** Saved with the model (`pinned` written by a load with `save_options`): loads pinned. */
  pinned?: boolean;
}

/** The parts of a catalog model that options depend on. */
export interface OptionedModel {
  id: string;
  recipe: string;
  registryOptions: Record<string, unknown>;
}

/** Resolves a model's options through every layer: the saved ones from the store, the registry
 * row's, and the server configuration's (read live, so a config change applies to the next load). */
export class OptionResolver<M extends OptionedModel = OptionedModel> {
  constructor(
    private readonly store: RecipeOptionsStore,
    private readonly configLayer: () => Options,
    /** The context window a model was trained for (from its GGUF), when known. */
    private readonly trainedWindow: (model: M) => number | undefined,
    /** The automatic context that fits the memory free for the model, when it can be worked out. */
    private readonly autoCtx: (model: M) => number | undefined = () => undefined,
  ) {}

  /** Options a load of `model` would use, without the request layer unless given. */
  resolve(model: M, request?: Record<string, unknown>, saved: Options = this.store.saved(model.id)): Options {
    return resolveOptions(model.recipe, { request, saved, registry: model.registryOptions, config: this.configLayer() });
  }

  ctxSize(model: M, options: Options): number {
    const ctx = options.ctx_size;
    return resolvedCtxSize(options, this.trainedWindow(model), typeof ctx === "number" && ctx > 0 ? undefined : this.autoCtx(model));
  }

  spec(model: M, request?: Record<string, unknown>): LoadSpec {
    const options = this.resolve(model, request);
    const pinned = (this.store.saved(model.id) as Record<string, unknown>).pinned === true;
    return { options, ctxSize: this.ctxSize(model, options), ...(pinned ? { pinned } : {}) };
  }
}

/** recipe_options.json: each model's explicitly saved options. */
export class RecipeOptionsStore {
  private readonly path: string;
  private data: Record<string, Options>;

  constructor(cacheDir: string) {
    this.path = join(cacheDir, "recipe_options.json");
    const raw = readJsonFile<Record<string, Options>>(this.path, {});
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw new Error(`${this.path} must hold a JSON object of model name -> options`);
    }
    this.data = raw;
  }

  saved(model: string): Options {
    return { ...(this.data[model] ?? {}) };
  }

  /** Replaces a model's entry (an empty entry removes it); disk first, then memory. */
  replace(model: string, options: Options): void {
    const next = { ...this.data };
    if (Object.keys(options).length) next[model] = options;
    else delete next[model];
    writeJsonFileAtomic(this.path, next);
    this.data = next;
  }
}
