// Per-model recipe options: what each recipe accepts, the saved layer (recipe_options.json), and
// the priority chain a load resolves through, each value with the layer it came from:
//   request > saved (recipe_options.json) > registry row > server configuration
//   > auto-tune: the local overlay (`lemonade tune`) > the archetype profile's model overlay
//   > the archetype profile's backend defaults > built-in default.
// Auto-tune's performance parameters (threads, batch sizes, offload, flash attention, KV type)
// follow the same chain; one the model's own `*_args` set belongs to that layer and wins.
import { join } from "node:path";
import { ApiError } from "../lib/api-error.ts";
import { splitArgs } from "../lib/args.ts";
import type { Archetype } from "../lib/archetype.ts";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import { E } from "../spec/errors.ts";
import { optionSpecs, RECIPE_SPECS, type Options, type OptionSpec, type OptionValue } from "../spec/recipes.ts";
import type { ArchetypeProfileT, Layer, TuningParamsT } from "../spec/tuning.ts";
import { hasSourcePrefix } from "./catalog.ts";
import { paramsFor, type LocalTune } from "./tuning.ts";

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
  /** Auto-tune's layers, below the configuration. */
  tuned?: Partial<Record<AutoLayer, Options>>;
}

/** The layers auto-tune adds, highest first. */
export const AUTO_LAYERS = ["local_tune", "profile_model", "profile"] as const;
export type AutoLayer = (typeof AUTO_LAYERS)[number];
const isAuto = (layer: Layer) => (AUTO_LAYERS as readonly Layer[]).includes(layer);

/** The first set value of `candidates`; with `skipAuto`, an auto-tune layer's winner gives way to
 * the next layer down (the fallback when a tuned value made the engine fail). */
function pick<V>(candidates: [Layer, V | undefined | null][], skipAuto = false): [Layer, V] | undefined {
  const set = candidates.filter((c): c is [Layer, V] => c[1] !== undefined && c[1] !== null);
  return skipAuto && set[0] && isAuto(set[0][0]) ? set[1] : set[0];
}

/** Lemonade's "not set" values, which leave an option to the next layer and are not saved: -1 for
 * a number (a context size's -1 asks for the automatic one instead), `""` and `"auto"` for a string. */
function isUnset(spec: OptionSpec, value: unknown): boolean {
  if (spec.kind === "int" || spec.kind === "number") return value === -1 && !spec.ctx;
  return spec.kind === "string" && (value === "" || value === "auto");
}

export function resolveOptions(recipe: string, layers: Layers): Options {
  return resolveWithSources(recipe, layers).options;
}

/** The options and, for each, the layer it came from. */
export function resolveWithSources(recipe: string, layers: Layers, skipAuto = false): { options: Options; sources: Record<string, Layer> } {
  const out: Options = {};
  const sources: Record<string, Layer> = {};
  for (const [key, spec] of Object.entries(optionSpecs(recipe))) {
    const req = layers.request?.[key];
    // An unset value passes to the next layer: -1 in any layer; "" and "auto" in the layers a user
    // writes (a load, the saved options) and the registry's, except in `*_args`, where "" clears
    // the flags. The configuration's "auto" stays a value (whisper.cpp's differs from its default),
    // unless an auto-tune layer below it has one: "auto" asks Lemonade to choose, and auto-tune's
    // recommended backend is its choice (a config.json that spells the default out kept it away).
    const strings = !key.endsWith("_args");
    const tunedHere = AUTO_LAYERS.some((l) => layers.tuned?.[l]?.[key] !== undefined && layers.tuned?.[l]?.[key] !== null);
    const unset = (v: unknown, userLayer = true) => (isUnset(spec, v) && (spec.kind !== "string" || (strings && (userLayer || (v === "auto" && tunedHere)))) ? undefined : v);
    const found = pick<unknown>(
      [
        ["request", unset(req)],
        ["saved", req === null ? undefined : unset(layers.saved[key])],
        ["registry", unset(layers.registry[key])],
        ["config", unset(layers.config[key], false)],
        ...AUTO_LAYERS.map((l): [Layer, unknown] => [l, unset(layers.tuned?.[l]?.[key], false)]),
      ],
      skipAuto,
    );
    out[key] = (found?.[1] as OptionValue | undefined) ?? spec.default;
    sources[key] = found?.[0] ?? "default";
  }
  const mergeArgs = out.merge_args !== false;
  for (const argsKey of Object.keys(out).filter((k) => k.endsWith("_args"))) {
    // With merge_args, server-wide args come first and the model's own follow (later flags win).
    const global = layers.config[argsKey];
    if (mergeArgs && typeof global === "string" && global && out[argsKey] !== global) {
      out[argsKey] = `${global} ${out[argsKey]}`.trim();
    }
  }
  return { options: out, sources };
}

/** The word after `flag` (or after `flag=`) in argv words, when one of `aliases` is there. */
function flagValue(words: string[], aliases: string[]): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const eq = w.indexOf("=");
    const name = eq > 0 ? w.slice(0, eq) : w;
    if (!aliases.includes(name)) continue;
    if (eq > 0) return w.slice(eq + 1);
    const next = words[i + 1];
    return next !== undefined && !next.startsWith("-") ? next : "";
  }
  return undefined;
}

/** Auto-tune's view of a load: each performance parameter set, with its layer, and the engine
 * flags auto-tune adds for those the model's own args leave unset. */
export interface Tuning {
  enabled: boolean;
  archetype: string;
  backend: string;
  profileSource?: string;
  params: Record<string, { value: string | number; source: Layer }>;
  args: string[];
  expectedTokensPerSecond?: number;
}

/** What auto-tune reads: the machine, its profile, the local overlays, and the backends here. */
export interface TuningContext {
  enabled(): boolean;
  archetype(): Archetype;
  profile(): ArchetypeProfileT | undefined;
  localFor(model: string, archetype: string, backend: string): LocalTune | undefined;
  /** `auto` resolved as the engine resolves it. */
  resolveBackend(recipe: string, asked: string): string;
  /** Whether a backend can run here, so that a profile's recommendation never names a missing one. */
  available(recipe: string, backend: string): boolean;
}

/** The request's own `tuning` object (what `lemonade tune` loads each candidate with). */
const requestTuning = (request?: Record<string, unknown>): TuningParamsT | undefined => {
  const t = request?.tuning;
  return typeof t === "object" && t !== null && !Array.isArray(t) ? (t as TuningParamsT) : undefined;
};

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

/** `save_options` on a load: concrete values replace the saved entry (an unset value is not one);
 * a null keeps what was saved. */
export function optionsToSave(recipe: string, saved: Options, request: Record<string, unknown>): Options {
  const next: Options = {};
  // `pinned` is no recipe option, but a load saves it with the rest (lemonade.md).
  if (typeof request.pinned === "boolean") next.pinned = request.pinned;
  else if (saved.pinned !== undefined) next.pinned = saved.pinned;
  for (const [key, spec] of Object.entries(optionSpecs(recipe))) {
    const v = request[key];
    if (v === null) {
      if (saved[key] !== undefined) next[key] = saved[key]!;
    } else if (v !== undefined && !isUnset(spec, v)) next[key] = v as OptionValue;
  }
  return next;
}

/** A load's options with `save_options`: Lemonade saves the entry before it loads, replacing the
 * saved one, so no option of this load comes from the old entry: each the request leaves unset is
 * a null (the saved layer skipped). */
export function replacingSaved(recipe: string, request: Record<string, unknown>): Record<string, unknown> {
  const out = { ...request };
  for (const [key, spec] of Object.entries(optionSpecs(recipe))) {
    if (out[key] === undefined || isUnset(spec, out[key])) out[key] = null;
  }
  return out;
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
  /** Auto-tune's parameters and flags, for recipes that take them. */
  tuning?: Tuning;
  /** The same load with each auto-tuned value replaced by the next layer's: what the launcher
   * starts, once, when the engine fails to start with the tuned values. */
  fallback?: LoadSpec;
}

/** A resolution with each value's layer: what `/v1/models/{id}/options` shows. */
export interface Resolution {
  options: Options;
  sources: Record<string, Layer>;
  tuning?: Tuning;
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
    /** Auto-tune; absent, loads resolve as they did before it. */
    private readonly tuning?: TuningContext,
  ) {}

  /** Options a load of `model` would use, without the request layer unless given. */
  resolve(model: M, request?: Record<string, unknown>, saved: Options = this.store.saved(model.id)): Options {
    return this.resolution(model, request, saved).options;
  }

  /** The options, each one's layer, and auto-tune's parameters. With `skipAuto`, each value an
   * auto-tune layer supplied gives way to the next layer's. */
  resolution(model: M, request?: Record<string, unknown>, saved: Options = this.store.saved(model.id), skipAuto = false): Resolution {
    const base: Layers = { request, saved, registry: model.registryOptions, config: this.configLayer() };
    const recipe = RECIPE_SPECS[model.recipe];
    const t = this.tuning;
    if (!t || !recipe?.tuning) return resolveWithSources(model.recipe, base);
    const enabled = t.enabled();
    const archetype = t.archetype();
    const profile = enabled ? t.profile() : undefined;
    const backendKey = recipe.backendOption;
    // The backend first: the parameters are per backend.
    const recommended = profile?.recommended_backend?.[model.recipe];
    const tunedBackend = backendKey && recommended && t.available(model.recipe, recommended) ? { [backendKey]: recommended } : {};
    const backendPass = resolveWithSources(model.recipe, { ...base, tuned: { profile: tunedBackend } }, skipAuto);
    const backend = t.resolveBackend(model.recipe, String(backendPass.options[backendKey ?? ""] ?? ""));
    const local = enabled ? t.localFor(model.id, archetype.id, `${model.recipe}:${backend}`) : undefined;
    const autoParams: [AutoLayer, TuningParamsT | undefined][] = [
      ["local_tune", local?.params],
      ["profile_model", paramsFor(profile?.models?.[model.id], model.recipe, backend)],
      ["profile", paramsFor(profile?.backends, model.recipe, backend)],
    ];
    const ctxLayers = Object.fromEntries(autoParams.map(([l, p]): [AutoLayer, Options] => [l, p?.ctx_size ? { ctx_size: p.ctx_size } : {}]));
    const { options, sources } = resolveWithSources(model.recipe, { ...base, tuned: { ...ctxLayers, profile: { ...ctxLayers.profile, ...tunedBackend } } }, skipAuto);

    // Which layer's args set each flag: the request's, the saved entry's, the registry's, the config's.
    const argsKey = recipe.tuning.args;
    const words = (v: unknown) => splitArgs(typeof v === "string" ? v : "");
    const argLayers: [Layer, string[]][] = [
      ["request", words(request?.[argsKey])],
      ["saved", request?.[argsKey] === null ? [] : words(saved[argsKey])],
      ["registry", words(model.registryOptions[argsKey])],
      ["config", words(this.configLayer()[argsKey])],
    ];
    const inEffective = words(options[argsKey]);
    const fromRequest = requestTuning(request);
    const params: Tuning["params"] = {};
    const args: string[] = [];
    for (const [param, flags] of Object.entries(recipe.tuning.flags)) {
      const aliases = flags[0]!;
      // Set in the args the engine gets: the first layer whose own args hold the flag is its source.
      const inArgs = flagValue(inEffective, aliases);
      if (inArgs !== undefined) {
        params[param] = { value: inArgs, source: argLayers.find(([, w]) => flagValue(w, aliases) !== undefined)?.[0] ?? "request" };
        continue;
      }
      const found = pick<string | number>(
        [["request", fromRequest?.[param as keyof TuningParamsT]], ...autoParams.map(([l, p]): [Layer, string | number | undefined] => [l, p?.[param as keyof TuningParamsT]])],
        skipAuto,
      );
      if (!found) continue;
      const value = found[1] === "physical-cores" ? archetype.cores : found[1];
      params[param] = { value, source: found[0] };
      for (const group of flags) args.push(group[0]!, String(value));
    }
    const tuning: Tuning = {
      enabled,
      archetype: archetype.id,
      backend,
      ...(profile ? { profileSource: profile.source } : {}),
      params,
      args,
      ...(local?.tokens_per_second !== undefined && Object.values(params).some((p) => p.source === "local_tune") ? { expectedTokensPerSecond: local.tokens_per_second } : {}),
    };
    return { options, sources, tuning };
  }

  ctxSize(model: M, options: Options): number {
    const ctx = options.ctx_size;
    return resolvedCtxSize(options, this.trainedWindow(model), typeof ctx === "number" && ctx > 0 ? undefined : this.autoCtx(model));
  }

  spec(model: M, request?: Record<string, unknown>): LoadSpec {
    const saved = this.store.saved(model.id);
    const pinned = (saved as Record<string, unknown>).pinned === true;
    const make = (r: Resolution): LoadSpec => ({
      options: r.options,
      ctxSize: this.ctxSize(model, r.options),
      ...(pinned ? { pinned } : {}),
      ...(r.tuning ? { tuning: r.tuning } : {}),
    });
    const first = this.resolution(model, request, saved);
    const spec = make(first);
    const tunedSomething = Object.values(first.sources).some(isAuto) || Object.values(first.tuning?.params ?? {}).some((p) => isAuto(p.source));
    return tunedSomething ? { ...spec, fallback: make(this.resolution(model, request, saved, true)) } : spec;
  }
}

/** The key recipe_options.json keeps a model's options under: its canonical id. The catalog knows
 * user and extra models by theirs and a built-in by its bare name, which gets `builtin.`; so does
 * any other unprefixed id, as Lemonade keys it. */
export function optionsKey(id: string): string {
  return hasSourcePrefix(id) ? id : `builtin.${id}`;
}

export interface RecipeOptionsStoreOptions {
  /** Whether a bare key is a built-in's name, which the first load rewrites to `builtin.<name>`. */
  isBuiltIn?: (name: string) => boolean;
  log?: { info(message: string): void; warn(message: string): void };
}

/** recipe_options.json: each model's explicitly saved options, under its canonical id. Callers
 * name a model by its catalog id. */
export class RecipeOptionsStore {
  private readonly path: string;
  private data: Record<string, Options>;

  constructor(cacheDir: string, opts: RecipeOptionsStoreOptions = {}) {
    this.path = join(cacheDir, "recipe_options.json");
    const raw = readJsonFile<Record<string, Options>>(this.path, {});
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw new Error(`${this.path} must hold a JSON object of model name -> options`);
    }
    this.data = this.migrated(raw, opts.isBuiltIn ?? (() => false), opts.log);
  }

  /** Older Lemonade saved a built-in's options under its bare name: each such key is rewritten to
   * `builtin.<name>` where it stands (an entry already under that key wins), and the file written
   * back once. A bare key that names no built-in is kept as it is. */
  private migrated(raw: Record<string, Options>, isBuiltIn: (name: string) => boolean, log: RecipeOptionsStoreOptions["log"]): Record<string, Options> {
    let moved = 0;
    const next: Record<string, Options> = {};
    for (const [key, value] of Object.entries(raw)) {
      if (hasSourcePrefix(key) || !isBuiltIn(key)) {
        next[key] = value;
        continue;
      }
      moved++;
      const canonical = optionsKey(key);
      if (!(canonical in raw)) next[canonical] = value;
    }
    if (!moved) return raw;
    try {
      writeJsonFileAtomic(this.path, next);
      log?.info(`Migrated ${moved} recipe_options.json ${moved === 1 ? "key" : "keys"} of built-in models to the builtin. prefix`);
    } catch (err) {
      // The migrated keys still serve this run; the next start tries the write again.
      log?.warn(`Could not write the migrated ${this.path}: ${(err as Error).message}`);
    }
    return next;
  }

  saved(model: string): Options {
    return { ...(this.data[optionsKey(model)] ?? {}) };
  }

  /** Replaces a model's entry (an empty entry removes it); disk first, then memory. */
  replace(model: string, options: Options): void {
    const key = optionsKey(model);
    const next = { ...this.data };
    if (Object.keys(options).length) next[key] = options;
    else delete next[key];
    writeJsonFileAtomic(this.path, next);
    this.data = next;
  }
}
