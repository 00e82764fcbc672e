// Server-Sent Events for long server-side jobs (installs, downloads): named events with JSON data.

export type SendEvent = (event: string, data: unknown) => void;

/** Runs `job`, streaming the events it sends; a throw becomes a final `error` event. */
export function sseResponse(job: (send: SendEvent) => Promise<void>): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      let open = true;
      const send: SendEvent = (event, data) => {
        if (open) controller.enqueue(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
      };
      try {
        await job(send);
      } catch (err) {
        send("error", { error: (err as Error).message });
      }
      open = false;
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}

/** Reads a Server-Sent Events body: each event's name (`message` when unnamed) and its data. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder();
  let rest = "";
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    const blocks = (rest + decoder.decode(chunk, { stream: true })).split("\n\n");
    rest = blocks.pop()!;
    for (const block of blocks) {
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) yield { event, data: data.join("\n") };
    }
  }
}
