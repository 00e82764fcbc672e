// The llamacpp recipe: find llama-server, turn a model and its options into an argv, start it.
import { cachedBinary, LLAMACPP } from "./recipes.ts";
import { checkReservedArgs, EngineConfigError, startEngine, type LineSink, type RunningEngine } from "./process.ts";
import type { EngineRegistry } from "./orphans.ts";

/** Flags the server sets itself; users may not pass them in `llamacpp_args`. */
export const RESERVED_LLAMA_FLAGS = [
  "-m", "--model", "--port", "--host", "-c", "--ctx-size", "-ngl", "--n-gpu-layers", "--gpu-layers",
  "--jinja", "-mm", "--mmproj", "--embedding", "--embeddings", "--reranking", "--rerank",
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
}

/** Splits a flag string the way a shell would for plain words and quotes, without running a shell. */
export function splitArgs(text: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : (m[2] ?? m[3]!));
  return out;
}

export function checkUserArgs(args: string[]): void {
  checkReservedArgs("llamacpp_args", RESERVED_LLAMA_FLAGS, args);
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
  return [...argv, ...launch.userArgs];
}

/** The llama-server binary for a backend: `cpu` is the one built into the cache, `system` the one on PATH. */
export function locateLlamaServer(cacheDir: string, backend: string): string {
  if (backend === "system") {
    const found = Bun.which(LLAMACPP.binary);
    if (!found) throw new EngineConfigError("llamacpp backend 'system' needs llama-server on PATH");
    return found;
  }
  if (backend !== "cpu") throw new EngineConfigError(`llamacpp backend '${backend}' is not available on this system (use cpu or system)`);
  const cached = cachedBinary(cacheDir, LLAMACPP);
  if (!cached) {
    throw new EngineConfigError("llama.cpp is not installed: run `lemonade backends install llamacpp:cpu` (or POST /v1/install)");
  }
  return cached;
}

export function startLlamaServer(
  binary: string,
  launch: LlamaLaunch,
  onLine: LineSink,
  registry?: EngineRegistry,
  readyTimeoutMs = 120_000,
): Promise<RunningEngine> {
  return startEngine((port) => llamaArgv(binary, port, launch), "/health", onLine, readyTimeoutMs, registry);
}
