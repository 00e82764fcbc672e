// The recipes (engine families) this server knows, their backends, and the state of each backend on
// this machine: whether its binary is built into the cache, found on PATH, or cannot run here.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { speechToolsMissing } from "./speech.ts";

export type BackendState = "unsupported" | "installable" | "update_required" | "installed";

export interface BackendStatus {
  devices: string[];
  state: BackendState;
  message: string;
  action: string;
  version?: string;
}

export interface RecipeStatus {
  default_backend?: string;
  backends: Record<string, BackendStatus>;
}

/** An engine built from source that the npm registry ships, cached per version. */
export interface SourceBuiltEngine {
  recipe: string;
  binary: string;
  /** Identifies the source the binary is built from; a cached build of another version is stale. */
  version: string;
  description: string;
}

export const LLAMACPP: SourceBuiltEngine = {
  recipe: "llamacpp",
  binary: "llama-server",
  version: "node-llama-cpp-3.21.1",
  description: "llama.cpp",
};

export const WHISPERCPP: SourceBuiltEngine = {
  recipe: "whispercpp",
  binary: "whisper-server",
  version: "nodejs-whisper-0.3.1",
  description: "whisper.cpp",
};

/** Where a source-built engine's binaries live: `<cache>/bin/<recipe>/<version>/`. */
export function engineDir(cacheDir: string, engine: SourceBuiltEngine, version = engine.version): string {
  return join(cacheDir, "bin", engine.recipe, version);
}

export function cachedBinary(cacheDir: string, engine: SourceBuiltEngine): string | null {
  const path = join(engineDir(cacheDir, engine), engine.binary);
  return existsSync(path) ? path : null;
}

function sourceBuiltStatus(cacheDir: string, engine: SourceBuiltEngine, backend: string): BackendStatus {
  if (cachedBinary(cacheDir, engine)) {
    return { devices: ["cpu"], state: "installed", message: "", action: "", version: engine.version };
  }
  return {
    devices: ["cpu"],
    state: "installable",
    message: `${engine.description} is not built yet; installing builds it from source (a few minutes)`,
    action: `lemonade backends install ${engine.recipe}:${backend}`,
    version: engine.version,
  };
}

function systemBinaryStatus(binary: string): BackendStatus {
  const found = Bun.which(binary);
  return found
    ? { devices: ["cpu"], state: "installed", message: "", action: "", version: `system (${found})` }
    : {
        devices: [],
        state: "unsupported",
        message: `No ${binary} on PATH`,
        action: "",
      };
}

/** The built-in speech engine: espeak-ng speaks, ffmpeg encodes; both are Debian packages. */
function speechStatus(): BackendStatus {
  const missing = speechToolsMissing();
  return missing
    ? { devices: [], state: "unsupported", message: missing, action: "" }
    : { devices: ["cpu"], state: "installed", message: "", action: "", version: "espeak-ng" };
}

function unsupported(message: string): BackendStatus {
  return { devices: [], state: "unsupported", message, action: "" };
}

function recipe(backends: Record<string, BackendStatus>): RecipeStatus {
  const usable = Object.entries(backends).find(([, b]) => b.state === "installed") ??
    Object.entries(backends).find(([, b]) => b.state !== "unsupported");
  return usable ? { default_backend: usable[0], backends } : { backends };
}

/** Every recipe's backends as `/v1/system-info` reports them, read fresh from disk and PATH. */
export function recipeStatuses(cacheDir: string): Record<string, RecipeStatus> {
  return {
    llamacpp: recipe({
      cpu: sourceBuiltStatus(cacheDir, LLAMACPP, "cpu"),
      system: systemBinaryStatus(LLAMACPP.binary),
    }),
    whispercpp: recipe({
      cpu: sourceBuiltStatus(cacheDir, WHISPERCPP, "cpu"),
      system: systemBinaryStatus(WHISPERCPP.binary),
    }),
    kokoro: recipe({ cpu: speechStatus() }),
    "sd-cpp": recipe({
      cpu: unsupported("stable-diffusion.cpp cannot be obtained on this machine"),
    }),
  };
}
