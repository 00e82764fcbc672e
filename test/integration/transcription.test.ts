// Speech-to-text with the real whisper-server on a tiny generated whisper model, transcribing
// whisper.cpp's own sample recording.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { jfkSample, MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let client: OpenAI;
let mp3: Buffer;

beforeAll(async () => {
  mp3 = readFileSync(jfkSample());
  // Whisper-Tiny's checkpoint, laid out in the HF cache as a download would leave it.
  const hf = tempDir("lemonade-hf-");
  const snap = join(hf, "models--ggerganov--whisper.cpp", "snapshots", "abc");
  mkdirSync(snap, { recursive: true });
  mkdirSync(join(hf, "models--ggerganov--whisper.cpp", "refs"));
  writeFileSync(join(hf, "models--ggerganov--whisper.cpp", "refs", "main"), "abc");
  copyFileSync(join(testModelsDir(), MODELS.whisper), join(snap, "ggml-tiny.bin"));
  const extra = tempDir("lemonade-extra-");
  copyFileSync(join(testModelsDir(), MODELS.chat), join(extra, MODELS.chat));
  server = await startTestServer({ HF_HUB_CACHE: hf, LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MAX_LOADED_MODELS: "-1", LEMONADE_LOG_LEVEL: "info" });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
afterAll(() => server.close());

const transcribe = async (response_format: "json" | "verbose_json" | "text" | "srt" | "vtt", data: Buffer = mp3, name = "jfk.mp3") =>
  client.audio.transcriptions.create({ model: "Whisper-Tiny", file: await toFile(data, name), response_format, language: "en" } as any);

test("json: the official client gets a transcript from the real engine", async () => {
  const res = (await transcribe("json")) as { text: string };
  expect(typeof res.text).toBe("string");
  expect(res.text.trim().length).toBeGreaterThan(0);
  const health = await (await fetch(`${server.url}/v1/health`)).json();
  expect(health.all_models_loaded.find((m: any) => m.model_name === "Whisper-Tiny")).toMatchObject({ type: "transcription", recipe: "whispercpp" });
});

test("verbose_json has timestamped segments inside whisper's 30-second window", async () => {
  const res = (await transcribe("verbose_json")) as any;
  expect(Array.isArray(res.segments)).toBe(true);
  expect(res.segments.length).toBeGreaterThan(0);
  for (const seg of res.segments) {
    expect(seg.start).toBeGreaterThanOrEqual(0);
    expect(seg.end).toBeGreaterThanOrEqual(seg.start);
    expect(seg.end).toBeLessThanOrEqual(30);
  }
});

test("srt and vtt come back as text/plain, as the real server sends them", async () => {
  for (const format of ["srt", "vtt"]) {
    const form = new FormData();
    form.set("model", "Whisper-Tiny");
    form.set("response_format", format);
    form.set("file", new Blob([new Uint8Array(mp3)]), "jfk.mp3");
    const res = await fetch(`${server.url}/v1/audio/transcriptions`, { method: "POST", body: form });
    expect(res.headers.get("content-type")).toStartWith("text/plain");
  }
});

test("whispercpp_args on the request that loads the model reach the load (a flag the server owns is refused)", async () => {
  await fetch(`${server.url}/v1/unload`, { method: "POST", body: JSON.stringify({ model_name: "Whisper-Tiny" }) });
  const form = new FormData();
  form.set("model", "Whisper-Tiny");
  form.set("whispercpp_args", "--port 5");
  form.set("file", new Blob([new Uint8Array(mp3)]), "jfk.mp3");
  const res = await fetch(`${server.url}/v1/audio/transcriptions`, { method: "POST", body: form });
  expect(res.status).toBe(400);
  expect((await res.json()).error.message).toContain("--port");
  form.set("whispercpp_args", "--threads 1");
  const ok = await fetch(`${server.url}/v1/audio/transcriptions`, { method: "POST", body: form });
  expect(ok.status).toBe(200);
  const health = await (await fetch(`${server.url}/v1/health`)).json();
  expect(health.all_models_loaded.find((m: any) => m.model_name === "Whisper-Tiny").recipe_options.whispercpp_args).toBe("--threads 1");
});

test("text, srt and vtt come back in their own formats", async () => {
  const text = (await transcribe("text")) as unknown as string;
  expect(typeof text).toBe("string");
  expect(text.trim().length).toBeGreaterThan(0);
  const srt = (await transcribe("srt")) as unknown as string;
  expect(srt).toMatch(/^1\r?\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}/);
  const vtt = (await transcribe("vtt")) as unknown as string;
  expect(vtt.startsWith("WEBVTT")).toBe(true);
  expect(vtt).toMatch(/\d\d:\d\d[:.]\d\d\.\d{3} --> /);
});

test("other formats and rates are converted: a 44.1 kHz stereo WAV transcribes the same way", async () => {
  const ff = Bun.spawnSync(["ffmpeg", "-v", "error", "-i", "pipe:0", "-ar", "44100", "-ac", "2", "-f", "wav", "pipe:1"], { stdin: mp3 });
  const wav = Buffer.from(ff.stdout);
  expect(wav.toString("ascii", 0, 4)).toBe("RIFF");
  const viaWav = (await transcribe("json", wav, "jfk.wav")) as { text: string };
  expect(viaWav.text.trim().length).toBeGreaterThan(0);
  // Both arrive as the same 11 seconds of 16 kHz mono audio.
  const lines = server.ctx.logger.snapshot().filter((e) => e.line.includes("Transcribed"));
  expect(lines.at(-1)!.line).toContain("Transcribed 11.0 s of audio");
});

test("errors: not multipart, missing file, not a transcription model, undecodable audio", async () => {
  const json = await fetch(`${server.url}/v1/audio/transcriptions`, { method: "POST", body: JSON.stringify({ model: "Whisper-Tiny" }) });
  expect(json.status).toBe(400);
  const noFile = new FormData();
  noFile.set("model", "Whisper-Tiny");
  const missing = await fetch(`${server.url}/v1/audio/transcriptions`, { method: "POST", body: noFile });
  expect(missing.status).toBe(400);
  expect((await missing.json()).error).toMatchObject({ code: "missing_argument", param: "file" });
  const chat = new FormData();
  chat.set("model", "extra.tiny-chat");
  chat.set("file", new Blob([new Uint8Array(mp3)]), "jfk.mp3");
  const wrong = await fetch(`${server.url}/v1/audio/transcriptions`, { method: "POST", body: chat });
  expect(wrong.status).toBe(400);
  expect((await wrong.json()).error.type).toBe("unsupported_operation");
  const junk = new FormData();
  junk.set("model", "Whisper-Tiny");
  junk.set("file", new Blob([new Uint8Array(1000).fill(7)]), "junk.wav");
  const bad = await fetch(`${server.url}/v1/audio/transcriptions`, { method: "POST", body: junk });
  expect(bad.status).toBe(400);
  expect((await bad.json()).error.param).toBe("file");
});

test("MCP's lemonade_transcribe_audio transcribes on the same whisper engine, from a path or inline bytes", async () => {
  await server.ctx.scheduler.unloadWhere();
  const mcp = new Client({ name: "lemonade-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
  try {
    const byPath = (await mcp.callTool({ name: "lemonade_transcribe_audio", arguments: { model: "Whisper-Tiny", audio_path: jfkSample(), language: "en" } })) as any;
    expect(byPath.isError).toBe(false);
    // The random-weight model's words vary run to run (whisper's temperature fallback); that it
    // answered with text from a freshly loaded whisper-server is what the tool owes.
    expect(byPath.content[0].text.trim().length).toBeGreaterThan(0);
    const health = await (await fetch(`${server.url}/v1/health`)).json();
    expect(health.all_models_loaded.map((m: any) => m.model_name)).toContain("Whisper-Tiny");
    const inline = (await mcp.callTool({
      name: "lemonade_transcribe_audio",
      arguments: { model: "Whisper-Tiny", audio_base64: mp3.toString("base64"), response_format: "srt" },
    })) as any;
    expect(inline.isError).toBe(false);
    expect(inline.content[0].text).toMatch(/^1\r?\n\d\d:\d\d:\d\d,\d{3} --> /);
    const wrong = (await mcp.callTool({ name: "lemonade_transcribe_audio", arguments: { model: "extra.tiny-chat", audio_path: jfkSample() } })) as any;
    expect(wrong.isError).toBe(true);
    expect(wrong.content[0].text).toContain("not a transcription model");
  } finally {
    await mcp.close();
  }
});
