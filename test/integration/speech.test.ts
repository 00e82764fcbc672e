// Text-to-speech with the real espeak-ng and ffmpeg (Debian packages; .ci/run installs them).
import { afterAll, beforeAll, expect, test } from "bun:test";
import OpenAI from "openai";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let client: OpenAI;
beforeAll(async () => {
  server = await startTestServer();
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
afterAll(() => server.close());

const SENTENCE = "Lemonade Server speaks this sentence out loud for the test.";

const speak = (body: Record<string, unknown>) =>
  fetch(`${server.url}/v1/audio/speech`, { method: "POST", body: JSON.stringify({ model: "kokoro-v1", input: SENTENCE, ...body }) });

/** Seconds of audio in an encoded file: ffmpeg decodes it to 24 kHz 16-bit mono and we count. */
function probeSeconds(data: Uint8Array): number {
  const r = Bun.spawnSync(["ffmpeg", "-v", "error", "-i", "pipe:0", "-f", "s16le", "-ac", "1", "-ar", "24000", "pipe:1"], { stdin: data });
  if (r.exitCode !== 0) throw new Error(`ffmpeg could not decode: ${r.stderr}`);
  return r.stdout.length / 48000;
}

test("a WAV answer has the right header, 24 kHz mono 16-bit, and a sensible duration", async () => {
  const res = await speak({ response_format: "wav", voice: "af_sky" });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("audio/wav");
  // Which engine spoke: espeak-ng, the embedded default.
  expect(res.headers.get("x-lemonade-speech-engine")).toBe("espeak-ng");
  const wav = Buffer.from(await res.arrayBuffer());
  expect(wav.toString("ascii", 0, 4)).toBe("RIFF");
  expect(wav.toString("ascii", 8, 12)).toBe("WAVE");
  expect(wav.readUInt16LE(20)).toBe(1); // PCM
  expect(wav.readUInt16LE(22)).toBe(1); // mono
  expect(wav.readUInt32LE(24)).toBe(24000);
  expect(wav.readUInt16LE(34)).toBe(16);
  const seconds = (wav.length - 44) / (24000 * 2);
  // Ten words at a normal pace: a few seconds, not a blip and not a minute.
  expect(seconds).toBeGreaterThan(1.5);
  expect(seconds).toBeLessThan(8);
  // Not silence: speech has real amplitude.
  let peak = 0;
  for (let i = 44; i < wav.length - 1; i += 2) peak = Math.max(peak, Math.abs(wav.readInt16LE(i)));
  expect(peak).toBeGreaterThan(3000);
});

test("mp3 and pcm decode to the same length of speech; opus is Ogg", async () => {
  const wavSeconds = probeSeconds(new Uint8Array(await (await speak({ response_format: "wav" })).arrayBuffer()));
  const mp3 = new Uint8Array(await (await speak({ response_format: "mp3" })).arrayBuffer());
  expect(Math.abs(probeSeconds(mp3) - wavSeconds)).toBeLessThan(0.2);
  const pcm = await speak({ response_format: "pcm" });
  expect(pcm.headers.get("content-type")).toBe("audio/l16;rate=24000;endianness=little-endian");
  const pcmSeconds = (await pcm.arrayBuffer()).byteLength / 48000;
  expect(Math.abs(pcmSeconds - wavSeconds)).toBeLessThan(0.1);
  const opus = Buffer.from(await (await speak({ response_format: "opus" })).arrayBuffer());
  expect(opus.toString("ascii", 0, 4)).toBe("OggS");
});

test("speed changes the length; the official client gets mp3 by default", async () => {
  const seconds = async (speed: number) => (await (await speak({ response_format: "pcm", speed })).arrayBuffer()).byteLength / 48000;
  expect(await seconds(2)).toBeLessThan((await seconds(1)) * 0.75);
  const res = await client.audio.speech.create({ model: "kokoro-v1", voice: "alloy", input: "Hello there." });
  const bytes = new Uint8Array(await res.arrayBuffer());
  expect(res.headers.get("content-type")).toBe("audio/mpeg");
  expect(probeSeconds(bytes)).toBeGreaterThan(0.3);
});

test("streaming sends PCM as it is produced", async () => {
  // Several seconds of audio: more than a pipe holds, so it cannot arrive as one piece.
  const res = await speak({ stream: true, input: `${SENTENCE} ${SENTENCE} ${SENTENCE} ${SENTENCE}` });
  expect(res.headers.get("content-type")).toContain("audio/l16");
  const reader = res.body!.getReader();
  let total = 0;
  let chunks = 0;
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    total += r.value.length;
    chunks++;
  }
  expect(chunks).toBeGreaterThan(1);
  expect(total / 48000).toBeGreaterThan(6);
});

test("errors: not a TTS model, unknown voice, unknown model, bad format", async () => {
  const res = await fetch(`${server.url}/v1/audio/speech`, { method: "POST", body: JSON.stringify({ model: "Qwen3-0.6B-GGUF", input: "x" }) });
  expect(res.status).toBe(400);
  expect((await res.json()).error.code).toBe("model_not_applicable");
  const voice = await speak({ voice: "darth" });
  expect(voice.status).toBe(400);
  expect((await voice.json()).error.param).toBe("voice");
  const missing = await fetch(`${server.url}/v1/audio/speech`, { method: "POST", body: JSON.stringify({ model: "nope", input: "x" }) });
  expect(missing.status).toBe(404);
  const format = await speak({ response_format: "flac" });
  expect(format.status).toBe(400);
  expect((await format.json()).error.code).toBe("invalid_argument");
});

test("streaming produces pcm only: another response_format is a 400 naming the allowed one", async () => {
  for (const body of [{ stream: true, response_format: "mp3" }, { stream_format: "audio", response_format: "wav" }]) {
    const res = await speak(body);
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error).toMatchObject({ code: "invalid_argument", param: "response_format" });
    expect(error.message).toContain("pcm");
  }
  const pcm = await speak({ stream: true, response_format: "pcm" });
  expect(pcm.status).toBe(200);
  await pcm.arrayBuffer();
});
