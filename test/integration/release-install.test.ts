// llama.cpp and whisper.cpp from "GitHub releases": the llama-server and whisper-server the source
// builds produced, packed in the release layouts, served by a loopback stand-in for GitHub with its sha256 pinned in
// the cache's backend_versions.json; the server installs it through POST /v1/install and a tiny
// model chats on the installed binary. With `subscribe: false` the install is a download job that
// /v1/downloads follows and /v1/downloads/control cancels.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
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
// node:http rather than Bun.serve: a body sent in parts keeps its content-length, as GitHub's does.
let github: Server;
let githubUrl: string;
let server: TestServer;
const seen: string[] = [];
let archive: Uint8Array;
let whisperArchive: Uint8Array;
/** While set, the stand-in sends the first half of the llama.cpp asset and holds the rest until it resolves. */
let held: { release: () => void; promise: Promise<void> } | null = null;

function hold(): void {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  held = { release, promise };
}

/** A cache directory whose backend_versions.json pins both stand-in assets' sha256. */
function pinnedCache(): string {
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
  return cacheDir;
}

/** Sends an asset whole, or (while `held`) its first half, then the rest once released. */
async function send(res: ServerResponse, body: Uint8Array): Promise<void> {
  res.writeHead(200, { "content-length": String(body.length), "content-type": "application/octet-stream" });
  if (!held) return void res.end(body);
  const gate = held.promise;
  const half = Math.floor(body.length / 2);
  res.write(body.subarray(0, half));
  await gate;
  res.end(body.subarray(half));
}

beforeAll(async () => {
  const pack = tempDir("lemonade-pack-");
  mkdirSync(join(pack, "build", "bin"), { recursive: true });
  copyFileSync(llamaServerBinary(), join(pack, "build", "bin", "llama-server"));
  await tar.c({ gzip: true, file: join(pack, ASSET), cwd: pack, portable: true }, ["build"]);
  archive = readFileSync(join(pack, ASSET));
  const wpack = tempDir("lemonade-pack-");
  mkdirSync(join(wpack, "whisper", "bin"), { recursive: true });
  copyFileSync(join(cachedBinary(defaultCacheDir(), WHISPERCPP)!), join(wpack, "whisper", "bin", "whisper-server"));
  await tar.c({ gzip: true, file: join(wpack, WHISPER_ASSET), cwd: wpack, portable: true }, ["whisper"]);
  whisperArchive = readFileSync(join(wpack, WHISPER_ASSET));
  github = createServer((req, res) => {
    const path = new URL(req.url!, "http://stand-in").pathname;
    seen.push(path);
    if (path === `/ggml-org/llama.cpp/releases/download/${TAG}/${ASSET}`) return void send(res, archive);
    if (path === `/lemonade-sdk/whisper.cpp-rocm/releases/download/${WHISPER_TAG}/${WHISPER_ASSET}`) return void send(res, whisperArchive);
    res.writeHead(404).end("Not Found");
  });
  await new Promise<void>((r) => github.listen(0, "127.0.0.1", r));
  githubUrl = `http://127.0.0.1:${(github.address() as AddressInfo).port}`;
  const cacheDir = pinnedCache();
  const extra = tempDir("lemonade-extra-");
  copyFileSync(join(testModelsDir(), MODELS.chat), join(extra, MODELS.chat));
  // No engine builds linked in: the only llama-server this server can get is the release.
  server = await startTestServer({ LEMONADE_GITHUB_ENDPOINT: githubUrl, LEMONADE_EXTRA_MODELS_DIR: extra }, cacheDir, { engines: false });
});

afterAll(async () => {
  held?.release();
  await server?.close();
  github?.closeAllConnections();
  github?.close();
});

test("POST /v1/install llamacpp:cpu installs the pinned release, and a tiny model chats on it", async () => {
  const before = (await (await fetch(`${server.url}/v1/system-info`)).json()).recipes.llamacpp.backends.cpu;
  expect(before.state).toBe("installable");
  const res = await fetch(`${server.url}/v1/install`, { method: "POST", body: JSON.stringify({ recipe: "llamacpp", backend: "cpu", stream: true }) });
  const text = await res.text();
  expect(text).toContain("event: progress");
  expect(text).toContain('"phase":"download"');
  // The download's bytes too, in the fields Lemonade's download progress uses.
  expect(text).toContain(`"file":"${ASSET}","file_index":1,"total_files":1,"bytes_downloaded":${archive.length},"bytes_total":${archive.length}`);
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

describe("stream: true, subscribe: false", () => {
  let jobs: TestServer;
  const install = (prefix: string, body: object = {}) =>
    fetch(`${jobs.url}${prefix}/install`, { method: "POST", body: JSON.stringify({ recipe: "llamacpp", backend: "cpu", stream: true, subscribe: false, ...body }) });
  const listed = async (prefix = "/v1") => (await (await fetch(`${jobs.url}${prefix}/downloads`)).json()) as any[];
  const waitFor = async (cond: (j: any) => boolean, prefix?: string) => {
    // Polled until the job reaches the state; the bound only keeps a broken server from hanging the run.
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await Bun.sleep(20)) {
      const job = (await listed(prefix)).find((j) => j.id === "backend:llamacpp:cpu");
      if (job && cond(job)) return job;
    }
    throw new Error("the job never reached the state");
  };
  const cpuState = async () => (await (await fetch(`${jobs.url}/v1/system-info`)).json()).recipes.llamacpp.backends.cpu.state;

  beforeAll(async () => {
    jobs = await startTestServer({ LEMONADE_GITHUB_ENDPOINT: githubUrl }, pinnedCache(), { engines: false });
  });
  afterAll(async () => {
    held?.release();
    held = null;
    await jobs?.close();
  });

  test("a refused install is a 400 and starts no job", async () => {
    const res = await install("/v1", { backend: "no-such-backend" });
    expect(res.status).toBe(400);
    expect(await listed()).toEqual([]);
  });

  test("cancelled through /v1/downloads/control mid-download, it leaves nothing installed or half-downloaded", async () => {
    hold();
    const res = await install("/api/v1");
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await res.json()).toMatchObject({ id: "backend:llamacpp:cpu", type: "backend", model_name: "llamacpp:cpu", status: "downloading", running: true, complete: false });
    await waitFor((j) => j.bytes_downloaded > 0, "/api/v1");
    const cancel = await fetch(`${jobs.url}/v1/downloads/control`, { method: "POST", body: JSON.stringify({ id: "backend:llamacpp:cpu", action: "cancel" }) });
    expect(await cancel.json()).toMatchObject({ id: "backend:llamacpp:cpu", status: "cancelled", running: false, complete: false });
    held!.release();
    held = null;
    const cpuDir = join(jobs.cacheDir, "bin", "llamacpp", "cpu");
    expect(existsSync(cpuDir) ? readdirSync(cpuDir) : []).toEqual([]);
    expect(readdirSync(join(jobs.cacheDir, "downloads"))).toEqual([]);
    expect(await cpuState()).toBe("installable");
    // Still listed, as Lemonade keeps a cancelled job until a client removes it.
    expect(await listed()).toMatchObject([{ id: "backend:llamacpp:cpu", status: "cancelled", running: false }]);
  });

  test("installed again, the job reports the asset's bytes and completes; the backend is installed", async () => {
    hold();
    const first = await (await install("/v1")).json();
    expect(first).toMatchObject({ id: "backend:llamacpp:cpu", status: "downloading", running: true, percent: 0 });
    const half = Math.floor(archive.length / 2);
    const midway = await waitFor((j) => j.bytes_downloaded === half);
    expect(midway).toMatchObject({
      type: "backend",
      model_name: "llamacpp:cpu",
      status: "downloading",
      running: true,
      file: ASSET,
      file_index: 1,
      total_files: 1,
      bytes_total: archive.length,
      total_download_size: archive.length,
      cumulative_bytes_downloaded: half,
      overall_bytes_downloaded: half,
      percent: Math.floor((half / archive.length) * 100),
      complete: false,
    });
    held!.release();
    held = null;
    const done = await waitFor((j) => !j.running);
    expect(done).toMatchObject({ status: "completed", complete: true, percent: 100, file: ASSET, bytes_downloaded: archive.length, cumulative_bytes_downloaded: archive.length });
    expect(done.error).toBeUndefined();
    expect(await cpuState()).toBe("installed");
    expect(existsSync(join(jobs.cacheDir, "bin", "llamacpp", "cpu", TAG, "llama-server"))).toBe(true);
    const removed = await fetch(`${jobs.url}/v1/downloads/control`, { method: "POST", body: JSON.stringify({ id: "backend:llamacpp:cpu", action: "remove" }) });
    expect(await removed.json()).toEqual({ status: "ok" });
    expect(await listed()).toEqual([]);
  });
});
