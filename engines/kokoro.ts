// The kokoro recipe: neural speech on Kokoros (`koko ... openai`, a server of its own) once its
// release is installed and the model's files are downloaded; until then the in-process espeak-ng
// recipe (engines/espeak.ts) speaks for it.
import { readFileSync } from "node:fs";
import { basename, dirname, isAbsolute, join } from "node:path";
import {
  configuredBinary,
  configuredBinaryStatus,
  EngineConfigError,
  NotInstalledError,
  recipeStatus,
  unsupportedBackend,
  type EngineEnv,
  type LaunchInput,
  type LaunchPlan,
  type Recipe,
} from "./engine.ts";
import { speechToolsMissing } from "./espeak.ts";
import { releaseBackendStatus } from "./release-backends.ts";
import { installedRelease } from "./release-install.ts";

/** The neural engine: Kokoros' `koko` from the pinned release, when installed. */
function kokorosBinary(env: EngineEnv): string | null {
  return configuredBinary(env, "kokoro", "cpu") ?? installedRelease(env.cacheDir, "kokoro", "cpu");
}

/** The model's ONNX weights and voices, as the repository's index.json names them. */
function modelFiles(indexPath: string): { model: string; voices: string } {
  let index: { model?: unknown; voices?: unknown };
  try {
    index = JSON.parse(readFileSync(indexPath, "utf8"));
  } catch (err) {
    throw new EngineConfigError(`${basename(indexPath)} of the kokoro model cannot be read: ${(err as Error).message}`);
  }
  const dir = dirname(indexPath);
  const inside = (name: unknown, what: string) => {
    if (typeof name !== "string" || !name || isAbsolute(name) || !isRelativeInside(name)) {
      throw new EngineConfigError(`index.json of the kokoro model names no usable ${what} file`);
    }
    return join(dir, name);
  };
  return { model: inside(index.model, "model"), voices: inside(index.voices, "voices") };
}

const isRelativeInside = (p: string) => !p.split(/[\\/]/).includes("..");

export const kokoro: Recipe = {
  name: "kokoro",
  displayName: "Kokoros",
  /** `cpu` is Kokoros (neural, from its release); `espeak` the embedded espeak-ng, which speaks
   * until Kokoros and the model's files are there. */
  status(env) {
    const missing = speechToolsMissing();
    return recipeStatus({
      cpu: env.binaries?.kokoro?.cpu ? configuredBinaryStatus(env.binaries.kokoro.cpu) : releaseBackendStatus("kokoro", "cpu", env),
      espeak: missing ? unsupportedBackend(missing) : { devices: ["cpu"], state: "installed", message: "", action: "", version: "espeak-ng" },
    });
  },
  checkOptions() {},
  resolveBackend: () => "cpu",
  locate(_backend, env) {
    const binary = kokorosBinary(env);
    if (!binary) throw new NotInstalledError("Kokoros is not installed: run `lemonade backends install kokoro:cpu`");
    return binary;
  },
  plan(binary: string, input: LaunchInput): LaunchPlan {
    const { model, voices } = modelFiles(input.files.main!);
    const dir = dirname(binary);
    return {
      argv: (port) => [binary, "-m", model, "-d", voices, "--instances", "1", "openai", "--ip", "127.0.0.1", "--port", String(port)],
      // The release carries its espeak-ng data and shared libraries beside the binary.
      env: { ESPEAK_DATA_PATH: join(dir, "espeak-ng-data"), LD_LIBRARY_PATH: [dir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(":") },
      healthPath: "/",
      readyTimeoutMs: 60_000,
      slots: 1,
    };
  },
};
