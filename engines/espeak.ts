// The espeak-ng recipe, of the in-process kind: it speaks for kokoro models until Kokoros and the
// model's files are there (spec/recipes.ts `standIns`). espeak-ng (Debian) speaks and ffmpeg
// (Debian) resamples to 24 kHz mono and encodes, both per request as child processes with argv
// arrays (the text goes in on stdin, never on a command line).
import { SPEECH_SAMPLE_RATE as SAMPLE_RATE, type SpeechFormat } from "../spec/openai.ts";
import type { InProcessRecipe } from "./engine.ts";

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

export const espeak: InProcessRecipe = {
  kind: "in-process",
  name: "espeak-ng",
  displayName: "espeak-ng",
  knows: (voice) => espeakVoice(voice) !== null,
  synthesize,
};
