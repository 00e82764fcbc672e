// The vllm recipe: vLLM's OpenAI-compatible server (`vllm serve`) for the catalog's safetensors
// checkpoints, each a whole Hugging Face repository with config.json at its root. Nothing is
// built or downloaded here: `system` runs the `vllm` on PATH, or the binary `vllm.system_bin`
// names in config.json. The model is served under its id, the name requests carry.
import { dirname } from "node:path";
import { splitArgs } from "../lib/args.ts";
import { checkReservedArgs, configuredBinary, configuredBinaryStatus, EngineConfigError, onPath, recipeStatus, systemBinaryStatus, type Recipe } from "./engine.ts";

const BINARY = "vllm";
const BACKENDS = ["auto", "system"];

/** Flags the server sets itself; users may not pass them in `vllm_args`. */
export const RESERVED_VLLM_FLAGS = ["--host", "--port", "--model", "--served-model-name"];

const checkUserArgs = (args: string[]) => checkReservedArgs("vllm_args", RESERVED_VLLM_FLAGS, args);

export const vllm: Recipe = {
  name: "vllm",
  displayName: "vLLM",
  backendOption: "vllm_backend",
  status: (env) =>
    recipeStatus({ system: env.binaries?.vllm?.system ? configuredBinaryStatus(env.binaries.vllm.system) : systemBinaryStatus(BINARY, env) }),

  checkOptions(options) {
    if (typeof options.vllm_args === "string") checkUserArgs(splitArgs(options.vllm_args));
    if (typeof options.vllm_backend === "string" && !BACKENDS.includes(options.vllm_backend)) {
      throw new EngineConfigError(`vllm backend '${options.vllm_backend}' is unknown (use ${BACKENDS.join(", ")})`);
    }
  },

  resolveBackend: () => "system",
  locate(backend, env) {
    const found = configuredBinary(env, "vllm", backend) ?? onPath(BINARY, env);
    if (!found) throw new EngineConfigError("vllm backend 'system' needs vllm on PATH (pip install vllm)");
    return found;
  },

  plan(binary, input) {
    const userArgs = splitArgs(String(input.options.vllm_args ?? ""));
    checkUserArgs(userArgs);
    return {
      argv: (port) => [binary, "serve", dirname(input.files.main!), "--host", "127.0.0.1", "--port", String(port), "--served-model-name", input.modelId, ...userArgs],
      healthPath: "/health",
      // vLLM loads the weights and captures its CUDA graphs before it listens.
      readyTimeoutMs: 600_000,
      // vLLM batches requests continuously; this many go to it at once, the rest wait here.
      slots: 16,
    };
  },
};
