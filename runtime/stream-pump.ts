// The stream pump: reads an engine's event stream (SSE, as every engine and provider sends it) and
// writes the client's, passed through byte for byte or turned into the client's protocol by a
// translator, in the client's framing (SSE or NDJSON). The framer owns what the protocol does not
// say itself: the opening bytes that make the headers go out, a keep-alive after each interval
// without output (only between events, never inside one), and the one error event a stream that
// fails after its headers ends with.
import { E } from "../spec/errors.ts";
import { ApiError } from "../lib/api-error.ts";
import type { Clock } from "../lib/clock.ts";
import { clientClosed } from "./transport.ts";

/** How a client protocol's stream is framed on the wire. */
export interface Framer {
  headers: Record<string, string>;
  /** Written as soon as the stream is accepted: Bun sends a response's headers with its first bytes. */
  opening: string;
  /** The keep-alive written after each interval without output. */
  ping: string;
  /** The one event a stream that fails after its headers were sent ends with. */
  error(err: ApiError): string;
}

/** Server-sent events: the opening is an SSE comment, which every client skips. */
export function sseFramer(error: (err: ApiError) => string, ping = ": ping\n\n"): Framer {
  return { headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" }, opening: ": ping\n\n", ping, error };
}

/** Newline-delimited JSON, as Ollama streams. Its keep-alive is a space: clients (the `ollama`
 * packages, Ollama's own CLI) parse each line as JSON, and leading whitespace is valid JSON, where
 * a blank line is not. */
export function ndjsonFramer(error: (err: ApiError) => string): Framer {
  return { headers: { "content-type": "application/x-ndjson" }, opening: " ", ping: " ", error };
}

/** Turns one engine event stream into the client's, event by event. An ApiError thrown from
 * `event` fails the stream with that error (an engine's error event, for a protocol that reports
 * it in its own shape). */
export interface StreamTranslator {
  /** One engine event's `data` → the text to send for it (`""` for nothing). */
  event(data: string): string;
  /** Once the engine's stream has closed: what ends the client's, or null when it stopped short. */
  end(): string | null;
}

/** How one client protocol's stream is made from the engine's: its framing, and either the
 * engine's events passed through (with how to tell they ended) or a translator. */
export type StreamRule = { framer: Framer } & (
  | {
      /** Called with the last chunks of an engine stream that closed: `""` when it ended whole, the
       * text that completes it when the engine leaves its last line out, or null when it stopped short. */
      ending(tail: string): string | null;
      translate?: undefined;
    }
  | { translate(): StreamTranslator; ending?: undefined }
);

/** What the pump needs from the exchange it streams for. */
export interface StreamSource {
  /** The model as log lines and error messages name it (the id the API lists it by). */
  readonly modelName: string;
  readonly clientGone: boolean;
  /** The engine's answer, ok (after a replay, sent again); throws the ApiError the client gets when
   * there is none. */
  open(): Promise<Response>;
  /** The engine broke off before its first byte: throws unless the request may go again. */
  replay(): Promise<void>;
  /** The error for a stream that stopped short after some of it reached the client. */
  stoppedShort(): ApiError;
  /** The hang watchdog while the engine is read; returns its stop. */
  watch(): () => void;
  /** Engine output arrived (`first`: its first chunk). */
  heard(first: boolean, chunk: Uint8Array): void;
  /** The engine request ends without a clean finish: stop it, so its slot is really free. */
  abandon(): void;
  /** The client started reading the body. */
  reading(): void;
  /** The client cancelled the stream. */
  cancelled(): void;
  /** The stream is over: the status it ended with and the engine's last text (for timings), or
   * the error it failed with. */
  end(status: number, tail?: string, error?: string): void;
  warn(message: string): void;
}

export interface PumpOptions {
  clock: Clock;
  /** Silence (ms) after which a keep-alive is written. */
  pingMs: number;
}

/** Chunks kept to read the final timings from: they arrive in the last event or two. */
const TAIL_CHUNKS = 4;

type Sink = { write(c: Uint8Array | string): void; flush(): void; close(): void };

/** The client's stream response: opening, keep-alives while the engine is silent, the engine's
 * events as they come (or their translation), one error event if it fails, and the end. */
export function pump(rule: StreamRule, src: StreamSource, { clock, pingMs }: PumpOptions): Response {
  const { framer } = rule;
  let lastWrite = clock.now();
  let atBoundary = true;
  let over = false;
  let stopTicking = () => {};
  let sink: Sink | undefined;
  const write = (chunk: Uint8Array | string) => {
    sink!.write(chunk);
    sink!.flush();
  };
  const tick = () => {
    if (over) return;
    const now = clock.now();
    // Inside an event the engine has half sent, look again an interval on: its rest is output too,
    // which moves the next keep-alive past that check anyway.
    if (!atBoundary) {
      stopTicking = clock.after(pingMs, tick);
      return;
    }
    if (now - lastWrite >= pingMs - 1) {
      lastWrite = now;
      try {
        write(framer.ping);
      } catch {
        return;
      }
    }
    stopTicking = clock.after(Math.max(1, lastWrite + pingMs - now), tick);
  };
  // The engine's last chunks as passed through, kept for a client that leaves before the engine's
  // stream has closed.
  const sentTail: Uint8Array[] = [];
  // A client that stops reading at the answer's end (many stop at `[DONE]`, `lemonade run` among
  // them) got the whole answer, though it may leave before the engine's stream has closed: the
  // request is counted as answered, not as one the client left.
  const leftAt = (): [number, string | undefined] => {
    const text = decodeTail(sentTail);
    return rule.ending?.(text) === "" ? [200, text] : [499, undefined];
  };
  const finish = (status: number, tail?: string, error?: string) => {
    over = true;
    stopTicking();
    src.end(status, tail, error);
  };
  const body = new ReadableStream({
    type: "direct",
    async pull(controller: Sink) {
      src.reading();
      sink = controller;
      let status = 200;
      let tail: string | undefined;
      let error: string | undefined;
      try {
        write(framer.opening);
        lastWrite = clock.now();
        stopTicking = clock.after(pingMs, tick);
        let res = await src.open();
        for (;;) {
          status = res.status;
          const out = await pipe(res, rule, src, sentTail, (chunk, boundary) => {
            lastWrite = clock.now();
            atBoundary = boundary;
            write(chunk);
          });
          if (out.sent || !out.broken) {
            if (out.broken) throw src.stoppedShort();
            tail = out.tail;
            break;
          }
          // Broke off before its first byte: the engine is gone, so the request may go again.
          await src.replay();
          res = await src.open();
        }
      } catch (err) {
        if (src.clientGone) {
          [status, tail] = leftAt();
        } else {
          const apiErr = err instanceof ApiError ? err : ApiError.of(E.backendStopped, `The ${src.modelName} engine stopped answering`);
          status = apiErr.status;
          error = apiErr.message;
          src.warn(`Stream from ${src.modelName} failed: ${apiErr.message}`);
          try {
            write(framer.error(apiErr));
          } catch {
            // The client is gone too.
          }
        }
      }
      finish(status, tail, error);
      try {
        controller.close();
      } catch {
        // Already closed by a client that went away.
      }
    },
    cancel() {
      src.cancelled();
      finish(...leftAt());
    },
  } as unknown as UnderlyingDefaultSource<Uint8Array>);
  return new Response(body, { status: 200, headers: framer.headers });
}

/** Reads the engine's stream into `write`, passed through or translated. `sent`: whether any of
 * it reached the client; `broken`: whether it stopped short. */
async function pipe(
  res: Response,
  rule: StreamRule,
  src: StreamSource,
  tail: Uint8Array[],
  write: (chunk: Uint8Array | string, boundary: boolean) => void,
) {
  const reader = res.body!.getReader();
  const translator = rule.translate?.();
  // One decoder per stream: a decoder keeps a split character's bytes for its next call.
  const decoder = new TextDecoder();
  tail.length = 0;
  let sent = false;
  let pending = "";
  // Whether the bytes so far end with a newline, for an event end split across chunks.
  let endsNewline = false;
  const stopWatch = src.watch();
  const abandon = () => {
    reader.cancel().catch(() => {});
    src.abandon();
  };
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch {
        // The engine broke off (or the client left, which aborted the engine request).
        abandon();
        if (src.clientGone) throw clientClosed();
        return { sent, broken: true, tail: undefined };
      }
      if (chunk.done) break;
      const value = chunk.value;
      src.heard(!sent, value);
      sent = true;
      if (!translator) {
        const n = value.length;
        const boundary = value[n - 1] === 10 && (n > 1 ? value[n - 2] === 10 : endsNewline);
        endsNewline = value[n - 1] === 10;
        write(value, boundary);
        // Kept once written: what the client was sent is what tells a whole answer.
        keep(tail, value);
        continue;
      }
      keep(tail, value);
      const blocks = (pending + decoder.decode(value, { stream: true })).split("\n\n");
      pending = blocks.pop()!;
      let out = "";
      for (const block of blocks) {
        const data = sseData(block);
        if (data !== null) out += translator.event(data);
      }
      if (out) write(out, true);
    }
    if (translator && pending.trim()) {
      // The last event, without its blank line (or with CRLF line ends).
      const data = sseData(pending.replace(/\r/g, ""));
      if (data !== null) write(translator.event(data), true);
    }
  } catch (err) {
    // A write to a client that left, or a translator failing on an event: the engine is fine,
    // and its request ends here.
    abandon();
    if (src.clientGone) throw clientClosed();
    if (err instanceof ApiError) throw err;
    throw ApiError.of(E.unexpected, `The ${src.modelName} stream could not be passed on: ${(err as Error).message}`);
  } finally {
    stopWatch();
  }
  const tailText = decodeTail(tail);
  const ending = rule.translate ? translator!.end() : rule.ending(tailText);
  if (ending === null) {
    abandon();
    return { sent, broken: true, tail: undefined };
  }
  if (ending) write(ending, true);
  return { sent, broken: false, tail: tailText };
}

function keep(tail: Uint8Array[], chunk: Uint8Array): void {
  tail.push(chunk);
  if (tail.length > TAIL_CHUNKS) tail.shift();
}

/** The last chunks as text: each decoded alone, as a split character at the start does not matter
 * to the timings and end markers read from them. */
function decodeTail(tail: Uint8Array[]): string {
  return tail.map((c) => new TextDecoder().decode(c)).join("");
}

/** The data of one SSE block (its `data:` lines joined), or null for a comment-only block. */
function sseData(block: string): string | null {
  let data: string | null = null;
  for (const line of block.split("\n")) {
    if (line.startsWith("data:")) {
      const part = line.slice(line[5] === " " ? 6 : 5);
      data = data === null ? part : `${data}\n${part}`;
    }
  }
  return data;
}
