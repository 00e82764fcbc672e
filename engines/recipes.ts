// The recipes this server runs: register a new recipe by adding it to this list (its spec
// entries go in spec/recipes.ts).
import { RECIPE_SPECS, type Capability } from "../spec/recipes.ts";
import { isServer, recipeStatus, unsupportedBackend, type AnyRecipe, type EngineCall, type EngineEnv, type InProcessRecipe, type OneShotRecipe, type Recipe, type RecipeStatus } from "./engine.ts";
import { llamacpp } from "./llamacpp.ts";
import { whispercpp } from "./whispercpp.ts";
import { kokoro } from "./kokoro.ts";
import { espeak } from "./espeak.ts";
import { sdCli, sdCpp } from "./sd-cpp.ts";
import { onnxruntime } from "./onnxruntime.ts";
import { cloud } from "./cloud.ts";
import { vllm } from "./vllm.ts";
import { trellis } from "./trellis.ts";
import { acestep } from "./acestep.ts";
import { thinksound } from "./thinksound.ts";

export const RECIPES: readonly AnyRecipe[] = [llamacpp, whispercpp, kokoro, espeak, sdCpp, sdCli, onnxruntime, vllm, trellis, acestep, thinksound, cloud];

/** The engine call a server recipe serves `capability` with, when it has its own (engine.ts `generate`). */
export function engineCall(recipes: readonly AnyRecipe[], recipe: string, capability: Capability): EngineCall | undefined {
  return findRecipe(recipes, recipe)?.generate?.[capability];
}

/** The recipes whose engines are server processes: what the launcher starts and `/v1/system-info`
 * lists (an in-process or one-shot recipe reports through the recipe it stands in for). */
export const serverRecipes = (recipes: readonly AnyRecipe[]): Recipe[] => recipes.filter(isServer);

export function findRecipe(recipes: readonly AnyRecipe[], name: string): Recipe | undefined {
  return serverRecipes(recipes).find((r) => r.name === name);
}

/** Lemonade's recipes this server has no engine for, with the backends Lemonade offers each: listed
 * by `/v1/system-info`, unsupported, so that a client finds every recipe it knows, with its state. */
const NOT_SERVED: Record<string, { displayName: string; backends: string[] }> = {
  flm: { displayName: "FastFlowLM NPU", backends: ["npu"] },
  "ryzenai-llm": { displayName: "Ryzen AI LLM", backends: ["npu"] },
  moonshine: { displayName: "Moonshine", backends: ["cpu"] },
  openmoss: { displayName: "OpenMOSS TTS", backends: ["cuda", "vulkan", "rocm"] },
  thenoise: { displayName: "TheNoise ROCm", backends: ["rocm"] },
};

/** Every recipe's backends as `/v1/system-info` reports them (the server recipes' read fresh from
 * disk and PATH), Lemonade's recipes this server does not run among them. */
export function recipeStatuses(recipes: readonly AnyRecipe[], env: EngineEnv): Record<string, RecipeStatus> {
  const served = Object.fromEntries(serverRecipes(recipes).map((r) => [r.name, r.status(env)]));
  const others = Object.entries(NOT_SERVED)
    .filter(([name]) => !(name in served))
    .map(([name, r]) => [name, recipeStatus(Object.fromEntries(r.backends.map((b) => [b, unsupportedBackend(`${r.displayName} (${name}) is not available in this server: its models cannot be loaded here`)])))]);
  return { ...served, ...Object.fromEntries(others) };
}

/** Whether a server recipe's engine can start here: its binary for the default backend is found. */
function installed(recipe: Recipe, env: EngineEnv): boolean {
  try {
    recipe.locate?.(recipe.resolveBackend?.("auto", env) ?? "auto", env);
    return recipe.locate !== undefined;
  } catch {
    return false;
  }
}

/** The recipe of another kind that stands in for the engine of `recipe`'s models for
 * `capability` (spec/recipes.ts `standIns`), whether or not it serves now. */
export function standInOf(recipes: readonly AnyRecipe[], recipe: string, capability: Capability): InProcessRecipe | OneShotRecipe | null {
  const by = RECIPE_SPECS[recipe]?.standIns?.[capability];
  const found = by === undefined ? undefined : recipes.find((r) => r.name === by);
  return found && !isServer(found) ? found : null;
}

/** Whether the stand-in serves now: the model's own engine lacks the capability, is not
 * installed here, or the model's files are not there yet. */
export function standInServes(recipes: readonly AnyRecipe[], env: EngineEnv, recipe: string, capability: Capability, filesThere: boolean): boolean {
  if (!standInOf(recipes, recipe, capability)) return false;
  const own = findRecipe(recipes, recipe);
  return RECIPE_SPECS[recipe]!.capabilities[capability] === undefined || !own || !filesThere || !installed(own, env);
}
