// Line-by-line reading of a byte stream (engine output, build logs).

/** The lines of a byte stream as they arrive (the last one even without a newline); ends
 * quietly when the pipe closes under a dying process. */
export async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = "";
  try {
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
      const lines = (rest + decoder.decode(chunk, { stream: true })).split("\n");
      rest = lines.pop()!;
      yield* lines;
    }
  } catch {
    // The pipe closes when the child dies; nothing more to read.
  }
  if (rest) yield rest;
}
