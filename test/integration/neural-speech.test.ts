// kokoro-v1 on Kokoros: the engine installed from a (stand-in) GitHub release and the model's
// repository (index.json, ONNX weights, voices) downloaded from the test hub. The engine is the
// FAKE `koko` (scripts/fake-engine/koko, Kokoros' own flags and HTTP surface): the real one cannot
// be obtained here. Until both are there, espeak-ng speaks, and the answer says which did.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as tar from "tar";
import { FAKE_DIR } from "../helpers/fake-engine.ts";
import { startFakeHub, type FakeHub } from "../helpers/fake-hub.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const ASSET = "kokoros-linux-x86_64.tar.gz";
let hub: FakeHub;
let github: ReturnType<typeof Bun.serve>;
let server: TestServer;

beforeAll(async () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  hub = startFakeHub({
    "mikkoph/kokoro-onnx": {
      sha: "f".repeat(40),
      files: { "index.json": enc(JSON.stringify({ model: "kokoro-v1.0.onnx", voices: "voices-v1.0.bin" })), "kokoro-v1.0.onnx": enc("onnx"), "voices-v1.0.bin": enc("voices") },
    },
  });
  const pack = tempDir("lemonade-pack-");
  mkdirSync(join(pack, "kokoros", "espeak-ng-data"), { recursive: true });
  copyFileSync(join(FAKE_DIR, "koko"), join(pack, "kokoros", "koko"));
  writeFileSync(join(pack, "kokoros", "espeak-ng-data", "phontab"), "data");
  await tar.c({ gzip: true, file: join(pack, ASSET), cwd: pack, portable: true }, ["kokoros"]);
  const archive = readFileSync(join(pack, ASSET));
  github = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) => (new URL(req.url).pathname === `/lemonade-sdk/Kokoros/releases/download/b17/${ASSET}` ? new Response(archive) : new Response("Not Found", { status: 404 })),
  });
  const cacheDir = tempDir();
  const sha = createHash("sha256").update(archive).digest("hex");
  writeFileSync(join(cacheDir, "backend_versions.json"), JSON.stringify({ checksums: { github: { "lemonade-sdk/Kokoros": { b17: { [ASSET]: `sha256:${sha}` } } } } }));
  server = await startTestServer({ HF_ENDPOINT: hub.url, LEMONADE_GITHUB_ENDPOINT: `http://127.0.0.1:${github.port}` }, cacheDir, { engines: false });
});

afterAll(async () => {
  await server?.close();
  github?.stop(true);
  hub?.stop();
});

const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const speak = () => post("/v1/audio/speech", { model: "kokoro-v1", input: "Hello from a neural voice.", voice: "af_sky", response_format: "wav" });

test("espeak-ng speaks until Kokoros and the model's files are there; then Kokoros does", async () => {
  const before = await speak();
  expect(before.status).toBe(200);
  expect(before.headers.get("x-lemonade-speech-engine")).toBe("espeak-ng");
  await before.arrayBuffer();
  const info = (await (await fetch(`${server.url}/v1/system-info`)).json()).recipes.kokoro.backends;
  expect(info.cpu).toMatchObject({ state: "installable", action: "lemonade backends install kokoro:cpu" });
  expect(info.espeak.state).toBe("installed");

  expect((await post("/v1/install", { recipe: "kokoro", backend: "cpu" })).status).toBe(200);
  // The engine alone is not enough: the model's files are not downloaded yet.
  const halfway = await speak();
  expect(halfway.headers.get("x-lemonade-speech-engine")).toBe("espeak-ng");
  await halfway.arrayBuffer();
  expect((await post("/v1/pull", { model_name: "kokoro-v1" })).status).toBe(200);
  const model = await (await fetch(`${server.url}/v1/models/kokoro-v1`)).json();
  expect(model.checkpoint_status).toEqual([expect.objectContaining({ type: "main", present: true })]);

  const res = await speak();
  expect(res.status).toBe(200);
  expect(res.headers.get("x-lemonade-speech-engine")).toBe("kokoros");
  expect(res.headers.get("content-type")).toBe("audio/wav");
  const bytes = new Uint8Array(await res.arrayBuffer());
  expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe("RIFF");
  // A second of 24 kHz 16-bit mono is 48,000 bytes: the sentence takes more than a second.
  expect(bytes.length).toBeGreaterThan(48_000);
  const health = await (await fetch(`${server.url}/v1/health`)).json();
  const loaded = health.all_models_loaded.find((m: any) => m.model_name === "kokoro-v1");
  expect(loaded).toMatchObject({ type: "tts", recipe: "kokoro" });
  expect(loaded.launch_command.join(" ")).toContain("openai --ip 127.0.0.1 --port");
  expect(loaded.launch_command[0]).toContain(join("bin", "kokoro", "cpu", "b17", "koko"));
});
