// The whispercpp recipe: find whisper-server, start it on a model. Its API is `/inference`
// (multipart), not OpenAI's path; server/transcribe.ts speaks it.
import { cachedBinary, WHISPERCPP } from "./recipes.ts";
import { checkReservedArgs, EngineConfigError, startEngine, type LineSink, type RunningEngine } from "./process.ts";
import type { EngineRegistry } from "./orphans.ts";

/** Flags the server sets itself; users may not pass them in `whispercpp_args`. */
export const RESERVED_WHISPER_FLAGS = ["-m", "--model", "--port", "--host"];

export function checkWhisperArgs(args: string[]): void {
  checkReservedArgs("whispercpp_args", RESERVED_WHISPER_FLAGS, args);
}

export function locateWhisperServer(cacheDir: string, backend: string): string {
  if (backend === "system") {
    const found = Bun.which(WHISPERCPP.binary);
    if (!found) throw new EngineConfigError("whispercpp backend 'system' needs whisper-server on PATH");
    return found;
  }
  if (backend !== "cpu") throw new EngineConfigError(`whispercpp backend '${backend}' is not available on this system (use cpu or system)`);
  const cached = cachedBinary(cacheDir, WHISPERCPP);
  if (!cached) {
    throw new EngineConfigError("whisper.cpp is not installed: run `lemonade backends install whispercpp:cpu` (or POST /v1/install)");
  }
  return cached;
}

export function startWhisperServer(
  binary: string,
  modelPath: string,
  userArgs: string[],
  onLine: LineSink,
  registry?: EngineRegistry,
  readyTimeoutMs = 60_000,
): Promise<RunningEngine> {
  checkWhisperArgs(userArgs);
  const argv = (port: number) => [binary, "-m", modelPath, "--host", "127.0.0.1", "--port", String(port), ...userArgs];
  return startEngine(argv, "/health", onLine, readyTimeoutMs, registry);
}
