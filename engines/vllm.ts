// The vllm recipe: vLLM's OpenAI-compatible server (`vllm serve`) for the catalog's safetensors
// checkpoints, each a whole Hugging Face repository with config.json at its root. Nothing is
// built or downloaded here: `system` runs the `vllm` on PATH, or the binary `vllm.system_bin`
// names in config.json. The model is served under its id, the name requests carry.
import { dirname } from "node:path";
import { splitArgs } from "../lib/args.ts";
import { checkAllowedArgs, configuredBinary, configuredBinaryStatus, EngineConfigError, onPath, recipeStatus, systemBinaryStatus, type AllowedFlags, type Recipe } from "./engine.ts";

const BINARY = "vllm";
const BACKENDS = ["auto", "system"];

/** Flags the server sets itself; users may not pass them in `vllm_args`. */
export const RESERVED_VLLM_FLAGS = ["--host", "--port", "--model", "--served-model-name"];

/** The `vllm serve` flags users may pass in `vllm_args`, from its `--help` (true: it takes a
 * value): memory, parallelism, precision and scheduling. The rest loads code or files the server
 * does not choose (`--trust-remote-code`, `--chat-template`, `--lora-modules`), serves other
 * models or reaches the network. */
export const ALLOWED_VLLM_FLAGS: AllowedFlags = {
  "--max-model-len": true, "--gpu-memory-utilization": true, "--swap-space": true, "--cpu-offload-gb": true,
  "--kv-cache-dtype": true, "--block-size": true, "--enable-prefix-caching": false, "--no-enable-prefix-caching": false,
  "--tensor-parallel-size": true, "-tp": true, "--pipeline-parallel-size": true, "-pp": true, "--data-parallel-size": true,
  "--dtype": true, "--quantization": true, "-q": true, "--enforce-eager": false, "--max-num-seqs": true,
  "--max-num-batched-tokens": true, "--enable-chunked-prefill": false, "--no-enable-chunked-prefill": false, "--seed": true,
  "--disable-log-stats": false, "--disable-log-requests": false,
};

const checkUserArgs = (args: string[]) => checkAllowedArgs("vllm_args", ALLOWED_VLLM_FLAGS, RESERVED_VLLM_FLAGS, args, "memory, parallelism, precision and scheduling");

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
