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
