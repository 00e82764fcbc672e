// Reading the server's streamed answers: server-sent events (OpenAI, Anthropic, Lemonade's pull
// and install progress) and NDJSON (Ollama), each event typed from the document's event schema.
import type { LemonadeClient } from "./client.ts";
import type { paths } from "./schema.ts";

/** One server-sent event: its `event:` name (`message` when it has none) and its JSON data. */
export interface SseEvent<T> {
  event: string;
  data: T;
}

/** An error answer, or the error event a stream ended with: `body` is the route's error schema. */
export class StreamError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(typeof body === "object" && body !== null ? JSON.stringify(body) : String(body));
    this.name = "StreamError";
  }
}

async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  // A reader rather than `for await` over the stream, which not every browser has.
  const reader = body.getReader();
  let buffer = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n")) >= 0) {
        yield buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
      }
    }
    buffer += decoder.decode();
    if (buffer) yield buffer;
    // The last event may end with the stream instead of a blank line.
    yield "";
  } finally {
    // A reader that stops early (`[DONE]`, `break`) lets the server end the request.
    await reader.cancel().catch(() => {});
  }
}

const isError = (event: string, data: unknown) => event === "error" || (typeof data === "object" && data !== null && "error" in data && !("object" in data));

/** The events of a `text/event-stream` answer, until `data: [DONE]` or its end. Keep-alive
 * comments are skipped; an `error` event (or OpenAI's `{"error": ...}` data) throws StreamError. */
export async function* sseEvents<T>(response: Response): AsyncGenerator<SseEvent<T>> {
  if (!response.body) return;
  let event = "";
  let data: string[] = [];
  for await (const line of lines(response.body)) {
    if (line === "") {
      if (data.length) {
        const text = data.join("\n");
        if (text === "[DONE]") return;
        const parsed = JSON.parse(text) as unknown;
        if (isError(event, parsed)) throw new StreamError(response.status, parsed);
        yield { event: event || "message", data: parsed as T };
      }
      event = "";
      data = [];
    } else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    else if (line.startsWith("event:")) event = line.slice(6).trim();
  }
}

/** The lines of an `application/x-ndjson` answer; a line carrying `error` throws StreamError. */
export async function* ndjsonLines<T>(response: Response): AsyncGenerator<T> {
  if (!response.body) return;
  for await (const line of lines(response.body)) {
    if (!line.trim()) continue;
    const parsed = JSON.parse(line) as unknown;
    if (typeof parsed === "object" && parsed !== null && "error" in parsed && typeof parsed.error === "string") throw new StreamError(response.status, parsed);
    yield parsed as T;
  }
}

type Post<P extends keyof paths> = paths[P] extends { post: infer O } ? O : never;
type StreamContent<P extends keyof paths> = Post<P> extends { responses: { 200: { content: infer C } } } ? C : never;

/** One event of a route's stream, from the document's `text/event-stream` or NDJSON schema. */
export type StreamEvent<P extends keyof paths> =
  StreamContent<P> extends { "text/event-stream": infer E } ? E : StreamContent<P> extends { "application/x-ndjson": infer E } ? E : never;

/** The POST routes that stream. */
export type StreamPath = { [P in keyof paths]: [StreamEvent<P>] extends [never] ? never : P }[keyof paths];

type Body<P extends keyof paths> = Post<P> extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;

/** POSTs `body` with `stream: true` and yields each event's data as the route's event schema.
 * An error answer throws StreamError carrying the route's error body. */
export async function* stream<P extends StreamPath>(client: LemonadeClient, path: P, body: Body<P>, init: { signal?: AbortSignal } = {}): AsyncGenerator<StreamEvent<P>> {
  const post = client.POST as unknown as (path: string, init: { body: unknown; parseAs: "stream"; signal?: AbortSignal }) => Promise<{ response: Response; error?: unknown }>;
  // openapi-fetch reads an error answer's body itself, into `error`.
  const { response, error } = await post(path, { body: { ...(body as object), stream: true }, parseAs: "stream", signal: init.signal });
  if (!response.ok) throw new StreamError(response.status, error ?? null);
  const ndjson = response.headers.get("content-type")?.includes("ndjson");
  if (ndjson) yield* ndjsonLines<StreamEvent<P>>(response);
  else for await (const { data } of sseEvents<StreamEvent<P>>(response)) yield data;
}
