// bench memory's runtime floor: an Elysia hello-world that does what a load, a chat and an unload
// need of Bun itself, and nothing of this server: it starts the FAKE llama-server as a child with
// its output piped and read line by line, polls its health with fetch, relays one streamed chat
// from it, and stops it; it runs with the server's JavaScriptCore settings (bench memory starts it
// so) and collects once quiet as the server does. What it keeps after 20 such cycles is what any
// server on this runtime that reaches its engines this way keeps; the server's own growth is
// what it keeps beyond that.
// Run: bun scripts/bench/runtime-floor.ts PORT MODEL (the FAKE engines first on PATH).
import { Elysia } from "elysia";
import { collectWhenIdle } from "../../app/idle-gc.ts";
import { freePort } from "../../engines/process.ts";
import { readLines } from "../../lib/lines.ts";

const [port, model] = process.argv.slice(2) as [string, string];

interface Engine {
  child: Bun.Subprocess<"ignore", "pipe", "pipe">;
  url: string;
}

let engine: Engine | null = null;
let requests = 0;

/** Reads a pipe to its end a line at a time with the server's own reader, keeping the last lines
 * as a server keeps an engine's log. */
async function drainLines(stream: ReadableStream<Uint8Array>, lines: string[]): Promise<void> {
  for await (const line of readLines(stream)) {
    lines.push(line);
    if (lines.length > 20) lines.shift();
  }
}

async function start(): Promise<void> {
  const enginePort = freePort();
  const child = Bun.spawn(["llama-server", "-m", model, "--port", String(enginePort)], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const lines: string[] = [];
  void drainLines(child.stdout, lines);
  void drainLines(child.stderr, lines);
  const url = `http://127.0.0.1:${enginePort}`;
  for (;;) {
    const ok = await fetch(`${url}/health`, { headers: { connection: "close" } }).then((r) => r.ok, () => false);
    if (ok) break;
    if (child.exitCode !== null) throw new Error(`the engine exited: ${lines.join("\n")}`);
    await Bun.sleep(5);
  }
  engine = { child, url };
}

new Elysia()
  .onRequest(() => void requests++)
  .get("/live", () => ({ status: "ok" }))
  .post("/load", async () => {
    await start();
    return { status: "success" };
  })
  .post("/chat", async ({ request }) => {
    const body = await request.text();
    const upstream = await fetch(`${engine!.url}/v1/chat/completions`, { method: "POST", body, headers: { "content-type": "application/json" } });
    return new Response(upstream.body, { status: upstream.status, headers: { "content-type": "text/event-stream" } });
  })
  .post("/unload", async () => {
    engine!.child.kill("SIGTERM");
    await engine!.child.exited;
    engine = null;
    return { status: "success" };
  })
  .listen({ hostname: "127.0.0.1", port: Number(port) });
collectWhenIdle(() => requests);
