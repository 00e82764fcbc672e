// llama.cpp and whisper.cpp from "GitHub releases": the llama-server and whisper-server the source
// builds produced, packed in the release layouts, served by a loopback stand-in for GitHub with its sha256 pinned in
// the cache's backend_versions.json; the server installs it through POST /v1/install and a tiny
// model chats on the installed binary.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as tar from "tar";
import { LLAMACPP } from "../../engines/llamacpp.ts";
import { WHISPERCPP } from "../../engines/whispercpp.ts";
import { cachedBinary } from "../../engines/source-build.ts";
import { defaultCacheDir } from "../../config/config.ts";
import { llamaServerBinary, MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const TAG = "b10375";
const ASSET = `llama-${TAG}-bin-ubuntu-x64.tar.gz`;
const WHISPER_TAG = "v1.8.4";
const WHISPER_ASSET = `whisper-${WHISPER_TAG}-linux-cpu-x86_64.tar.gz`;
let github: ReturnType<typeof Bun.serve>;
let server: TestServer;
const seen: string[] = [];

beforeAll(async () => {
  const pack = tempDir("lemonade-pack-");
  mkdirSync(join(pack, "build", "bin"), { recursive: true });
  copyFileSync(llamaServerBinary(), join(pack, "build", "bin", "llama-server"));
  await tar.c({ gzip: true, file: join(pack, ASSET), cwd: pack, portable: true }, ["build"]);
  const archive = readFileSync(join(pack, ASSET));
  const wpack = tempDir("lemonade-pack-");
  mkdirSync(join(wpack, "whisper", "bin"), { recursive: true });
  copyFileSync(join(cachedBinary(defaultCacheDir(), WHISPERCPP)!), join(wpack, "whisper", "bin", "whisper-server"));
  await tar.c({ gzip: true, file: join(wpack, WHISPER_ASSET), cwd: wpack, portable: true }, ["whisper"]);
  const whisperArchive = readFileSync(join(wpack, WHISPER_ASSET));
  github = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      seen.push(path);
      if (path === `/ggml-org/llama.cpp/releases/download/${TAG}/${ASSET}`) return new Response(archive);
      if (path === `/lemonade-sdk/whisper.cpp-rocm/releases/download/${WHISPER_TAG}/${WHISPER_ASSET}`) return new Response(whisperArchive);
      return new Response("Not Found", { status: 404 });
    },
  });
  const cacheDir = tempDir();
  const sha = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
  writeFileSync(
    join(cacheDir, "backend_versions.json"),
    JSON.stringify({
      checksums: {
        github: {
          "ggml-org/llama.cpp": { [TAG]: { [ASSET]: sha(archive) } },
          "lemonade-sdk/whisper.cpp-rocm": { [WHISPER_TAG]: { [WHISPER_ASSET]: sha(whisperArchive) } },
        },
      },
    }),
  );
  const extra = tempDir("lemonade-extra-");
  copyFileSync(join(testModelsDir(), MODELS.chat), join(extra, MODELS.chat));
  // No engine builds linked in: the only llama-server this server can get is the release.
  server = await startTestServer({ LEMONADE_GITHUB_ENDPOINT: `http://127.0.0.1:${github.port}`, LEMONADE_EXTRA_MODELS_DIR: extra }, cacheDir, { engines: false });
});

afterAll(async () => {
  await server?.close();
  github?.stop(true);
});

test("POST /v1/install llamacpp:cpu installs the pinned release, and a tiny model chats on it", async () => {
  const before = (await (await fetch(`${server.url}/v1/system-info`)).json()).recipes.llamacpp.backends.cpu;
  expect(before.state).toBe("installable");
  const res = await fetch(`${server.url}/v1/install`, { method: "POST", body: JSON.stringify({ recipe: "llamacpp", backend: "cpu", stream: true }) });
  const text = await res.text();
  expect(text).toContain("event: progress");
  expect(text).toContain('"phase":"download"');
  expect(text).toContain("event: complete");
  expect(seen).toEqual([`/ggml-org/llama.cpp/releases/download/${TAG}/${ASSET}`]);
  const after = (await (await fetch(`${server.url}/v1/system-info`)).json()).recipes.llamacpp.backends.cpu;
  expect(after).toMatchObject({ state: "installed", version: `release ${TAG}`, release_url: `https://github.com/ggml-org/llama.cpp/releases/tag/${TAG}` });

  const chat = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    body: JSON.stringify({ model: "extra.tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 3 }),
  });
  expect(chat.status).toBe(200);
  expect((await chat.json()).usage.completion_tokens).toBe(3);
  const health = await (await fetch(`${server.url}/v1/health`)).json();
  expect(health.all_models_loaded[0].launch_command[0]).toBe(join(server.cacheDir, "bin", "llamacpp", "cpu", TAG, "llama-server"));
  // Not the source build: nothing of it is in this cache.
  expect(health.all_models_loaded[0].launch_command.join(" ")).not.toContain(LLAMACPP.version);
});

test("whispercpp:cpu installs from its release too", async () => {
  const res = await fetch(`${server.url}/v1/install`, { method: "POST", body: JSON.stringify({ recipe: "whispercpp", backend: "cpu" }) });
  expect(res.status).toBe(200);
  const cpu = (await (await fetch(`${server.url}/v1/system-info`)).json()).recipes.whispercpp.backends.cpu;
  expect(cpu).toMatchObject({ state: "installed", version: `release ${WHISPER_TAG}` });
  expect(seen).toContain(`/lemonade-sdk/whisper.cpp-rocm/releases/download/${WHISPER_TAG}/${WHISPER_ASSET}`);
});
