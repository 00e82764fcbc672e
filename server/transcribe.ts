// POST /v1/audio/transcriptions: multipart in, whisper-server's /inference behind. Audio in any
// format ffmpeg reads is converted to the 16 kHz mono WAV whisper.cpp takes.
import type { ServerContext } from "./context.ts";
import { ApiError } from "./errors.ts";
import { engineFetch } from "./proxy.ts";

export const TRANSCRIPTION_FORMATS = ["json", "verbose_json", "text", "srt", "vtt"] as const;
type Format = (typeof TRANSCRIPTION_FORMATS)[number];

const CONTENT_TYPE: Record<Format, string> = {
  json: "application/json",
  verbose_json: "application/json",
  text: "text/plain; charset=utf-8",
  srt: "application/x-subrip; charset=utf-8",
  vtt: "text/vtt; charset=utf-8",
};

/** Any audio ffmpeg reads -> 16 kHz mono 16-bit WAV. */
async function toWav16k(audio: Blob): Promise<ArrayBuffer> {
  if (!Bun.which("ffmpeg")) return audio.arrayBuffer();
  const ff = Bun.spawn(["ffmpeg", "-hide_banner", "-loglevel", "error", "-i", "pipe:0", "-ar", "16000", "-ac", "1", "-c:a", "pcm_s16le", "-f", "wav", "pipe:1"], {
    stdin: audio,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [wav, err, code] = await Promise.all([new Response(ff.stdout).arrayBuffer(), new Response(ff.stderr).text(), ff.exited]);
  if (code !== 0) throw new ApiError(400, "invalid_argument", `The audio file could not be decoded: ${err.trim().split("\n").pop()}`, "file");
  return wav;
}

function field(form: FormData, name: string): string | undefined {
  const v = form.get(name);
  return typeof v === "string" && v !== "" ? v : undefined;
}

export async function transcribe(ctx: ServerContext, request: Request): Promise<Response> {
  if (!request.headers.get("content-type")?.toLowerCase().startsWith("multipart/form-data")) {
    throw new ApiError(400, "", "The request must be multipart/form-data with a 'file' and a 'model'");
  }
  let form: FormData;
  try {
    form = await request.formData();
  } catch (err) {
    throw new ApiError(400, "", `The multipart body could not be read: ${(err as Error).message}`);
  }
  const file = form.get("file");
  if (!(file instanceof Blob)) throw new ApiError(400, "missing_argument", "Missing required argument 'file'", "file");
  const name = field(form, "model");
  if (!name) throw new ApiError(400, "missing_argument", "Missing required argument 'model'", "model");
  const format = (field(form, "response_format") ?? "json") as Format;
  if (!TRANSCRIPTION_FORMATS.includes(format)) {
    throw new ApiError(400, "invalid_argument", `'response_format' must be one of ${TRANSCRIPTION_FORMATS.join(", ")}`, "response_format");
  }
  const temperature = field(form, "temperature");
  if (temperature !== undefined && !Number.isFinite(Number(temperature))) {
    throw new ApiError(400, "invalid_argument", "'temperature' must be a number", "temperature");
  }
  const model = ctx.catalog.get(name);
  if (model.type !== "transcription") {
    throw new ApiError(400, "", `Model ${model.id} cannot transcribe audio (its type is ${model.type})`, "model", "unsupported_operation");
  }
  const wav = await toWav16k(file);
  const lease = await ctx.router.acquire(model.id);
  try {
    const upstream = new FormData();
    upstream.set("file", new Blob([wav], { type: "audio/wav" }), "audio.wav");
    upstream.set("response_format", format);
    upstream.set("language", field(form, "language") ?? "auto");
    upstream.set("temperature", temperature ?? "0");
    const prompt = field(form, "prompt");
    if (prompt) upstream.set("prompt", prompt);
    let res: Response;
    try {
      res = await engineFetch(`${lease.url}/inference`, { method: "POST", body: upstream, signal: request.signal });
    } catch (err) {
      throw new ApiError(502, "backend_error", `The ${model.id} engine did not answer: ${(err as Error).message}`);
    }
    const body = await res.text();
    if (!res.ok) throw new ApiError(res.status, "", `Backend error: ${body}`);
    ctx.logger.info("Transcribe", `Transcribed ${(wav.byteLength / 32000).toFixed(1)} s of audio with ${model.id}`);
    return new Response(body, { headers: { "content-type": CONTENT_TYPE[format] } });
  } finally {
    lease.release();
  }
}
