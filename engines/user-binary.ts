// Recipes whose engine is a binary the user supplies: no release or source build is fetched for
// it here. A backend runs the binary config.json's `<section>.<backend>_bin` names (as sd-cpp's
// do), or `system`, the binary on PATH; `auto` is the first configured backend, else `system`.
import { checkReservedArgs, configuredBinary, configuredBinaryStatus, EngineConfigError, onPath, recipeStatus, systemBinaryStatus, type EngineCall, type EngineEnv, type LaunchInput, type LaunchPlan, type Recipe } from "./engine.ts";
import { statSync } from "node:fs";
import { dirname } from "node:path";
import { splitArgs } from "../lib/args.ts";
import type { Capability } from "../spec/recipes.ts";

/** The backends such a recipe's option accepts: `auto`, `system`, and those a binary can be named for. */
const BACKENDS = ["auto", "system", "cpu", "vulkan", "rocm", "cuda", "metal"];

export interface UserBinaryEngine {
  name: string;
  displayName: string;
  /** The config.json section whose `<backend>_bin` keys name the binary. */
  section: string;
  /** The binary's name on PATH, e.g. `trellis-server`. */
  binary: string;
  backendOption: string;
  /** The recipe option with the user's extra arguments, and the flags the server sets (refused there). */
  args?: { option: string; reserved: string[] };
  /** The command line for the model, the binary and port given, before the user's arguments. */
  argv(binary: string, port: number, input: LaunchInput): string[];
  /** How long the engine may take to load the model and listen. */
  readyTimeoutMs: number;
  generate: Partial<Record<Capability, EngineCall>>;
}

export function userBinaryRecipe(engine: UserBinaryEngine): Recipe {
  const configured = (env: EngineEnv) => env.binaries?.[engine.section] ?? {};
  const resolveBackend = (backend: string, env: EngineEnv) => (backend === "auto" ? (Object.keys(configured(env))[0] ?? "system") : backend);
  const userArgs = (options: Record<string, unknown>) => {
    if (!engine.args) return [];
    const args = splitArgs(String(options[engine.args.option] ?? ""));
    checkReservedArgs(engine.args.option, engine.args.reserved, args);
    return args;
  };
  return {
    name: engine.name,
    displayName: engine.displayName,
    backendOption: engine.backendOption,
    generate: engine.generate,
    status: (env) =>
      recipeStatus({
        system: systemBinaryStatus(engine.binary, env),
        ...Object.fromEntries(Object.entries(configured(env)).map(([backend, path]) => [backend, configuredBinaryStatus(path)])),
      }),
    checkOptions(options) {
      userArgs(options);
      const backend = options[engine.backendOption];
      if (typeof backend === "string" && !BACKENDS.includes(backend)) {
        throw new EngineConfigError(`${engine.name} backend '${backend}' is unknown (use ${BACKENDS.join(", ")})`);
      }
    },
    resolveBackend,
    locate(backend, env) {
      const resolved = resolveBackend(backend, env);
      const own = configuredBinary(env, engine.section, resolved);
      if (own) return own;
      if (resolved === "system") {
        const found = onPath(engine.binary, env);
        if (!found) throw new EngineConfigError(`${engine.name} backend 'system' needs ${engine.binary} on PATH, or config.json's ${engine.section}.<backend>_bin naming it`);
        return found;
      }
      throw new EngineConfigError(`${engine.name} backend '${resolved}' has no binary: ${engine.displayName} cannot be obtained on this machine; name yours in config.json's ${engine.section}.${resolved}_bin, or put ${engine.binary} on PATH and use 'system'`);
    },
    plan(binary, input): LaunchPlan {
      const extra = userArgs(input.options);
      return {
        argv: (port) => [...engine.argv(binary, port, input), ...extra],
        healthPath: "/health",
        readyTimeoutMs: engine.readyTimeoutMs,
        // One generation at a time: each of these engines holds one pipeline.
        slots: 1,
      };
    },
  };
}

/** The folder of GGUFs a checkpoint names (its files' folder, or itself). */
export function modelFolder(main: string): string {
  try {
    return statSync(main).isDirectory() ? main : dirname(main);
  } catch {
    return dirname(main);
  }
}

/** The engine's error text from a failed answer: its JSON `error` (object or string), else the status. */
export async function engineErrorText(res: Response, what: string): Promise<string> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: unknown };
    const error = body.error;
    if (typeof error === "string") return error;
    if (typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string") return (error as { message: string }).message;
  } catch {
    // Not JSON: the status says it.
  }
  return `${what} failed (HTTP ${res.status})`;
}
