// Models from ModelScope, against a loopback stand-in that speaks its hub API as the official
// `modelscope` SDK calls it: the file list (`/api/v1/models/{id}/repo/files`), a file
// (`/api/v1/models/{id}/repo?Revision=&FilePath=`, with Range) and the website's search
// (`PUT /api/v1/dolphin/models`). The tiny chat model is pulled, listed, loaded and deleted.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const COMMIT = "e".repeat(40);
let chat: Uint8Array;
let ms: ReturnType<typeof Bun.serve>;
let server: TestServer;
const requests: string[] = [];

beforeAll(async () => {
  chat = new Uint8Array(readFileSync(join(testModelsDir(), MODELS.chat)));
  const files: Record<string, Uint8Array> = { "tiny-Q4_0.gguf": chat, "README.md": new TextEncoder().encode("# tiny\n") };
  ms = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      requests.push(`${req.method} ${url.pathname}${url.search}`);
      const list = /^\/api\/v1\/models\/([^/]+\/[^/]+)\/repo\/files$/.exec(url.pathname);
      if (list) {
        if (list[1] !== "test-org/tiny-GGUF") return Response.json({ Code: 10010205001, Message: "model not found", Success: false }, { status: 404 });
        return Response.json({
          Code: 200,
          Success: true,
          Message: "success",
          Data: {
            Files: [
              { Name: "sub", Path: "sub", Type: "tree", Size: 0, Revision: COMMIT },
              ...Object.entries(files).map(([path, data]) => ({ Name: path, Path: path, Type: "blob", Size: data.length, Sha256: createHash("sha256").update(data).digest("hex"), Revision: COMMIT })),
            ],
          },
        });
      }
      const file = /^\/api\/v1\/models\/([^/]+\/[^/]+)\/repo$/.exec(url.pathname);
      if (file) {
        const data = files[url.searchParams.get("FilePath") ?? ""];
        if (!data || url.searchParams.get("Revision") !== "master") return new Response("not found", { status: 404 });
        const range = req.headers.get("range");
        const start = range ? Number(/bytes=(\d+)-/.exec(range)![1]) : 0;
        return new Response(Buffer.from(data.subarray(start)), { status: range ? 206 : 200, headers: { "content-length": String(data.length - start) } });
      }
      if (url.pathname === "/api/v1/dolphin/models" && req.method === "PUT") {
        const body = await req.json();
        return Response.json({
          Code: 200,
          Success: true,
          Data: { Model: { TotalCount: 1, Models: String(body.Name).includes("tiny") ? [{ Path: "test-org", Name: "tiny-GGUF", Downloads: 42, Stars: 3, Tags: ["gguf"], Description: "A tiny model" }] : [] } },
        });
      }
      return new Response("not found", { status: 404 });
    },
  });
  server = await startTestServer({ MODELSCOPE_ENDPOINT: `http://127.0.0.1:${ms.port}` });
});

afterAll(async () => {
  await server?.close();
  ms?.stop(true);
});

const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });

test("a model registered with source modelscope downloads from ModelScope into its own cache, lists and chats", async () => {
  const res = await post("/v1/pull", { model_name: "user.MsTiny", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp", source: "modelscope" });
  expect(res.status).toBe(200);
  expect(requests).toContain("GET /api/v1/models/test-org/tiny-GGUF/repo/files?Revision=master&Recursive=True");
  expect(requests).toContain("GET /api/v1/models/test-org/tiny-GGUF/repo?Revision=master&FilePath=tiny-Q4_0.gguf");
  const blob = join(server.cacheDir, "modelscope", "hub", "models--test-org--tiny-GGUF", "snapshots", COMMIT, "tiny-Q4_0.gguf");
  expect(existsSync(blob)).toBe(true);
  // Not in the Hugging Face cache.
  expect(existsSync(join(server.cacheDir, "hf", "models--test-org--tiny-GGUF"))).toBe(false);
  const model = await (await fetch(`${server.url}/v1/models/MsTiny`)).json();
  expect(model).toMatchObject({ downloaded: true, registry_source: "modelscope", checkpoint_status: [{ type: "main", present: true, registry: "modelscope" }] });
  // Kept across a restart: user_models.json says where it comes from.
  const stored = JSON.parse(readFileSync(join(server.cacheDir, "user_models.json"), "utf8"));
  expect((stored.MsTiny ?? stored["user.MsTiny"]).source).toBe("modelscope");

  const answer = await post("/v1/chat/completions", { model: "MsTiny", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
  expect(answer.status).toBe(200);
  await post("/v1/unload", {});
  expect((await post("/v1/delete", { model_name: "MsTiny" })).status).toBe(200);
  expect(existsSync(join(server.cacheDir, "modelscope", "hub", "models--test-org--tiny-GGUF"))).toBe(false);
});

test("variants and search take source=modelscope (or ms); an unknown repository is a 404", async () => {
  const variants = await (await fetch(`${server.url}/v1/pull/variants?checkpoint=test-org/tiny-GGUF&source=ms`)).json();
  expect(variants.variants.map((v: any) => v.name)).toEqual(["Q4_0"]);
  expect((await fetch(`${server.url}/v1/pull/variants?checkpoint=test-org/nothing&source=modelscope`)).status).toBe(404);
  const found = await (await fetch(`${server.url}/v1/registry/search?query=tiny&source=ms&format=gguf`)).json();
  expect(found).toMatchObject({ source: "modelscope", query: "tiny", format: "gguf", total: 1 });
  expect(found.results[0]).toMatchObject({ repository_id: "test-org/tiny-GGUF", source: "modelscope", downloads: 42, likes: 3, has_gguf: true });
  expect((await fetch(`${server.url}/v1/registry/search?query=tiny&source=civitai`)).status).toBe(400);
});
