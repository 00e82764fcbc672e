// The cloud recipe: the "engine" is an OpenAI-compatible server somewhere else, reached at the
// base URL its provider was installed with (models/cloud.ts keeps providers and keys). Nothing
// starts here, so the recipe declares its status and how an engine path maps onto the upstream.
import { recipeStatus, type Recipe } from "./engine.ts";

export const cloud: Recipe = {
  name: "cloud",
  displayName: "cloud provider",
  status() {
    return recipeStatus({ cloud: { devices: [], state: "installed", message: "", action: "", version: "openai-compatible" } });
  },
  checkOptions() {},
};

/** The upstream URL for an engine path: the provider's base URL ends where `/v1` does
 * (`https://api.example.com/inference/v1` + `/v1/chat/completions` -> `.../inference/v1/chat/completions`). */
export function upstreamUrl(baseUrl: string, enginePath: string): string {
  return baseUrl + enginePath.replace(/^\/v1(?=\/)/, "");
}
