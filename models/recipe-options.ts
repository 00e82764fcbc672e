// Per-model recipe options: what each recipe accepts, the saved layer (recipe_options.json), and
// the priority chain a load resolves through:
//   request > saved (recipe_options.json) > registry row > server configuration > built-in default.
import { join } from "node:path";
import { readJsonFile, writeJsonFileAtomic } from "./json-file.ts";

export type OptionValue = string | number | boolean | null;
export type Options = Record<string, OptionValue>;

interface OptionSpec {
  kind: "int" | "string" | "bool";
  default: OptionValue;
  /** `ctx_size`: a positive integer or -1 (automatic). */
  ctx?: boolean;
}

const COMMON: Record<string, OptionSpec> = {
  evict_idle_timeout: { kind: "int", default: 300 },
};

const ARGS_MERGE: Record<string, OptionSpec> = { merge_args: { kind: "bool", default: true } };

export const RECIPE_OPTIONS: Record<string, Record<string, OptionSpec>> = {
  llamacpp: {
    ctx_size: { kind: "int", default: -1, ctx: true },
    llamacpp_backend: { kind: "string", default: "cpu" },
    llamacpp_args: { kind: "string", default: "" },
    ...ARGS_MERGE,
    ...COMMON,
  },
  whispercpp: {
    whispercpp_backend: { kind: "string", default: "cpu" },
    whispercpp_args: { kind: "string", default: "" },
    ...ARGS_MERGE,
    ...COMMON,
  },
  kokoro: { ...COMMON },
  "sd-cpp": { ...COMMON },
};

export function optionSpecs(recipe: string): Record<string, OptionSpec> {
  return RECIPE_OPTIONS[recipe] ?? COMMON;
}

export class OptionError extends Error {}

/** Checks one option value against its spec; null is always allowed (it means "not set here"). */
export function validateOption(recipe: string, key: string, value: unknown): OptionValue {
  const spec = optionSpecs(recipe)[key];
  if (!spec) throw new OptionError(`Option '${key}' is not accepted by the ${recipe} recipe`);
  if (value === null) return null;
  if (spec.kind === "int") {
    if (typeof value !== "number" || !Number.isInteger(value)) throw new OptionError(`Option '${key}' must be a whole number`);
    if (spec.ctx && value !== -1 && value < 1) throw new OptionError(`Option '${key}' must be a positive whole number or -1`);
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
