// The llamacpp recipe: llama.cpp's llama-server for LLMs, embeddings and rerankers. Where its
// binary is per backend, how it is built from source, and the argv a model starts with (add a
// llama-server flag in `llamaArgv`).
import { tmpdir } from "node:os";
import { join } from "node:path";
import { splitArgs } from "../lib/args.ts";
import {
  checkReservedArgs,
  type BuildRecipe,
  type LaunchInput,
  type LaunchPlan,
  type Recipe,
  type SourceBuiltEngine,
} from "./engine.ts";
import { autoBackend, locateSourceBuilt, sourceBuiltRecipeStatus } from "./source-build.ts";

export const LLAMACPP: SourceBuiltEngine = {
  recipe: "llamacpp",
  binary: "llama-server",
  version: "node-llama-cpp-3.21.1",
  description: "llama.cpp",
};

const LLAMACPP_BUILD: BuildRecipe = {
  engine: LLAMACPP,
  npmPackage: "node-llama-cpp@3.21.1",
  async extract(pkg, dest, run) {
    await run(["git", "clone", "--quiet", join(pkg, "llama", "gitRelease.bundle"), dest], tmpdir());
  },
  cmakeFlags: [
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    // One self-contained binary: a shared build would carry its build folder as RUNPATH.
    "-DBUILD_SHARED_LIBS=OFF",
  ],
  target: "llama-server",
};

/** Flags the server sets itself; users may not pass them in `llamacpp_args`. */
export const RESERVED_LLAMA_FLAGS = [
  "-m", "--model", "--port", "--host", "-c", "--ctx-size", "-ngl", "--n-gpu-layers", "--gpu-layers",
  "--jinja", "-mm", "--mmproj", "--embedding", "--embeddings", "--reranking", "--rerank",
  "--metrics", "--threads-http", "--no-webui", "--webui", "--ui", "--no-ui", "--slot-save-path", "--reuse-port",
  // These would break the proxy: another path prefix, a key it does not send, TLS.
  "--api-prefix", "--path", "--api-key", "--api-key-file", "--ssl-key-file", "--ssl-cert-file",
  // Set through the llamacpp_device option.
  "--device", "-dev",
];

/** Flags that write files outside the model's own folders, let the engine read arbitrary local
 * files, reach the network, run tools or serve other models: refused in `llamacpp_args`. */
export const UNSAFE_LLAMA_FLAGS = [
  "--log-file", "--prompt-cache", "--prompt-cache-all", "--logits-output-dir", "--media-path",
  "--tools", "--tools-runtime", "--mcp-servers-config", "--mcp-servers-json", "--ui-mcp-proxy", "--webui-mcp-proxy",
  "--rpc", "-hf", "-hfr", "--hf-repo", "-hff", "--hf-file", "-hfd", "-hfrd", "--hf-repo-draft", "-mu", "--model-url",
  "-dr", "--docker-repo", "--models-dir", "--models-preset", "--models-max", "--models-autoload",
];

export type LlamaMode = "llm" | "embedding" | "reranking";

export interface LlamaLaunch {
  modelPath: string;
  mmprojPath?: string;
  mode: LlamaMode;
  ctxSize: number;
  /** Extra flags, already split into argv words. */
  userArgs: string[];
  /** Where `/slots/{id}?action=save|restore` files live. */
  slotSavePath?: string;
  /** `llamacpp_device`: llama-server's `--device` list (e.g. `Vulkan0`); empty leaves its default. */
  device?: string;
}

function checkUserArgs(args: string[]): void {
  checkReservedArgs("llamacpp_args", RESERVED_LLAMA_FLAGS, args);
  checkReservedArgs("llamacpp_args", UNSAFE_LLAMA_FLAGS, args, "it writes or reads files outside the model's folders, reaches the network or runs tools");
}

/** llama-server's parallel slots: `-np`/`--parallel` when the user sets it, else its own default
 * (auto: 4 slots sharing one unified KV cache, so each request may still use the whole context). */
export function parallelSlots(userArgs: string[]): number {
  for (let i = 0; i < userArgs.length; i++) {
    const [flag, inline] = userArgs[i]!.split("=");
    if (flag === "-np" || flag === "--parallel") {
      const n = Number(inline ?? userArgs[i + 1]);
      if (Number.isInteger(n) && n > 0) return n;
    }
  }
  return 4;
}

export function llamaArgv(binary: string, port: number, launch: LlamaLaunch): string[] {
  checkUserArgs(launch.userArgs);
  const argv = [binary, "-m", launch.modelPath, "--host", "127.0.0.1", "--port", String(port), "--ctx-size", String(launch.ctxSize)];
  // llama-server serves each connection on a thread that a kept-alive idle connection holds for
  // seconds; its default pool (slots + 4) stalls a burst of concurrent clients, so give it room.
  argv.push("--jinja", "--metrics", "--no-webui", "--threads-http", "64");
  if (launch.mode === "embedding") argv.push("--embeddings");
  if (launch.mode === "reranking") argv.push("--reranking");
  if (launch.mmprojPath) argv.push("--mmproj", launch.mmprojPath);
  if (launch.slotSavePath) argv.push("--slot-save-path", launch.slotSavePath);
  if (launch.device) argv.push("--device", launch.device);
  return [...argv, ...launch.userArgs];
}

export const llamacpp: Recipe = {
  name: "llamacpp",
  displayName: "llama.cpp",
  backendOption: "llamacpp_backend",
  builds: { cpu: LLAMACPP_BUILD },

  status: (env) => sourceBuiltRecipeStatus(LLAMACPP, env),

  checkOptions(options) {
    if (typeof options.llamacpp_args === "string") checkUserArgs(splitArgs(options.llamacpp_args));
  },

  /** `cpu` is the build in the cache, `system` the binary on PATH. */
  resolveBackend: (backend, env) => (backend === "auto" ? autoBackend(LLAMACPP, env) : backend),
  locate: (backend, env) => locateSourceBuilt(LLAMACPP, backend, env),

  plan(binary: string, input: LaunchInput): LaunchPlan {
    const launch: LlamaLaunch = {
      modelPath: input.files.main!,
      mmprojPath: input.files.mmproj,
      mode: input.type === "embedding" || input.type === "reranking" ? input.type : "llm",
      ctxSize: input.ctxSize,
      userArgs: splitArgs(String(input.options.llamacpp_args ?? "")),
      slotSavePath: input.workDir,
      device: String(input.options.llamacpp_device ?? ""),
    };
    return { argv: (port) => llamaArgv(binary, port, launch), healthPath: "/health", readyTimeoutMs: 120_000, slots: parallelSlots(launch.userArgs) };
  },
};
