// `lemonade worker`'s composition: llama.cpp's rpc-server from an installed llama.cpp backend
// (a GPU release first, as a worker lends its best devices; then the source build) behind the
// TLS link of engines/rpc-worker.ts.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { LLAMACPP, RPC_SERVER_BINARY } from "../engines/llamacpp.ts";
import { GPU_BACKENDS } from "../engines/release-backends.ts";
import { installedRelease } from "../engines/release-install.ts";
import { engineDir } from "../engines/source-build.ts";
import { startWorker, type RunningWorker, type WorkerOptions } from "../engines/rpc-worker.ts";

export type { RunningWorker };

/** The rpc-server beside an installed llama-server, or null. Releases name it `rpc-server` or,
 * as the pinned source does, `ggml-rpc-server`. */
export function rpcServerBinary(cacheDir: string): string | null {
  const releases = [...GPU_BACKENDS, "cpu"].map((b) => installedRelease(cacheDir, LLAMACPP.recipe, b)).filter((p): p is string => !!p);
  for (const dir of [...releases.map((p) => dirname(p)), engineDir(cacheDir, LLAMACPP)]) {
    for (const name of [RPC_SERVER_BINARY, "rpc-server"]) if (existsSync(join(dir, name))) return join(dir, name);
  }
  return null;
}

export function runWorker(opts: Omit<WorkerOptions, "rpcBinary"> & { rpcBinary?: string; cacheDir: string }): Promise<RunningWorker> {
  const { cacheDir, ...rest } = opts;
  const rpcBinary = opts.rpcBinary ?? rpcServerBinary(cacheDir);
  if (!rpcBinary) {
    throw new Error(`llama.cpp's rpc-server is not installed in ${cacheDir}: run \`lemonade backends install ${LLAMACPP.recipe}:cpu\` (it builds llama-server and rpc-server)`);
  }
  return startWorker({ ...rest, rpcBinary });
}
