// OpenAI's audio routes. Transcription: multipart in, whisper-server behind (protocols/whisper.ts);
// audio in any format ffmpeg reads is converted to the 16 kHz mono WAV whisper.cpp takes.
// Speech: the model and voice are checked, then the model's engine speaks, or the in-process
// recipe that stands in for it (spec/recipes.ts `standIns`).
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import type { ServerContext } from "../runtime/context.ts";
import { SPEECH_CONTENT_TYPES, type SpeechFormat, type SpeechRequest } from "../spec/openai.ts";
import { enginePath, RECIPE_SPECS, serves } from "../spec/recipes.ts";
import { needsTranscriber, TRANSCRIPTION_FORMATS, whisperInference, type TranscriptionFormat as Format } from "./whisper.ts";

const CONTENT_TYPE: Record<Format, string> = {
  json: "application/json",
  verbose_json: "application/json",
  text: "text/plain; charset=utf-8",
  // As the real server sends them (the docs name no type for these).
  srt: "text/plain; charset=utf-8",
  vtt: "text/plain; charset=utf-8",
};

/** Any audio ffmpeg reads -> 16 kHz mono 16-bit WAV. */
export async function toWav16k(audio: Blob): Promise<ArrayBuffer> {
  if (!Bun.which("ffmpeg")) return audio.arrayBuffer();
  const ff = Bun.spawn(["ffmpeg", "-hide_banner", "-loglevel", "error", "-i", "pipe:0", "-ar", "16000", "-ac", "1", "-c:a", "pcm_s16le", "-f", "wav", "pipe:1"], {
    stdin: audio,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [wav, err, code] = await Promise.all([new Response(ff.stdout).arrayBuffer(), new Response(ff.stderr).text(), ff.exited]);
  if (code !== 0) throw ApiError.of(E.invalidArgument, `The audio file could not be decoded: ${err.trim().split("\n").pop()}`, "file");
  return wav;
}

/** The options a transcription request may load its model with: the backend and args of the
 * recipes that transcribe (`whispercpp_backend`, `whispercpp_args`). */
const TRANSCRIBER_LOAD_OPTIONS = Object.values(RECIPE_SPECS).flatMap((r) => (r.capabilities.transcribe ? Object.values(r.config?.options ?? {}) : []));

function loadOptionsOf(form: FormData): Record<string, unknown> | undefined {
  const options: Record<string, unknown> = {};
  for (const key of TRANSCRIBER_LOAD_OPTIONS) {
    const value = field(form, key);
    if (value !== undefined) options[key] = value;
  }
  return Object.keys(options).length ? options : undefined;
}

function field(form: FormData, name: string): string | undefined {
  const v = form.get(name);
  return typeof v === "string" && v !== "" ? v : undefined;
}

export async function transcribe(ctx: Pick<ServerContext, "catalog" | "config" | "logger" | "proxy">, request: Request): Promise<Response> {
  if (!request.headers.get("content-type")?.toLowerCase().startsWith("multipart/form-data")) {
    throw ApiError.of(E.notMultipart, "The request must be multipart/form-data with a 'file' and a 'model'");
  }
  if (Number(request.headers.get("content-length") ?? 0) > ctx.config.maxBodyBytes) {
    throw ApiError.of(E.payloadTooLarge, `The upload is larger than ${ctx.config.maxBodyBytes} bytes (LEMONADE_MAX_BODY_MB)`);
  }
  let form: FormData;
  try {
    form = await request.formData();
  } catch (err) {
    throw ApiError.of(E.unreadableMultipart, `The multipart body could not be read: ${(err as Error).message}`);
  }
  const file = form.get("file");
  if (!(file instanceof Blob)) throw ApiError.of(E.missingArgument, "Missing required argument 'file'", "file");
  const name = field(form, "model");
  if (!name) throw ApiError.of(E.missingArgument, "Missing required argument 'model'", "model");
  const format = (field(form, "response_format") ?? "json") as Format;
  if (!TRANSCRIPTION_FORMATS.includes(format)) {
    throw ApiError.of(E.invalidArgument, `'response_format' must be one of ${TRANSCRIPTION_FORMATS.join(", ")}`, "response_format");
  }
  const temperature = field(form, "temperature");
  if (temperature !== undefined && !Number.isFinite(Number(temperature))) {
    throw ApiError.of(E.invalidArgument, "'temperature' must be a number", "temperature");
  }
  const model = ctx.proxy.model(name, needsTranscriber);
  const wav = await toWav16k(file);
  const body = await whisperInference(ctx, model.id, {
    wav,
    format,
    language: field(form, "language"),
    temperature,
    prompt: field(form, "prompt"),
    signal: request.signal,
    loadOptions: loadOptionsOf(form),
  });
  ctx.logger.info("Transcribe", `Transcribed ${(wav.byteLength / 32000).toFixed(1)} s of audio with ${ctx.catalog.publicId(model)}`);
  return new Response(body, { headers: { "content-type": CONTENT_TYPE[format] } });
}

/** POST /v1/audio/speech (and omni's speech tool). */
export async function speak(ctx: Pick<ServerContext, "catalog" | "logger" | "proxy" | "standIns">, body: SpeechRequest, signal: AbortSignal = new AbortController().signal): Promise<Response> {
  const model = ctx.catalog.get(body.model);
  if (model.type !== "tts" || !serves(model.recipe, "speech")) {
    throw ApiError.of(E.modelNotApplicable, `Model ${ctx.catalog.publicId(model)} is not a text-to-speech model (its type is ${model.type})`, "model");
  }
  const voice = body.voice ?? "shimmer";
  const standIn = ctx.standIns.of(model, "speech");
  const inProcess = standIn?.kind === "in-process" ? standIn : null;
  // The stand-in's voices are the ones a client may name, whichever engine speaks.
  if (inProcess && !inProcess.knows(voice)) {
    throw ApiError.of(E.invalidArgument, `Unknown voice '${voice}': use an OpenAI voice (alloy, ash, ...) or a Kokoro one (af_sky, am_echo, ...)`, "voice");
  }
  const streaming = body.stream === true || body.stream_format === "audio";
  if (streaming && body.response_format !== undefined && body.response_format !== "pcm") {
    throw ApiError.of(E.invalidArgument, `Streaming produces \`pcm\` only: drop 'response_format' or set it to "pcm" (got "${body.response_format}")`, "response_format");
  }
  const format: SpeechFormat = body.response_format ?? (streaming ? "pcm" : "mp3");
  if (!inProcess || !ctx.standIns.serving(model, "speech")) {
    // The model's engine speaks (an OpenAI speech route, with the model name it expects), whole.
    const engine = RECIPE_SPECS[model.recipe]!.speech!;
    const res = await ctx.proxy.toModel({
      model: body.model,
      path: enginePath(model.recipe, "speech"),
      body: { model: engine.model, input: body.input, voice, speed: body.speed ?? 1, response_format: format, stream: false },
      raw: true,
      check: (m, named) => (m.type === "tts" ? null : ApiError.of(E.modelNotApplicable, `Model ${named(m)} is not a text-to-speech model`, "model")),
      signal,
      endpoint: "audio_speech",
      generation: false,
    });
    res.headers.set("x-lemonade-speech-engine", engine.engine);
    res.headers.set("content-type", SPEECH_CONTENT_TYPES[format]);
    ctx.logger.info("TTS", `Spoke ${body.input.length} characters with ${ctx.catalog.publicId(model)} on ${engine.engine} (${voice}, ${format})`);
    return res;
  }
  let audio: ReadableStream<Uint8Array>;
  try {
    audio = inProcess.synthesize(body.input, voice, body.speed ?? 1, format);
  } catch (err) {
    throw ApiError.of(E.modelLoadError, `Cannot speak with ${ctx.catalog.publicId(model)}: ${(err as Error).message}`);
  }
  const headers = { "content-type": SPEECH_CONTENT_TYPES[format], "x-lemonade-speech-engine": inProcess.name };
  if (streaming) return new Response(audio, { headers });
  const bytes = new Uint8Array(await new Response(audio).arrayBuffer());
  if (bytes.length === 0) throw ApiError.of(E.noAudio, `${ctx.catalog.publicId(model)} produced no audio`);
  ctx.logger.info("TTS", `Spoke ${body.input.length} characters with ${ctx.catalog.publicId(model)} (${voice}, ${format}, ${bytes.length} bytes)`);
  return new Response(bytes, { headers });
}
