// The sd-cpp recipe: stable-diffusion.cpp's sd-server. Neither its source nor a release can be
// obtained on these machines, so every backend reports why; image models are filtered out.
import { recipeStatus, unsupportedBackend, type Recipe } from "./engine.ts";

export const sdCpp: Recipe = {
  name: "sd-cpp",
  displayName: "stable-diffusion.cpp",
  status: () => recipeStatus({ cpu: unsupportedBackend("stable-diffusion.cpp cannot be obtained on this machine") }),
  checkOptions() {},
};
