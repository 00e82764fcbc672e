// The whispercpp recipe: whisper.cpp's whisper-server for speech to text. Its API is
// `/inference` (multipart), not OpenAI's path; protocols/whisper.ts speaks it.
import { cpSync } from "node:fs";
import { join } from "node:path";
import { splitArgs } from "../lib/args.ts";
import {
  checkAllowedArgs,
  type AllowedFlags,
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
  targets: ["whisper-server"],
};

/** Flags the server sets itself; users may not pass them in `whispercpp_args`. */
export const RESERVED_WHISPER_FLAGS = ["-m", "--model", "--port", "--host"];

/** The whisper-server flags users may pass in `whispercpp_args`, from its `--help` (true: it takes
 * a value): decoding, threads and the device. The rest reads or serves files the server does not
 * choose (`--public`, `--dtw`, `-vm`), moves its routes (`--request-path`, `--inference-path`),
 * runs ffmpeg (`--convert`) or exits before it is ready (`-h`, `-dl`). */
export const ALLOWED_WHISPER_FLAGS: AllowedFlags = {
  "-t": true, "--threads": true, "-p": true, "--processors": true,
  "-ot": true, "--offset-t": true, "-on": true, "--offset-n": true, "-d": true, "--duration": true,
  "-mc": true, "--max-context": true, "-ml": true, "--max-len": true, "-sow": false, "--split-on-word": false,
  "-bo": true, "--best-of": true, "-bs": true, "--beam-size": true, "-ac": true, "--audio-ctx": true,
  "-wt": true, "--word-thold": true, "-et": true, "--entropy-thold": true, "-lpt": true, "--logprob-thold": true,
  "-tr": false, "--translate": false, "-di": false, "--diarize": false, "-nf": false, "--no-fallback": false,
  "-nt": false, "--no-timestamps": false, "-l": true, "--language": true, "--prompt": true, "--carry-initial-prompt": false,
  "-sns": false, "--suppress-nst": false, "-nth": true, "--no-speech-thold": true,
  "-ng": false, "--no-gpu": false, "-dev": true, "--device": true, "-fa": false, "--flash-attn": false, "-nfa": false, "--no-flash-attn": false,
  "-nlp": false, "--no-language-probabilities": false,
};

const checkUserArgs = (args: string[]) => checkAllowedArgs("whispercpp_args", ALLOWED_WHISPER_FLAGS, RESERVED_WHISPER_FLAGS, args, "decoding, threads and device");

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
