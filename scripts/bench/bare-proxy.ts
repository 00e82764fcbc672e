// bench proxy's runtime floor: a bare Bun proxy that relays each POST to one engine URL and streams
// its answer back chunk by chunk through a direct ReadableStream, as the server's stream pump
// writes, with nothing else: no routing, validation, queue or accounting. What it adds to an
// engine's time to first token is what any proxy on this runtime adds; the server's own share is
// what it adds beyond that. It runs with the server's JavaScriptCore settings (bench proxy starts it so).
// Run: bun scripts/bench/bare-proxy.ts PORT ENGINE_URL
import { engineFetch } from "../../runtime/transport.ts";

const [port, upstream] = process.argv.slice(2) as [string, string];

Bun.serve({
  hostname: "127.0.0.1",
  port: Number(port),
  async fetch(request) {
    // Anything but a POST is the bench asking whether it listens yet.
    if (request.method !== "POST") return new Response("ok");
    const res = await engineFetch(upstream, { method: "POST", body: await request.text(), headers: { "content-type": "application/json" } });
    const reader = res.body!.getReader();
    const body = new ReadableStream({
      type: "direct",
      async pull(controller: { write(chunk: Uint8Array): void; flush(): void; close(): void }) {
        for (let part = await reader.read(); !part.done; part = await reader.read()) {
          controller.write(part.value);
          controller.flush();
        }
        controller.close();
      },
    } as unknown as UnderlyingDefaultSource<Uint8Array>);
    return new Response(body, { status: res.status, headers: { "content-type": "text/event-stream" } });
  },
});
