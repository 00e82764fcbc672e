// `lemonade worker`'s composition: the llama.cpp build's rpc-server (built or installed as a
// `llamacpp:cpu` backend is) behind the TLS link of engines/rpc-worker.ts.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { LLAMACPP } from "../engines/llamacpp.ts";
import { RPC_SERVER_BINARY } from "../engines/llamacpp.ts";
import { engineDir } from "../engines/source-build.ts";
import { startWorker, type RunningWorker, type WorkerOptions } from "../engines/rpc-worker.ts";

export type { RunningWorker };

/** The rpc-server beside the llama-server build in the cache, or null. */
export function rpcServerBinary(cacheDir: string): string | null {
  const path = join(engineDir(cacheDir, LLAMACPP), RPC_SERVER_BINARY);
  return existsSync(path) ? path : null;
}

export function runWorker(opts: Omit<WorkerOptions, "rpcBinary"> & { rpcBinary?: string; cacheDir: string }): Promise<RunningWorker> {
  const rpcBinary = opts.rpcBinary ?? rpcServerBinary(opts.cacheDir);
  if (!rpcBinary) {
    throw new Error(`llama.cpp's rpc-server is not built in ${opts.cacheDir}: run \`lemonade backends install llamacpp:cpu\` (it builds llama-server and rpc-server)`);
  }
  return startWorker({ ...opts, rpcBinary });
}
