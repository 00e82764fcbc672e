// The web app in headless Chromium (Debian's package, driven by playwright-core) against a real
// server: the tiny chat model on llama-server, the tiny whisper model, espeak-ng speech and the
// test hub. Every request the page makes is recorded; one to another host fails the test.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { classifierDir, jfkSample, MODELS, testModelsDir } from "../helpers/engines.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { startFakeHub, type FakeHub } from "../helpers/fake-hub.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const CHROMIUM = "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

let browser: Browser;
let server: TestServer;
let hub: FakeHub;
const foreign: string[] = [];

async function open(path = "/", s: TestServer = server): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const host = new URL(s.url).host;
  page.on("request", (r) => {
    const url = new URL(r.url());
    if (url.protocol !== "data:" && url.protocol !== "blob:" && url.host !== host) foreign.push(r.url());
  });
  await page.goto(`${s.url}${path}`);
  return page;
}

/** Leaves the app before closing its page: the app polls, and playwright-core under Bun trips over
 * the events of a request still in flight when its page is gone. */
async function close(page: Page): Promise<void> {
  await page.goto("about:blank");
  await page.close();
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
  const models = testModelsDir();
  const hf = tempDir("lemonade-hf-");
  const snap = join(hf, "models--ggerganov--whisper.cpp", "snapshots", "abc");
  mkdirSync(snap, { recursive: true });
  mkdirSync(join(hf, "models--ggerganov--whisper.cpp", "refs"));
  writeFileSync(join(hf, "models--ggerganov--whisper.cpp", "refs", "main"), "abc");
  copyFileSync(join(models, MODELS.whisper), join(snap, "ggml-tiny.bin"));
  // The catalog's Phishing-Email-Detection-ONNX, stood in for by the tiny sentiment classifier.
  const clf = join(hf, "models--lemonade-sdk--phishing-email-detection-distilbert-ONNX");
  mkdirSync(join(clf, "snapshots", "abc"), { recursive: true });
  mkdirSync(join(clf, "refs"));
  writeFileSync(join(clf, "refs", "main"), "abc");
  for (const f of ["model.onnx", "tokenizer.json", "tokenizer_config.json", "config.json"]) copyFileSync(join(classifierDir("sentiment"), f), join(clf, "snapshots", "abc", f));
  const extra = tempDir("lemonade-extra-");
  copyFileSync(join(models, MODELS.chat), join(extra, MODELS.chat));
  copyFileSync(join(models, MODELS.embed), join(extra, MODELS.embed));
  hub = startFakeHub({ "test-org/web-GGUF": { sha: "d".repeat(40), files: { "web-Q4_0.gguf": new Uint8Array(readFileSync(join(models, MODELS.chat))) } } });
  server = await startTestServer({ HF_HUB_CACHE: hf, HF_ENDPOINT: hub.url, LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MAX_LOADED_MODELS: "-1" });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  hub?.stop();
});

const api = (path: string, init?: RequestInit) => fetch(`${server.url}${path}`, init).then((r) => r.json());

describe("the web app", () => {
  test("/ is the app, its files come from the server, and it sends a Content-Security-Policy", async () => {
    for (const path of ["/", "/app", "/status"]) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
      expect(await res.text()).toContain('src="/app/assets/app.js"');
    }
    expect((await fetch(`${server.url}/app/assets/app.js`)).headers.get("content-type")).toContain("javascript");
    expect((await fetch(`${server.url}/app/assets/../../config.json`)).status).toBe(404);
  });

  test("chat: pick the tiny model, send a message, see the reply stream in with its speed", async () => {
    const page = await open("/?model=extra.tiny-chat#chat");
    await page.getByText("Sampling settings").click();
    await page.getByLabel("Max tokens").fill("12");
    await expect(page.getByLabel("Model").inputValue()).resolves.toBe("extra.tiny-chat");
    await page.getByLabel("Message").fill("Hello, lemon");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".bubble.user", { hasText: "Hello, lemon" }).waitFor();
    const stats = page.locator(".bubble.assistant .stats");
    await stats.waitFor({ timeout: 30_000 });
    expect(await stats.textContent()).toMatch(/[\d.]+ tokens\/s · TTFT \d+ ms/);
    expect((await page.locator(".bubble.assistant .markdown").textContent())!.length).toBeGreaterThan(0);
    // The conversation is kept across a reload.
    await page.reload();
    await page.locator(".bubble.user", { hasText: "Hello, lemon" }).waitFor();
    await close(page);
  });

  test("model manager: load and unload, change an option, and a pull whose progress survives a reload", async () => {
    await fetch(`${server.url}/v1/unload`, { method: "POST", body: "{}" });
    const page = await open("/#models");
    const row = page.locator('tr[data-model="extra.tiny-chat"]');
    await row.getByRole("button", { name: "Load" }).click();
    await row.locator('td[data-state="loaded"]').waitFor({ timeout: 30_000 });
    expect((await api("/v1/health")).all_models_loaded.map((m: any) => m.model_name)).toContain("extra.tiny-chat");
    await row.getByRole("button", { name: "Unload" }).click();
    await row.getByRole("button", { name: "Load" }).waitFor();

    await row.getByRole("button", { name: "Options" }).click();
    await page.getByLabel("New ctx_size").fill("1024");
    await page.getByRole("button", { name: "Save options" }).click();
    await page.getByText("Saved; the next load uses them.").waitFor();
    expect((await api("/v1/models/extra.tiny-chat/options")).saved.ctx_size).toBe(1024);

    const reg = await fetch(`${server.url}/v1/models/register`, { method: "POST", body: JSON.stringify({ model_name: "user.WebPull", recipe: "llamacpp", checkpoint: "test-org/web-GGUF:Q4_0" }) });
    expect(reg.status).toBe(200);
    hub.delayMs = 15;
    await page.reload();
    const pullRow = page.locator('tr[data-model="WebPull"]');
    await pullRow.getByRole("button", { name: "Download" }).click();
    await pullRow.locator("progress").waitFor();
    await page.reload();
    // The job is the server's: after the reload the bar is back, and it reaches the end.
    await pullRow.locator("progress").waitFor();
    hub.delayMs = 0;
    await pullRow.locator('td[data-state="downloaded"]').waitFor({ timeout: 30_000 });
    expect((await api("/v1/models/WebPull")).downloaded).toBe(true);
    await close(page);
  });

  test("logs: the live log shows a line the server writes now", async () => {
    const page = await open("/#logs");
    await page.getByText("live", { exact: true }).waitFor();
    // A provider at a closed port: the server warns that it cannot be reached.
    await fetch(`${server.url}/v1/install`, { method: "POST", body: JSON.stringify({ backend: "cloud", provider: "weblog", base_url: "http://127.0.0.1:9/v1" }) });
    await page.locator(".log", { hasText: "Cloud provider weblog could not be reached" }).waitFor();
    await fetch(`${server.url}/v1/uninstall`, { method: "POST", body: JSON.stringify({ backend: "cloud", provider: "weblog" }) });
    await close(page);
  });

  test("try it: speak a sentence into playable audio, and transcribe the sample recording", async () => {
    const page = await open("/#try");
    const speech = page.locator("fieldset", { hasText: "Text to speech" });
    await speech.getByRole("button", { name: "Speak" }).click();
    const audio = page.getByTestId("speech-audio");
    await audio.waitFor({ timeout: 30_000 });
    const duration = await audio.evaluate(
      (el: HTMLAudioElement) => new Promise<number>((resolve) => (el.readyState >= 1 ? resolve(el.duration) : el.addEventListener("loadedmetadata", () => resolve(el.duration)))),
    );
    expect(duration).toBeGreaterThan(0.3);

    const asr = page.locator("fieldset", { hasText: "Transcription" });
    await asr.getByLabel("Audio file").setInputFiles(jfkSample());
    const transcript = asr.locator(".transcript");
    await transcript.filter({ hasNotText: "Transcribing" }).waitFor({ timeout: 60_000 });
    // The tiny model has random weights: its words are noise, but they came back as text.
    expect((await transcript.textContent())!.trim().length).toBeGreaterThan(0);
    expect(await asr.locator(".error").count()).toBe(0);
    await close(page);
  });

  test("try it: live transcription streams the microphone over /realtime (Chromium's fake microphone)", async () => {
    const withMic = await chromium.launch({ executablePath: CHROMIUM, args: [...FLAGS, "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"] });
    try {
      const page = await withMic.newPage();
      const host = new URL(server.url).host;
      page.on("request", (r) => new URL(r.url()).host !== host && !r.url().startsWith("data:") && !r.url().startsWith("blob:") && foreign.push(r.url()));
      const sockets: string[] = [];
      page.on("websocket", (ws) => sockets.push(ws.url()));
      await page.goto(`${server.url}/#try`);
      const panel = page.locator("fieldset", { hasText: "Transcription" });
      await panel.getByRole("button", { name: "Live" }).click();
      await panel.getByText("Listening…").waitFor({ timeout: 15_000 });
      // The fake microphone beeps; a few seconds of it, then the end of the turn.
      await page.waitForTimeout(2500);
      await panel.getByRole("button", { name: "Stop live" }).click();
      await panel.getByText(/Live: [1-9]\d* segment\(s\) transcribed/).waitFor({ timeout: 30_000 });
      expect(sockets.some((u) => u.includes("/realtime?model=Whisper-Tiny"))).toBe(true);
      expect(await panel.locator(".error").count()).toBe(0);
    } finally {
      await withMic.close();
    }
  });

  test("try it: the embeddings panel compares two texts", async () => {
    const page = await open("/#try");
    const panel = page.locator("fieldset", { hasText: "Embeddings" });
    await panel.getByRole("button", { name: "Compare" }).click();
    await panel.getByText(/Cosine similarity: -?[01]\.\d{4}/).waitFor({ timeout: 30_000 });
    await close(page);
  });

  test("try it: the classification panel shows each label's score, highest first", async () => {
    const page = await open("/#try");
    const panel = page.locator("fieldset", { hasText: "Classification" });
    await panel.getByRole("button", { name: "Classify" }).click();
    const rows = panel.getByRole("list", { name: "Label scores" }).getByRole("listitem");
    await rows.first().waitFor({ timeout: 30_000 });
    const texts = await rows.allTextContents();
    expect(texts.map((t) => t.split(" — ")[1]).sort()).toEqual(["NEGATIVE", "NEUTRAL", "POSITIVE"]);
    const scores = texts.map((t) => Number(t.split(" — ")[0]));
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(scores.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 2);
    await close(page);
  });

  test("settings: a change is saved through /internal/set and read back", async () => {
    const page = await open("/#settings");
    await page.getByLabel("max_loaded_models").fill("4");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText(/Applied now: max_loaded_models/).waitFor();
    expect((await api("/internal/config")).max_loaded_models).toBe(4);
    await close(page);
  });

  test("/docs works offline: the reference renders from the server's own files", async () => {
    const page = await open("/docs");
    await page.locator(".swagger-ui .info .title").waitFor({ timeout: 20_000 });
    expect(await page.locator(".swagger-ui .info .title").textContent()).toContain("Lemonade");
    await close(page);
  });
});

describe("a first start", () => {
  test("with no chat model and an API key: the page asks for the key, then offers the model manager", async () => {
    const fresh = await startTestServer({ LEMONADE_API_KEY: "sk-web" }, undefined, { engines: false });
    try {
      const page = await open("/", fresh);
      await page.getByText("needs its API key").first().waitFor();
      await page.getByRole("button", { name: "Settings" }).click();
      await page.getByLabel("Key").fill("sk-web");
      await page.getByRole("button", { name: "Save key" }).click();
      await page.getByRole("button", { name: "Chat" }).click();
      await page.getByText("No chat model is downloaded yet").waitFor();
      await page.getByRole("button", { name: "Open the Model manager" }).click();
      await page.locator('tr[data-model="Qwen3-0.6B-GGUF"]').waitFor();
      // Phone-sized: still one column, nothing off-screen to the side.
      await page.setViewportSize({ width: 390, height: 844 });
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width).toBeLessThanOrEqual(390 + 200);
      await close(page);
    } finally {
      await fresh.close();
    }
  });
});

// On the FAKE engines, as test/unit/omni.test.ts: the planner is the fake llama-server scripted to
// call a tool, images come from the fake sd-server, speech from espeak-ng.
describe("an Omni collection", () => {
  test("registered from its repository, its row lists its components; in chat its speech plays and its image shows", async () => {
    const manifest = { model_name: "WebOmni", recipe: "collection.omni", components: ["extra.planner", "SD-Turbo", "kokoro-v1"], models: [] };
    const omniHub = startFakeHub({ "test-org/WebOmni": { sha: "e".repeat(40), files: { "WebOmni.json": new TextEncoder().encode(JSON.stringify(manifest)) } } });
    const fake = await startFakeServer(["planner"], { HF_ENDPOINT: omniHub.url, LEMONADE_MAX_LOADED_MODELS: "-1" });
    try {
      // SD-Turbo's file, as a download would leave it (the fake sd-server reads no weights).
      const sha = "c".repeat(40);
      const base = join(fake.cacheDir, "hf", "models--stabilityai--sd-turbo");
      mkdirSync(join(base, "refs"), { recursive: true });
      writeFileSync(join(base, "refs", "main"), sha);
      const file = join(base, "snapshots", sha, "sd_turbo.safetensors");
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, "FAKE");

      const page = await open("/#models", fake);
      await page.getByText("Add a model from Hugging Face").click();
      await page.getByPlaceholder("org/name-GGUF").fill("test-org/WebOmni");
      await page.getByRole("button", { name: "Show variants" }).click();
      const offer = page.locator("p", { hasText: "Omni collection with 3 components" });
      await offer.getByRole("button", { name: "Download" }).click();
      const row = page.locator('tr[data-model="WebOmni"]');
      await row.getByText("collection of extra.planner, SD-Turbo, kokoro-v1").waitFor({ timeout: 15_000 });
      expect(await row.locator("td").nth(1).textContent()).toBe("collection.omni");
      await row.locator('td[data-state="downloaded"]').waitFor();
      let asked = "";
      page.once("dialog", (d) => {
        asked = d.message();
        void d.dismiss();
      });
      await row.getByRole("button", { name: "Delete" }).click();
      expect(asked).toContain("Only the collection entry is removed; its components (extra.planner, SD-Turbo, kokoro-v1) stay");

      await close(page);
      const chat = await open("/?model=WebOmni#chat", fake);
      await expect(chat.getByLabel("Model").inputValue()).resolves.toBe("WebOmni");
      const say = (tool: string, args: Record<string, unknown>) => `[[fake ${JSON.stringify({ call: { name: tool, arguments: args } })}]] go`;
      await chat.getByLabel("Message").fill(say("text_to_speech", { text: "hello from the collection" }));
      await chat.getByRole("button", { name: "Send" }).click();
      const audio = chat.locator(".bubble.assistant .markdown audio[controls]");
      await audio.waitFor({ timeout: 30_000 });
      expect(await audio.getAttribute("src")).toMatch(/^data:audio\/mpeg;base64,/);
      const duration = await audio.evaluate(
        (el: HTMLAudioElement) => new Promise<number>((resolve) => (el.readyState >= 1 ? resolve(el.duration) : el.addEventListener("loadedmetadata", () => resolve(el.duration)))),
      );
      expect(duration).toBeGreaterThan(0.3);
      // The fake planner reads the first directive of the conversation: a new one for the image.
      await chat.getByRole("button", { name: "New chat" }).click();
      await chat.getByLabel("Message").fill(say("generate_image", { prompt: "a lemon", size: "64x64" }));
      await chat.getByRole("button", { name: "Send" }).click();
      const image = chat.locator('.bubble.assistant .markdown img[alt="generated image"]');
      await image.waitFor({ timeout: 30_000 });
      expect(await image.evaluate((el: HTMLImageElement) => el.decode().then(() => el.naturalWidth))).toBe(64);
      await close(chat);
    } finally {
      await fake.close();
      omniHub.stop();
    }
  }, 60_000);
});

test("no page made a request to any host but the server", () => {
  expect(foreign).toEqual([]);
});
