// The CLI's load says what the server does before the model is ready: the engine install a load
// waits for (GET /v1/installs), then the weights. Against a stand-in server whose install advances
// with each look at it; no wall-clock assertions: the load answers once the install is seen done.
import { expect, test } from "bun:test";
import { Client } from "../../cli/client.ts";
import { loadWithPhases } from "../../cli/commands/models.ts";

test("a load that waits for its engine's install prints each install phase, then the weights, and the load's answer comes back", async () => {
  const steps = [
    [{ recipe: "llamacpp", backend: "cpu", phase: "download", percent: 12 }],
    [{ recipe: "llamacpp", backend: "cpu", phase: "build", percent: 47 }],
    [],
  ];
  let looks = 0;
  let release: () => void = () => {};
  const installed = new Promise<void>((resolve) => (release = resolve));
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const path = new URL(req.url).pathname;
      // The CLI sends the /api/v1 spelling, as Lemonade's does.
      if (path === "/api/v1/installs") {
        const now = steps[Math.min(looks++, steps.length - 1)]!;
        if (looks > steps.length) release();
        return Response.json(now);
      }
      if (path === "/api/v1/load") {
        await installed;
        return Response.json({ status: "success", message: "Loaded model: extra.tiny-chat" });
      }
      return new Response("not found", { status: 404 });
    },
  });
  try {
    const lines: string[] = [];
    const answer = await loadWithPhases(new Client({ host: "127.0.0.1", port: server.port! }), { model_name: "extra.tiny-chat" }, (l) => lines.push(l), 10);
    expect(answer.message).toBe("Loaded model: extra.tiny-chat");
    expect(lines).toEqual([
      "Loading extra.tiny-chat...",
      "Installing llamacpp (cpu): download, 10 %",
      "Installing llamacpp (cpu): build, 40 %",
      "Loading the weights of extra.tiny-chat...",
    ]);
  } finally {
    server.stop(true);
  }
});
