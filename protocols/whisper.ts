// The one client of whisper-server's `/inference` endpoint (multipart WAV in, the transcript in
// the asked format out), shared by /v1/audio/transcriptions, realtime sessions and MCP.
import { ApiError } from "../lib/api-error.ts";
import { isJson } from "../lib/json.ts";
import { E } from "../spec/errors.ts";
import { engineError, engineUnavailable } from "../runtime/engine-error.ts";
import type { ServerContext } from "../runtime/context.ts";
import type { ModelCheck } from "../runtime/request.ts";
import { engineFetch } from "../runtime/transport.ts";
import { enginePath, serves } from "../spec/recipes.ts";

export const TRANSCRIPTION_FORMATS = ["json", "verbose_json", "text", "srt", "vtt"] as const;
export type TranscriptionFormat = (typeof TRANSCRIPTION_FORMATS)[number];

export const needsTranscriber: ModelCheck = (model, named) =>
  model.type === "transcription" && serves(model.recipe, "transcribe")
    ? null
    : ApiError.of(E.cannotTranscribe, `Model ${named(model)} cannot transcribe audio (its type is ${model.type})`, "model");

export interface Inference {
  /** 16 kHz mono 16-bit WAV. */
  wav: Uint8Array<ArrayBuffer> | ArrayBuffer;
  format: TranscriptionFormat;
  language?: string;
  temperature?: string;
  prompt?: string;
  signal?: AbortSignal;
  /** Recipe options for the load, when this request triggers one (`whispercpp_backend`, `whispercpp_args`). */
  loadOptions?: Record<string, unknown>;
}

/** Transcribes with a Whisper model (loading it when needed); the engine's answer as text. */
export async function whisperInference(ctx: Pick<ServerContext, "catalog" | "proxy">, name: string, req: Inference): Promise<string> {
  const lease = await ctx.proxy.acquire(name, needsTranscriber, { signal: req.signal, options: req.loadOptions });
  try {
    const form = new FormData();
    form.set("file", new Blob([req.wav], { type: "audio/wav" }), "audio.wav");
    form.set("response_format", req.format);
    form.set("language", req.language ?? "auto");
    form.set("temperature", req.temperature ?? "0");
    if (req.prompt) form.set("prompt", req.prompt);
    let res: Response;
    try {
      res = await engineFetch(`${lease.url}${enginePath(lease.instance.model.recipe, "transcribe")}`, { method: "POST", body: form, signal: req.signal });
    } catch {
      if (req.signal?.aborted) throw ApiError.of(E.clientClosed, "The client closed the request");
      throw engineUnavailable(ctx.catalog.publicId(lease.instance.model), "did not answer");
    }
    const body = await res.text();
    if (!res.ok) throw engineError(res.status, body, ctx.catalog.publicId(lease.instance.model));
    return body;
  } finally {
    lease.release();
  }
}

/** The transcript's text alone. */
export async function transcriptText(ctx: Pick<ServerContext, "catalog" | "proxy">, name: string, req: Omit<Inference, "format">): Promise<string> {
  const body: unknown = JSON.parse(await whisperInference(ctx, name, { ...req, format: "json" }));
  return String((isJson(body) ? body.text : undefined) ?? "").trim();
}
