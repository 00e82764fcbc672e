// The recipes this server runs: register a new recipe by adding it to this list (its spec
// entries go in spec/recipes.ts).
import type { EngineEnv, Recipe, RecipeStatus } from "./engine.ts";
import { llamacpp } from "./llamacpp.ts";
import { whispercpp } from "./whispercpp.ts";
import { kokoro } from "./kokoro.ts";
import { sdCpp } from "./sd-cpp.ts";
import { onnxruntime } from "./onnxruntime.ts";
import { cloud } from "./cloud.ts";

export const RECIPES: readonly Recipe[] = [llamacpp, whispercpp, kokoro, sdCpp, onnxruntime, cloud];

export function findRecipe(recipes: readonly Recipe[], name: string): Recipe | undefined {
  return recipes.find((r) => r.name === name);
}

/** Every recipe's backends as `/v1/system-info` reports them, read fresh from disk and PATH. */
export function recipeStatuses(recipes: readonly Recipe[], env: EngineEnv): Record<string, RecipeStatus> {
  return Object.fromEntries(recipes.map((r) => [r.name, r.status(env)]));
}
