// POST /v1/audio/speech: checks the model and voice, then speaks with the built-in engine.
import type { ServerContext } from "./context.ts";
import { ApiError } from "./errors.ts";
import { CONTENT_TYPES, espeakVoice, SpeechError, synthesize, type SpeechFormat } from "../engines/speech.ts";

export interface SpeechRequest {
  model: string;
  input: string;
  voice?: string;
  speed?: number;
  response_format?: SpeechFormat;
  stream?: boolean;
  stream_format?: "audio";
}

export async function speak(ctx: ServerContext, body: SpeechRequest): Promise<Response> {
  const model = ctx.catalog.get(body.model);
  if (model.type !== "tts") {
    throw new ApiError(400, "model_not_applicable", `Model ${model.id} is not a text-to-speech model (its type is ${model.type})`, "model");
  }
  const voice = body.voice ?? "shimmer";
  if (!espeakVoice(voice)) {
    throw new ApiError(400, "invalid_argument", `Unknown voice '${voice}': use an OpenAI voice (alloy, ash, ...) or a Kokoro one (af_sky, am_echo, ...)`, "voice");
  }
  const streaming = body.stream === true || body.stream_format === "audio";
  const format: SpeechFormat = body.response_format ?? (streaming ? "pcm" : "mp3");
  let audio: ReadableStream<Uint8Array>;
  try {
    audio = synthesize(body.input, voice, body.speed ?? 1, format);
  } catch (err) {
    if (err instanceof SpeechError) throw new ApiError(500, "model_load_error", `Cannot speak with ${model.id}: ${err.message}`);
    throw err;
  }
  const headers = { "content-type": CONTENT_TYPES[format] };
  if (streaming) return new Response(audio, { headers });
  const bytes = new Uint8Array(await new Response(audio).arrayBuffer());
  if (bytes.length === 0) throw new ApiError(502, "", `${model.id} produced no audio`);
  ctx.logger.info("TTS", `Spoke ${body.input.length} characters with ${model.id} (${voice}, ${format}, ${bytes.length} bytes)`);
  return new Response(bytes, { headers });
}
