// The fewest tokens a request's prompt can take: a token is at most the vocabulary's longest
// token (in bytes), so N bytes of text are at least N / longest tokens whatever the tokenizer
// does. A prompt whose bound already exceeds the context is refused before an engine tokenises it.

/** The UTF-8 bytes of the text a chat or completion request sends: message contents (strings and
 * text parts) and a completion `prompt` (a string or strings). */
export function promptBytes(body: Record<string, unknown>): number {
  let bytes = 0;
  const text = (v: unknown) => {
    if (typeof v === "string") bytes += Buffer.byteLength(v);
    else if (Array.isArray(v)) for (const part of v) text(typeof part === "object" && part !== null ? (part as { text?: unknown }).text : part);
  };
  if (Array.isArray(body.messages)) for (const m of body.messages) if (typeof m === "object" && m !== null) text((m as { content?: unknown }).content);
  text(body.prompt);
  return bytes;
}

/** The fewest tokens `bytes` of text can tokenise to with a vocabulary whose longest token is `longest` bytes. */
export const minimumTokens = (bytes: number, longest: number) => Math.ceil(bytes / Math.max(1, longest));
