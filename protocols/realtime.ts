// Realtime transcription sessions (OpenAI Realtime's transcription protocol over a WebSocket):
// the client streams base64 PCM16 (16 kHz mono); server VAD (RMS energy) finds where speech
// starts and stops, and each finished turn, or an explicit commit, is transcribed by the
// session's Whisper model through the same whisper client as /v1/audio/transcriptions.
import { ApiError } from "../lib/api-error.ts";
import { isJson, type Json } from "../lib/json.ts";
import { E } from "../spec/errors.ts";
import type { ServerContext } from "../runtime/context.ts";
import { transcriptText } from "./whisper.ts";

const SAMPLE_RATE = 16000;
/** Interim transcripts while someone is still talking, at most this often. */
const INTERIM_EVERY_MS = 2000;
/** The most audio the input buffer holds (documented with the route): 10 minutes, about 19 MB. */
export const MAX_BUFFER_MS = 10 * 60 * 1000;

export interface TurnDetection {
  threshold: number;
  silence_duration_ms: number;
  prefix_padding_ms: number;
}

const DEFAULT_VAD: TurnDetection = { threshold: 0.01, silence_duration_ms: 800, prefix_padding_ms: 250 };

type Send = (message: Json) => void;

/** PCM16 samples -> a WAV file whisper.cpp reads. */
function wav(samples: Int16Array): Uint8Array<ArrayBuffer> {
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const h = Buffer.alloc(44);
  h.write("RIFF", 0);
  h.writeUInt32LE(36 + data.length, 4);
  h.write("WAVEfmt ", 8);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(SAMPLE_RATE, 24);
  h.writeUInt32LE(SAMPLE_RATE * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write("data", 36);
  h.writeUInt32LE(data.length, 40);
  const out = new Uint8Array(new ArrayBuffer(44 + data.length));
  out.set(h);
  out.set(data, 44);
  return out;
}

function rms(samples: Int16Array): number {
  if (!samples.length) return 0;
  let sum = 0;
  for (const s of samples) sum += (s / 32768) ** 2;
  return Math.sqrt(sum / samples.length);
}

export class RealtimeSession {
  readonly id = `sess_${crypto.randomUUID().replace(/-/g, "").slice(0, 24)}`;
  private model: string | null;
  private vad: TurnDetection | null = { ...DEFAULT_VAD };
  private chunks: Int16Array[] = [];
  private bufferedMs = 0;
  /** Total audio received, for the events' audio_start_ms / audio_end_ms. */
  private receivedMs = 0;
  private speaking = false;
  private speechMs = 0;
  private silenceMs = 0;
  private speechStartMs = 0;
  private lastInterimMs = 0;
  private interimBusy = false;
  private items = 0;
  /** Transcriptions run one at a time, in turn order. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly ctx: Pick<ServerContext, "catalog" | "proxy">,
    model: string | null,
    private readonly send: Send,
  ) {
    this.model = model;
    send({ type: "session.created", session: this.describe() });
  }

  private describe() {
    return { id: this.id, model: this.model, input_audio_format: "pcm16", turn_detection: this.vad };
  }

  private error(message: string, code = "invalid_request") {
    this.send({ type: "error", error: { type: "invalid_request_error", code, message } });
  }

  /** One client message; a WebSocket message is not checked against the route's schema, so its
   * fields are checked here. */
  handle(raw: unknown): void {
    let parsed: unknown = raw;
    if (typeof raw === "string") {
      try {
        parsed = JSON.parse(raw);
      } catch {
        return this.error("Messages must be JSON");
      }
    }
    const msg = isJson(parsed) ? parsed : {};
    switch (msg.type) {
      case "session.update":
        return this.update(isJson(msg.session) ? msg.session : {});
      case "input_audio_buffer.append":
        return this.append(msg.audio);
      case "input_audio_buffer.commit":
        return this.commit();
      case "input_audio_buffer.clear":
        this.reset();
        return this.send({ type: "input_audio_buffer.cleared" });
      default:
        return this.error(`Unknown message type: ${msg.type}`);
    }
  }

  private update(session: Json): void {
    // OpenAI's transcription sessions name the model in input_audio_transcription.
    const transcription = session.input_audio_transcription;
    const model = session.model ?? (isJson(transcription) ? transcription.model : undefined);
    if (typeof model === "string") this.model = model;
    const td = session.turn_detection;
    if (td === null) this.vad = null;
    else if (isJson(td)) {
      const next = { ...(this.vad ?? DEFAULT_VAD) };
      for (const k of Object.keys(DEFAULT_VAD) as (keyof TurnDetection)[]) {
        const value = td[k];
        if (value !== undefined) {
          if (typeof value !== "number" || value < 0) return this.error(`turn_detection.${k} must be a non-negative number`);
          next[k] = value;
        }
      }
      this.vad = next;
    }
    this.send({ type: "session.updated", session: this.describe() });
  }

  private reset(): void {
    this.chunks = [];
    this.bufferedMs = 0;
    this.speaking = false;
    this.speechMs = 0;
    this.silenceMs = 0;
    this.lastInterimMs = 0;
  }

  private append(audio: unknown): void {
    if (typeof audio !== "string") return this.error("input_audio_buffer.append needs 'audio': base64 PCM16");
    const bytes = Buffer.from(audio, "base64");
    const samples = new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + (bytes.length & ~1)));
    const ms = (samples.length / SAMPLE_RATE) * 1000;
    if (this.bufferedMs + ms > MAX_BUFFER_MS) {
      return this.error(`The input audio buffer is full (${MAX_BUFFER_MS / 60000} minutes): commit or clear it`, "input_audio_buffer_full");
    }
    this.chunks.push(samples);
    this.bufferedMs += ms;
    this.receivedMs += ms;
    if (!this.vad) return;
    const loud = rms(samples) >= this.vad.threshold;
    if (loud) {
      this.speechMs += ms;
      this.silenceMs = 0;
      if (!this.speaking && this.speechMs >= this.vad.prefix_padding_ms) {
        this.speaking = true;
        this.speechStartMs = this.receivedMs - this.speechMs;
        this.send({ type: "input_audio_buffer.speech_started", audio_start_ms: Math.round(this.speechStartMs), item_id: this.itemId(this.items + 1) });
      }
    } else if (this.speaking) {
      this.silenceMs += ms;
      if (this.silenceMs >= this.vad.silence_duration_ms) {
        this.send({ type: "input_audio_buffer.speech_stopped", audio_end_ms: Math.round(this.receivedMs - this.silenceMs), item_id: this.itemId(this.items + 1) });
        this.commit();
        return;
      }
    } else {
      // Quiet before any speech: keep only a short lead-in, not minutes of silence.
      this.speechMs = 0;
      while (this.bufferedMs > this.vad.prefix_padding_ms + 500 && this.chunks.length > 1) {
        this.bufferedMs -= (this.chunks.shift()!.length / SAMPLE_RATE) * 1000;
      }
    }
    if (this.speaking && this.bufferedMs - this.lastInterimMs >= INTERIM_EVERY_MS && !this.interimBusy) this.interim();
  }

  private itemId(n: number): string {
    return `item_${this.id.slice(5, 13)}_${n}`;
  }

  private take(): Int16Array {
    const total = this.chunks.reduce((n, c) => n + c.length, 0);
    const out = new Int16Array(total);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }

  /** A transcript of the turn so far, sent as a replaceable delta. */
  private interim(): void {
    this.interimBusy = true;
    this.lastInterimMs = this.bufferedMs;
    const itemId = this.itemId(this.items + 1);
    const audio = this.take();
    void this.transcribe(audio)
      .then((text) => {
        if (this.speaking) this.send({ type: "conversation.item.input_audio_transcription.delta", item_id: itemId, delta: text });
      })
      .catch(() => {})
      .finally(() => (this.interimBusy = false));
  }

  private commit(): void {
    if (!this.chunks.length) return this.error("The input audio buffer is empty", "input_audio_buffer_commit_empty");
    const itemId = this.itemId(++this.items);
    const audio = this.take();
    this.reset();
    this.send({ type: "input_audio_buffer.committed", item_id: itemId });
    this.queue = this.queue.then(async () => {
      try {
        const transcript = await this.transcribe(audio);
        this.send({ type: "conversation.item.input_audio_transcription.completed", item_id: itemId, content_index: 0, transcript });
      } catch (err) {
        this.send({
          type: "conversation.item.input_audio_transcription.failed",
          item_id: itemId,
          error: { type: "transcription_error", message: (err as Error).message },
        });
      }
    });
  }

  private async transcribe(audio: Int16Array): Promise<string> {
    if (!this.model) throw ApiError.of(E.missingArgument, "No model: connect with ?model=... or send session.update");
    return transcriptText(this.ctx, this.model, { wav: wav(audio) });
  }
}
