// The kokoro recipe. Neural speech runs on Kokoros (`koko ... openai`, a server of its own) once
// its release is installed and the model's files are downloaded; until then espeak-ng (Debian)
// speaks and ffmpeg (Debian) resamples to 24 kHz mono and encodes, both per request as child
// processes with argv arrays (the text goes in on stdin, never on a command line).
import { SPEECH_SAMPLE_RATE as SAMPLE_RATE, type SpeechFormat } from "../spec/openai.ts";
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
import { releaseBackendStatus } from "./release-backends.ts";
import { installedRelease } from "./release-install.ts";

const FFMPEG_OUT: Record<SpeechFormat, string[]> = {
  mp3: ["-c:a", "libmp3lame", "-b:a", "64k", "-f", "mp3"],
  wav: ["-c:a", "pcm_s16le", "-f", "wav"],
  opus: ["-c:a", "libopus", "-b:a", "32k", "-f", "ogg"],
  pcm: ["-c:a", "pcm_s16le", "-f", "s16le"],
};

/** espeak-ng voices for OpenAI's and Kokoro's voice names (voice quality is espeak's, the
 * speaker's sex and accent follow the name). */
const OPENAI_VOICES: Record<string, string> = {
  alloy: "en-us+f2",
  ash: "en-us+m3",
  ballad: "en-gb+m2",
  coral: "en-us+f4",
  echo: "en-us+m1",
  fable: "en-gb+m3",
  onyx: "en-us+m7",
  nova: "en-us+f3",
  sage: "en-us+f1",
  shimmer: "en-us+f5",
  verse: "en-us+m4",
};

function espeakVoice(voice: string): string | null {
  if (OPENAI_VOICES[voice]) return OPENAI_VOICES[voice]!;
  const kokoro = /^([ab])([fm])_[a-z]+$/.exec(voice);
  if (!kokoro) return null;
  return `${kokoro[1] === "a" ? "en-us" : "en-gb"}+${kokoro[2] === "f" ? "f3" : "m3"}`;
}

class SpeechError extends Error {}

export function speechToolsMissing(): string | null {
  const missing = ["espeak-ng", "ffmpeg"].filter((b) => !Bun.which(b));
  return missing.length ? `${missing.join(" and ")} not found on PATH (Debian: apt-get install ${missing.join(" ")})` : null;
}

/** Speaks `text` and returns the encoded audio as a stream (flowing as it is produced). */
function synthesize(text: string, voice: string, speed: number, format: SpeechFormat): ReadableStream<Uint8Array> {
  const missing = speechToolsMissing();
  if (missing) throw new SpeechError(missing);
  const espeakVoiceName = espeakVoice(voice);
  if (!espeakVoiceName) throw new SpeechError(`unknown voice '${voice}'`);
  // espeak-ng's rate is words per minute; 175 is its normal pace.
  const wpm = String(Math.round(175 * speed));
  const espeak = Bun.spawn(["espeak-ng", "--stdout", "-v", espeakVoiceName, "-s", wpm], {
    stdin: new Blob([text]),
    stdout: "pipe",
    stderr: "ignore",
  });
  const ffmpeg = Bun.spawn(
    ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "wav", "-i", "pipe:0", "-ar", String(SAMPLE_RATE), "-ac", "1", ...FFMPEG_OUT[format], "pipe:1"],
    { stdin: espeak.stdout, stdout: "pipe", stderr: "pipe" },
  );
  return ffmpeg.stdout;
}

/** The in-process speech engine: protocols/audio reaches it as the context's `speech`. */
export const espeakSpeech = {
  engine: "espeak-ng",
  knows: (voice: string) => espeakVoice(voice) !== null,
  synthesize,
};

/** The neural engine: Kokoros' `koko` from the pinned release, when installed. */
export function kokorosBinary(env: EngineEnv): string | null {
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
