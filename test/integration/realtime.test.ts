// Realtime transcription over the WebSocket, streaming whisper.cpp's JFK recording in 100 ms
// PCM16 chunks to the real whisper-server on the tiny model.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { jfkSample, MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let pcm: Buffer;

beforeAll(async () => {
  const ff = Bun.spawnSync(["ffmpeg", "-v", "error", "-i", jfkSample(), "-ar", "16000", "-ac", "1", "-f", "s16le", "pipe:1"]);
  pcm = Buffer.from(ff.stdout);
  const hf = tempDir("lemonade-hf-");
  const repo = join(hf, "models--ggerganov--whisper.cpp");
  mkdirSync(join(repo, "snapshots", "abc"), { recursive: true });
  mkdirSync(join(repo, "refs"));
  writeFileSync(join(repo, "refs", "main"), "abc");
  copyFileSync(join(testModelsDir(), MODELS.whisper), join(repo, "snapshots", "abc", "ggml-tiny.bin"));
  server = await startTestServer({ HF_HUB_CACHE: hf, LEMONADE_API_KEY: "rt-key" });
});
afterAll(() => server.close());

/** A realtime client that records every event it receives. */
async function connect(path = "/v1/realtime?model=Whisper-Tiny&api_key=rt-key") {
  const ws = new WebSocket(server.url.replace("http", "ws") + path);
  const events: any[] = [];
  ws.onmessage = (e) => events.push(JSON.parse(String(e.data)));
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const send = (m: unknown) => ws.send(JSON.stringify(m));
  const streamAudio = async (audio: Buffer) => {
    for (let i = 0; i < audio.length; i += 3200) {
      send({ type: "input_audio_buffer.append", audio: audio.subarray(i, i + 3200).toString("base64") });
      await Bun.sleep(2);
    }
  };
  const waitFor = async (type: string, count = 1) => {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (events.filter((e) => e.type === type).length >= count) return;
      await Bun.sleep(20);
    }
    throw new Error(`no ${type} within 20 s; got ${events.map((e) => e.type).join(", ")}`);
  };
  return { ws, events, send, streamAudio, waitFor };
}

const silence = (seconds: number) => Buffer.alloc(Math.round(16000 * 2 * seconds));

test("server VAD: speech_started, speech_stopped, then a completed transcript", async () => {
  const c = await connect();
  await c.waitFor("session.created");
  expect(c.events[0].session.model).toBe("Whisper-Tiny");
  await c.streamAudio(Buffer.concat([silence(0.5), pcm, silence(1.5)]));
  await c.waitFor("conversation.item.input_audio_transcription.completed");
  const types = c.events.map((e) => e.type);
  const started = types.indexOf("input_audio_buffer.speech_started");
  const stopped = types.indexOf("input_audio_buffer.speech_stopped");
  const completed = types.indexOf("conversation.item.input_audio_transcription.completed");
  expect(started).toBeGreaterThan(0);
  expect(stopped).toBeGreaterThan(started);
  expect(completed).toBeGreaterThan(stopped);
  // Speech starts after the half second of lead-in silence, not at zero.
  expect(c.events[started].audio_start_ms).toBeGreaterThanOrEqual(400);
  const done = c.events[completed];
  expect(typeof done.transcript).toBe("string");
  expect(done.transcript.length).toBeGreaterThan(0);
  c.ws.close();
});

test("turn_detection null: nothing comes back until commit", async () => {
  const c = await connect("/realtime?model=Whisper-Tiny&api_key=rt-key");
  c.send({ type: "session.update", session: { turn_detection: null } });
  await c.waitFor("session.updated");
  expect(c.events.at(-1).session.turn_detection).toBeNull();
  await c.streamAudio(Buffer.concat([pcm, silence(1.5)]));
  await Bun.sleep(500);
  expect(c.events.map((e) => e.type)).toEqual(["session.created", "session.updated"]);
  c.send({ type: "input_audio_buffer.commit" });
  await c.waitFor("conversation.item.input_audio_transcription.completed");
  expect(c.events.map((e) => e.type).slice(2)).toEqual([
    "input_audio_buffer.committed",
    "conversation.item.input_audio_transcription.completed",
  ]);
  c.ws.close();
});

test("clear empties the buffer; committing an empty buffer is an error", async () => {
  const c = await connect();
  c.send({ type: "session.update", session: { turn_detection: null } });
  await c.streamAudio(pcm.subarray(0, 16000));
  c.send({ type: "input_audio_buffer.clear" });
  await c.waitFor("input_audio_buffer.cleared");
  c.send({ type: "input_audio_buffer.commit" });
  await c.waitFor("error");
  expect(c.events.find((e) => e.type === "error").error.code).toBe("input_audio_buffer_commit_empty");
  c.send({ type: "no.such.message" });
  await c.waitFor("error", 2);
  c.ws.close();
});

test("the dedicated websocket_port speaks the same protocol", async () => {
  const health = await (await fetch(`${server.url}/v1/health`, { headers: { authorization: "Bearer rt-key" } })).json();
  const ws = new WebSocket(`ws://127.0.0.1:${health.websocket_port}/realtime?model=Whisper-Tiny&api_key=rt-key`);
  const first = await new Promise<any>((resolve, reject) => {
    ws.onmessage = (e) => resolve(JSON.parse(String(e.data)));
    ws.onerror = reject;
  });
  ws.close();
  expect(first).toMatchObject({ type: "session.created", session: { model: "Whisper-Tiny" } });
});

test("the API key is required on the WebSocket too", async () => {
  await expect(connect("/v1/realtime?model=Whisper-Tiny")).rejects.toBeDefined();
});
