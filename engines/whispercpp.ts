// The whispercpp recipe: find whisper-server, start it on a model. Its API is `/inference`
// (multipart), not OpenAI's path; server/transcribe.ts speaks it.
import { cachedBinary, WHISPERCPP } from "./recipes.ts";
import { EngineProcess, freePort, type LineSink } from "./process.ts";
import { EngineConfigError, type RunningEngine } from "./llamacpp.ts";

/** Flags the server sets itself; users may not pass them in `whispercpp_args`. */
export const RESERVED_WHISPER_FLAGS = ["-m", "--model", "--port", "--host"];

export function checkWhisperArgs(args: string[]): void {
  for (const a of args) {
    const flag = a.split("=")[0]!;
    if (RESERVED_WHISPER_FLAGS.includes(flag)) {
      throw new EngineConfigError(`whispercpp_args may not contain ${flag}: the server sets it (reserved: ${RESERVED_WHISPER_FLAGS.join(" ")})`);
    }
  }
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

export async function startWhisperServer(
  binary: string,
  modelPath: string,
  userArgs: string[],
  onLine: LineSink,
  readyTimeoutMs = 60_000,
): Promise<RunningEngine> {
  checkWhisperArgs(userArgs);
  const port = freePort();
  const argv = [binary, "-m", modelPath, "--host", "127.0.0.1", "--port", String(port), ...userArgs];
  const proc = new EngineProcess({ argv, onLine });
  const url = `http://127.0.0.1:${port}`;
  try {
    await proc.waitReady(`${url}/health`, readyTimeoutMs);
  } catch (err) {
    await proc.stop(1000);
    throw err;
  }
  return { process: proc, url, argv };
}
