// A small Hugging Face-compatible hub on loopback for the download tests: the file listing
// (`/api/models/<repo>/revision/<rev>?blobs=true`) and `resolve/<rev>/<file>` with Range
// requests, plus switches to drop a connection mid-file, report a wrong hash, or go slowly.
import { createHash } from "node:crypto";

export interface HubRepo {
  sha: string;
  files: Record<string, Uint8Array>;
}

export interface FakeHub {
  url: string;
  /** `Range` headers received, per file path. */
  ranges: Map<string, string[]>;
  /** The next request for this file stops after this many bytes, once. */
  dropOnce: Map<string, number>;
  /** Files whose listed sha256 is wrong. */
  wrongHash: Set<string>;
  /** Milliseconds to wait between 64 KiB chunks (0: as fast as possible). */
  delayMs: number;
  /** Sizes the listing claims instead of the files' own, per file path. */
  claimedSize: Map<string, number>;
  stop(): void;
}

export function sha256(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

export function startFakeHub(repos: Record<string, HubRepo>): FakeHub {
  const hub: Omit<FakeHub, "url" | "stop"> = { ranges: new Map(), dropOnce: new Map(), wrongHash: new Set(), delayMs: 0, claimedSize: new Map() };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const url = new URL(req.url);
      const path = decodeURIComponent(url.pathname);
      if (path === "/api/models") {
        const q = (url.searchParams.get("search") ?? "").toLowerCase();
        const hits = Object.keys(repos).filter((id) => id.toLowerCase().includes(q));
        return Response.json(
          hits.map((id) => ({ id, downloads: 10, likes: 1, tags: ["gguf"], pipeline_tag: "text-generation" })),
          { headers: { "x-total-count": String(hits.length) } },
        );
      }
      const listing = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/.exec(path);
      if (listing) {
        const repo = repos[listing[1]!];
        if (!repo) return Response.json({ error: "Repository not found" }, { status: 404 });
        return Response.json({
          id: listing[1],
          sha: repo.sha,
          siblings: Object.entries(repo.files).map(([rfilename, data]) => ({
            rfilename,
            size: hub.claimedSize.get(rfilename) ?? data.length,
            lfs: { sha256: hub.wrongHash.has(rfilename) ? "0".repeat(64) : sha256(data), size: hub.claimedSize.get(rfilename) ?? data.length },
          })),
        });
      }
      const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path);
      const repo = resolve && repos[resolve[1]!];
      const data = repo?.files[resolve![3]!];
      if (!resolve || !repo || !data || resolve[2] !== repo.sha) return new Response("Entry not found", { status: 404 });
      const file = resolve[3]!;
      const range = req.headers.get("range");
      hub.ranges.set(file, [...(hub.ranges.get(file) ?? []), range ?? ""]);
      const start = range ? Number(/bytes=(\d+)-/.exec(range)?.[1] ?? 0) : 0;
      const body = data.subarray(start);
      const drop = hub.dropOnce.get(file);
      if (drop !== undefined) hub.dropOnce.delete(file);
      const limit = drop === undefined ? body.length : Math.max(0, drop - start);
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (hub.delayMs) await Bun.sleep(hub.delayMs);
          if (sent >= limit) {
            // Past the drop point: let what was sent reach the client, then break the connection
            // instead of ending cleanly.
            if (limit < body.length) {
              await Bun.sleep(200);
              controller.error(new Error("connection dropped by the fake hub"));
            }
            else controller.close();
            return;
          }
          const end = Math.min(limit, sent + 65536);
          controller.enqueue(body.subarray(sent, end));
          sent = end;
        },
      });
      const headers: Record<string, string> = { "content-length": String(body.length), "content-type": "application/octet-stream" };
      if (range) headers["content-range"] = `bytes ${start}-${data.length - 1}/${data.length}`;
      return new Response(stream, { status: range ? 206 : 200, headers });
    },
  });
  // The same object the handler reads, so switches set by a test take effect.
  return Object.assign(hub, { url: `http://127.0.0.1:${server.port}`, stop: () => void server.stop(true) });
}
