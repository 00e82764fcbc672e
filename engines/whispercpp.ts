// The whispercpp recipe: whisper.cpp's whisper-server for speech to text. Its API is
// `/inference` (multipart), not OpenAI's path; protocols/whisper.ts speaks it.
import { cpSync } from "node:fs";
import { join } from "node:path";
import { splitArgs } from "../lib/args.ts";
import {
  checkReservedArgs,
  type BuildRecipe,
  type Recipe,
  type SourceBuiltEngine,
} from "./engine.ts";
import { autoBackend, locateSourceBuilt, sourceBuiltRecipeStatus } from "./source-build.ts";

export const WHISPERCPP: SourceBuiltEngine = {
  recipe: "whispercpp",
  binary: "whisper-server",
  version: "nodejs-whisper-0.3.1",
  description: "whisper.cpp",
};

const WHISPERCPP_BUILD: BuildRecipe = {
  engine: WHISPERCPP,
  npmPackage: "nodejs-whisper@0.3.1",
  async extract(pkg, dest) {
    cpSync(join(pkg, "cpp", "whisper.cpp"), dest, { recursive: true });
  },
  cmakeFlags: ["-DWHISPER_BUILD_TESTS=OFF", "-DWHISPER_SDL2=OFF", "-DBUILD_SHARED_LIBS=OFF"],
  target: "whisper-server",
};

/** Flags the server sets itself; users may not pass them in `whispercpp_args`. */
export const RESERVED_WHISPER_FLAGS = ["-m", "--model", "--port", "--host"];

const checkUserArgs = (args: string[]) => checkReservedArgs("whispercpp_args", RESERVED_WHISPER_FLAGS, args);

export const whispercpp: Recipe = {
  name: "whispercpp",
  displayName: "whisper.cpp",
  backendOption: "whispercpp_backend",
  builds: { cpu: WHISPERCPP_BUILD },

  status: (env) => sourceBuiltRecipeStatus(WHISPERCPP, env),

  checkOptions(options) {
    if (typeof options.whispercpp_args === "string") checkUserArgs(splitArgs(options.whispercpp_args));
  },

  /** `cpu` is the build in the cache, `system` the binary on PATH. */
  resolveBackend: (backend, env) => (backend === "auto" ? autoBackend(WHISPERCPP, env) : backend),
  locate: (backend, env) => locateSourceBuilt(WHISPERCPP, backend, env),

  plan(binary, input) {
    const userArgs = splitArgs(String(input.options.whispercpp_args ?? ""));
    checkUserArgs(userArgs);
    return {
      argv: (port) => [binary, "-m", input.files.main!, "--host", "127.0.0.1", "--port", String(port), ...userArgs],
      healthPath: "/health",
      readyTimeoutMs: 60_000,
      // whisper-server runs one inference at a time.
      slots: 1,
    };
  },
};
