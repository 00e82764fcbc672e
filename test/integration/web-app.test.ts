// The web app in headless Chromium (Debian's package, driven by playwright-core) against a real
// server: the tiny chat model on llama-server, the tiny whisper model, espeak-ng speech and the
// test hub. Every request the page makes is recorded; one to another host fails the test.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { AxeBuilder } from "@axe-core/playwright";
import { classifierDir, jfkSample, MODELS, testModelsDir } from "../helpers/engines.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { startFakeHub, type FakeHub, type HubRepo } from "../helpers/fake-hub.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";
import { CHROMIUM, closePage, FLAGS, offScreenButtons, openPage, requireChromium, shot } from "../helpers/browser.ts";

let browser: Browser;
let server: TestServer;
let hub: FakeHub;
/** The hub's repositories, read on each request: a test moves one on by changing its sha. */
let repos: Record<string, HubRepo>;
const foreign: string[] = [];

/** A page of the app at `path` on `s`. */
const open = (path = "/", s: TestServer = server, before?: (page: Page) => Promise<void>) => openPage(browser, s.url, path, foreign, before);
const close = closePage;

beforeAll(async () => {
  requireChromium();
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
  // A second chat model, for Compare.
  copyFileSync(join(models, MODELS.chat), join(extra, "tiny-chat-b.gguf"));
  const gguf = new Uint8Array(readFileSync(join(models, MODELS.chat)));
  repos = {
    "test-org/web-GGUF": { sha: "d".repeat(40), files: { "web-Q4_0.gguf": gguf } },
    "test-org/cancel-GGUF": { sha: "f".repeat(40), files: { "cancel-Q4_0.gguf": gguf } },
    "test-org/update-GGUF": { sha: "1".repeat(40), files: { "update-Q4_0.gguf": gguf } },
    "test-org/keep-GGUF": { sha: "2".repeat(40), files: { "keep-Q4_0.gguf": gguf } },
  };
  hub = startFakeHub(repos);
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
    // A name the bundle lacks, even one every object has, is not a file.
    for (const file of ["missing.js", "constructor", "__proto__"]) expect((await fetch(`${server.url}/app/assets/${file}`)).status, file).toBe(404);
  });

  test("chat: pick the tiny model, send a message, see the reply stream in with its speed", async () => {
    const page = await open("/?model=extra.tiny-chat#chat");
    await page.getByText("Sampling settings").click();
    await page.getByLabel("Max tokens").fill("12");
    await expect(page.getByLabel("Model").inputValue()).resolves.toBe("tiny-chat");
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
    const row = page.locator('tr[data-model="tiny-chat"]');
    await row.getByRole("button", { name: "Load" }).click();
    await row.locator('td[data-state="loaded"]').waitFor({ timeout: 30_000 });
    expect((await api("/v1/health")).all_models_loaded.map((m: any) => m.model_name)).toContain("tiny-chat");
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

  test("model manager: Load of a model whose engine is being installed says so, and cannot be clicked again; the Downloads badge counts the install", async () => {
    await fetch(`${server.url}/v1/unload`, { method: "POST", body: "{}" });
    const page = await open("/#models");
    // The server lists no install now (the engine is here); the page is shown one under way, and
    // the load is held until the test has seen the phase.
    await page.route("**/v1/installs", (route) => route.fulfill({ json: [{ recipe: "llamacpp", backend: "cpu", phase: "build", percent: 40 }] }));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route("**/v1/load", async (route) => {
      await held;
      await route.continue();
    });
    await page.getByRole("button", { name: "Downloads" }).getByLabel("1 active").waitFor();
    const row = page.locator('tr[data-model="tiny-chat"]');
    await row.getByRole("button", { name: "Load" }).click();
    expect(await row.getByRole("button", { name: "Load" }).isDisabled()).toBe(true);
    await row.locator('td[data-label="State"] .phase', { hasText: "Installing llamacpp (cpu) — build, 40 %" }).waitFor();
    release();
    await row.locator('td[data-state="loaded"]').waitFor({ timeout: 30_000 });
    expect(await row.locator(".phase").count()).toBe(0);
    await close(page);
  });

  test("layout: the status bar and the composer are on screen under the chat at 1280×800 and 390×844", async () => {
    const page = await open("/?model=extra.tiny-chat#chat");
    for (const [width, height] of [[1280, 800], [390, 844]] as const) {
      await page.setViewportSize({ width, height });
      for (const part of [page.locator("footer.status"), page.getByRole("button", { name: "Send" })]) {
        const box = (await part.boundingBox())!;
        expect([box.x >= 0, box.y >= 0, box.x + box.width <= width, box.y + box.height <= height], `${await part.textContent()} at ${width}`).toEqual([true, true, true, true]);
      }
    }
    await close(page);
  });

  test("toasts: news goes by itself after a while, a failure stays until dismissed; they sit under the panel, not over its buttons", async () => {
    const job = (id: string, status: string) => ({ id, model_name: id, status, error: status === "error" ? "disk full" : undefined, percent: 50, running: status === "downloading", overall_bytes_downloaded: 0, overall_bytes_total: 0 });
    let jobs = [job("ToastDone", "downloading"), job("ToastFail", "downloading")];
    const page = await open("/#models", server, async (p) => {
      await p.clock.install();
      await p.route("**/v1/downloads", (route) => route.fulfill({ json: jobs }));
    });
    await page.locator('tr[data-model="tiny-chat"]').waitFor();
    await page.waitForResponse((r) => r.url().endsWith("/v1/downloads"));
    jobs = [job("ToastDone", "completed"), job("ToastFail", "error")];
    const done = page.locator(".toast", { hasText: "Download of ToastDone done" });
    const failed = page.locator(".toast.error", { hasText: "Download of ToastFail failed: disk full" });
    await done.waitFor({ timeout: 10_000 });
    await failed.waitFor();
    const main = (await page.locator("main").boundingBox())!;
    for (const t of [done, failed]) expect((await t.boundingBox())!.y).toBeGreaterThanOrEqual(main.y + main.height);
    const dismiss = (await failed.getByRole("button", { name: "Dismiss" }).boundingBox())!;
    expect([dismiss.width >= 24, dismiss.height >= 24]).toEqual([true, true]);
    await page.clock.fastForward(7000);
    await done.waitFor({ state: "detached" });
    expect(await failed.count()).toBe(1);
    await failed.getByRole("button", { name: "Dismiss" }).click();
    await failed.waitFor({ state: "detached" });
    await close(page);
  });

  test("logs: the live log shows a line the server writes now", async () => {
    const page = await open("/#logs");
    await page.getByText("live", { exact: true }).waitFor();
    // A provider at a closed port: the server warns that it cannot be reached.
    // It has a key (a keyless provider is never asked), sent over plain http to loopback by opt-in.
    await fetch(`${server.url}/v1/install`, { method: "POST", body: JSON.stringify({ backend: "cloud", provider: "weblog", base_url: "http://127.0.0.1:9/v1", api_key: "k", allow_insecure_http: true }) });
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

// On the FAKE engines, as test/integration/omni.test.ts: the planner is the fake llama-server scripted to
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
      // A user's collection is listed by its user. id; its components by their listed ids.
      const row = page.locator('tr[data-model="user.WebOmni"]');
      await row.getByText("collection of planner, SD-Turbo, kokoro-v1").waitFor({ timeout: 15_000 });
      expect(await row.locator("td").nth(1).textContent()).toBe("collection.omni");
      await row.locator('td[data-state="downloaded"]').waitFor();
      let asked = "";
      page.once("dialog", (d) => {
        asked = d.message();
        void d.dismiss();
      });
      await row.getByRole("button", { name: "Delete" }).click();
      expect(asked).toContain("Only the collection entry is removed; its components (planner, SD-Turbo, kokoro-v1) stay");

      await close(page);
      const chat = await open("/?model=WebOmni#chat", fake);
      await expect(chat.getByLabel("Model").inputValue()).resolves.toBe("user.WebOmni");
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

/** Puts a conversation into the app's IndexedDB and opens it. */
async function seedConversation(page: Page, conversation: Record<string, unknown>): Promise<void> {
  await page.evaluate(
    (c) =>
      new Promise<void>((resolve, reject) => {
        const req = indexedDB.open("lemonade", 1);
        req.onupgradeneeded = () => req.result.createObjectStore("conversations", { keyPath: "id" });
        req.onsuccess = () => {
          const tx = req.result.transaction("conversations", "readwrite");
          tx.objectStore("conversations").put(c);
          tx.oncomplete = () => (req.result.close(), resolve());
          tx.onerror = () => reject(tx.error);
        };
        req.onerror = () => reject(req.error);
      }),
    conversation,
  );
  await page.evaluate((id) => localStorage.setItem("lemonade.currentConversation", JSON.stringify(id)), conversation.id as string);
  await page.reload();
}

describe("the web app, second edition (issue 29)", () => {
  test("downloads: a pull is first in the model manager and in Downloads with speed and time left; pause, resume, cancel, retry, a toast, clear", async () => {
    const reg = await fetch(`${server.url}/v1/models/register`, { method: "POST", body: JSON.stringify({ model_name: "user.WebCancel", recipe: "llamacpp", checkpoint: "test-org/cancel-GGUF:Q4_0" }) });
    expect(reg.status).toBe(200);
    hub.delayMs = 30;
    const page = await open("/#models");
    const row = page.locator('tr[data-model="WebCancel"]');
    await row.getByRole("button", { name: "Download" }).click();
    // Defect 3: a download that starts is "started", not "done".
    await page.getByText("Download of WebCancel started").waitFor();
    await row.locator("progress").waitFor();
    // Defect 4: the download in progress leads the table.
    expect(await page.locator("table.catalog tbody tr[data-model]").first().getAttribute("data-model")).toBe("WebCancel");
    expect(await page.locator("table.catalog tr.section").first().textContent()).toBe("Downloading");
    await page.locator("nav .nav-badge", { hasText: "1" }).waitFor();
    await shot(page, "models");
    await page.getByRole("button", { name: "Downloads" }).click();
    const card = page.locator('li[data-job="WebCancel"]');
    await card.getByText(/MB\/s · .+ left/).waitFor({ timeout: 15_000 });
    await shot(page, "downloads");
    await card.getByRole("button", { name: "Pause" }).click();
    await page.locator('li[data-job="WebCancel"][data-status="paused"]').waitFor();
    await card.getByRole("button", { name: "Resume" }).click();
    await page.locator('li[data-job="WebCancel"][data-status="downloading"]').waitFor();
    await card.getByRole("button", { name: "Cancel" }).click();
    await page.locator('li[data-job="WebCancel"][data-status="cancelled"]').waitFor();
    expect(await card.getByRole("button", { name: /^(Resume|Cancel|Pause)$/ }).count()).toBe(0);
    // Defect 3: its partial file is gone, and the model's row offers a new download, not Resume.
    await page.getByRole("button", { name: "Model manager" }).click();
    await row.getByRole("button", { name: "Download" }).waitFor();
    expect(await row.getByRole("button", { name: "Resume" }).count()).toBe(0);
    hub.delayMs = 0;
    await page.getByRole("button", { name: "Downloads" }).click();
    await card.getByRole("button", { name: "Retry" }).click();
    await page.locator(".toast", { hasText: "Download of WebCancel done" }).waitFor({ timeout: 30_000 });
    await page.getByRole("button", { name: /Clear finished/ }).click();
    await card.waitFor({ state: "detached" });
    await close(page);
  });

  test("a model whose repository moved on is marked 'update available'; Remove takes one finished job off Downloads, the others stay", async () => {
    for (const name of ["WebUpd", "WebKeep"]) {
      const reg = await fetch(`${server.url}/v1/models/register`, { method: "POST", body: JSON.stringify({ model_name: `user.${name}`, recipe: "llamacpp", checkpoint: `test-org/${name === "WebUpd" ? "update" : "keep"}-GGUF:Q4_0` }) });
      expect(reg.status).toBe(200);
      // As the app pulls: a server-owned job, which stays listed once it is done.
      await fetch(`${server.url}/v1/pull`, { method: "POST", body: JSON.stringify({ model_name: `user.${name}`, stream: true, subscribe: false }) }).then((r) => r.json());
    }
    const status = async (id: string) => ((await api("/v1/downloads")) as any[]).find((j) => j.id === id)?.status;
    for (const id of ["model:user.WebUpd", "model:user.WebKeep"]) {
      while ((await status(id)) === "downloading") await Bun.sleep(100);
      expect(await status(id)).toBe("completed");
    }
    repos["test-org/update-GGUF"]!.sha = "3".repeat(40);
    expect((await api("/v1/models/check-updates", { method: "POST", body: "{}" })).models).toContain("user.WebUpd");
    const page = await open("/#models");
    await page.locator('tr[data-model="WebUpd"] td[data-label="Model"] .badge', { hasText: "update available" }).waitFor();
    expect(await page.locator('tr[data-model="WebKeep"] .badge', { hasText: "update available" }).count()).toBe(0);

    await page.getByRole("button", { name: "Downloads" }).click();
    const gone = page.locator('li[data-job="user.WebUpd"][data-status="completed"]');
    const kept = page.locator('li[data-job="user.WebKeep"][data-status="completed"]');
    await gone.waitFor();
    await kept.waitFor();
    const others = await page.locator("li[data-job]").count();
    await gone.getByRole("button", { name: "Remove" }).click();
    await gone.waitFor({ state: "detached" });
    expect([await kept.count(), await page.locator("li[data-job]").count()]).toEqual([1, others - 1]);
    expect([await status("model:user.WebUpd"), await status("model:user.WebKeep")]).toEqual([undefined, "completed"]);
    await close(page);
  });

  test("only the actions a model or backend can take; at 390 px every button of the model manager and backends is on screen", async () => {
    const page = await open("/#models");
    await page.locator('tr[data-model="tiny-chat"]').waitFor();
    // Defect 5: no Delete for an extra. model (its file is its folder's) nor a built-in engine's.
    for (const id of ["tiny-chat", "kokoro-v1"]) expect(await page.locator(`tr[data-model="${id}"]`).getByRole("button", { name: "Delete" }).count()).toBe(0);
    expect(await page.locator('tr[data-model="WebCancel"]').getByRole("button", { name: "Delete" }).count()).toBe(1);
    // Defect 12: the cells keep their borders in line: the actions cell is a table cell.
    expect(await page.locator('tr[data-model="tiny-chat"] td.actions').evaluate((td) => getComputedStyle(td).display)).toBe("table-cell");
    await page.getByRole("button", { name: "Backends" }).click();
    await page.locator('tr[data-backend="onnxruntime:cpu"]').waitFor();
    expect(await page.locator('tr[data-backend="onnxruntime:cpu"]').getByRole("button", { name: "Uninstall" }).count()).toBe(0);
    // A cloud provider with its key, added here (at a closed port: it lists no model).
    await page.getByText("Add a cloud provider").click();
    await page.getByLabel("Provider name").fill("webform");
    await page.getByLabel("Base URL").fill("http://127.0.0.1:9/v1");
    await page.getByLabel("API key").fill("sk-form");
    // A key to a plain-http provider needs the opt-in, which the form offers only for http:// URLs.
    await page.getByLabel("Send the key over plain http (unencrypted)").check();
    await page.getByRole("button", { name: "Add provider" }).click();
    await page.getByText("Added webform: 0 model(s) found").waitFor();
    await fetch(`${server.url}/v1/uninstall`, { method: "POST", body: JSON.stringify({ backend: "cloud", provider: "webform" }) });
    await shot(page, "backends");
    // Defect 11: on a phone the tables are cards, their buttons within reach.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await offScreenButtons(page)).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot(page, "backends");
    await page.getByRole("button", { name: "Model manager" }).click();
    await page.locator('tr[data-model="tiny-chat"]').waitFor();
    expect(await offScreenButtons(page)).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(await page.locator('tr[data-model="tiny-chat"]').getByRole("button", { name: "Load" }).isVisible()).toBe(true);
    await shot(page, "models");
    await page.getByRole("button", { name: "Downloads" }).click();
    await shot(page, "downloads");
    await close(page);
  });

  test("settings are typed from the schema: switches, selects, bounds, descriptions; nothing is coerced, errors show at their field", async () => {
    const before = await api("/internal/config");
    const page = await open("/#settings");
    // Defect 6: a boolean is a switch (no "yes" to type), an enum a select.
    await page.getByRole("switch", { name: "offline" }).waitFor();
    // An off switch's track stands out from the page by at least 3:1 (WCAG 1.4.11), in either theme.
    for (const theme of ["light", "dark"]) {
      await page.evaluate((t) => (document.documentElement.dataset.theme = t), theme);
      const ratio = await page.locator(".switch:not(:checked)").first().evaluate((el) => {
        const luminance = (css: string) => {
          const [r, g, b] = css.match(/\d+/g)!.slice(0, 3).map((v) => Number(v) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
          return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
        };
        const [a, b] = [luminance(getComputedStyle(el).backgroundColor), luminance(getComputedStyle(document.body).backgroundColor)];
        return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      });
      expect(ratio, theme).toBeGreaterThanOrEqual(3);
    }
    await page.evaluate(() => delete document.documentElement.dataset.theme);
    expect(await page.getByRole("combobox", { name: "log_level" }).locator("option").allTextContents()).toContain("debug");
    expect(await page.locator('[data-setting="ctx_size"] .doc').textContent()).toContain("-1 sizes it automatically");
    await page.getByLabel("ctx_size").fill("lots");
    await page.locator('[data-setting="ctx_size"] .field-error', { hasText: "must be a number" }).waitFor();
    await page.getByLabel("max_loaded_models").fill("0");
    await page.locator('[data-setting="max_loaded_models"] .field-error', { hasText: "must be -1 or 1 to" }).waitFor();
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Nothing was saved: fix the fields marked.").waitFor();
    const after = await api("/internal/config");
    expect([after.ctx_size, after.max_loaded_models]).toEqual([before.ctx_size, before.max_loaded_models]);
    await shot(page, "settings");
    // What the server refuses is shown at the field it names.
    await page.reload();
    await page.route("**/internal/set", (route) => route.fulfill({ status: 400, contentType: "application/json", body: JSON.stringify({ error: { message: "'host' must be an address this machine has", type: "invalid_argument" }, param: "host" }) }));
    await page.getByLabel("host", { exact: true }).fill("nowhere");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.locator('[data-setting="host"] .field-error', { hasText: "'host' must be an address" }).waitFor();
    await page.unroute("**/internal/set");
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "settings");

    // The model Options editor: numbers stay numbers, model_name is not editable.
    const saved = (await api("/v1/models/extra.tiny-chat/options")).saved;
    await page.goto(`${server.url}/#models`);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.locator('tr[data-model="tiny-chat"]').getByRole("button", { name: "Options" }).click();
    expect(await page.getByLabel("New model_name").count()).toBe(0);
    await page.getByLabel("New ctx_size").fill("abc");
    await page.getByText("ctx_size must be a number").waitFor();
    await page.getByRole("button", { name: "Save options" }).click();
    await page.getByText("Fix the values marked first; nothing was saved.").waitFor();
    expect((await api("/v1/models/extra.tiny-chat/options")).saved).toEqual(saved);
    // Load with options: this load only, nothing saved.
    await page.getByLabel("New ctx_size").fill("2048");
    await page.getByRole("button", { name: "Load with these options" }).click();
    await page.getByText("Loaded tiny-chat with these options.").waitFor({ timeout: 30_000 });
    const entry = (await api("/v1/health")).all_models_loaded.find((m: any) => m.model_name === "tiny-chat");
    expect(entry.recipe_options.ctx_size).toBe(2048);
    expect((await api("/v1/models/extra.tiny-chat/options")).saved).toEqual(saved);
    await close(page);
  });

  test("logs reconnect after the stream closes (a server restart)", async () => {
    let connections = 0;
    const page = await open("/#logs", server, (p) =>
      p.routeWebSocket(/\/logs\/stream/, (ws) => {
        // The first connection drops at once, as when the server goes away; the next one is the server's.
        if (connections++ === 0) void ws.close();
        else ws.connectToServer();
      }),
    );
    await page.getByText("live", { exact: true }).waitFor({ timeout: 15_000 });
    expect(connections).toBeGreaterThanOrEqual(2);
    await fetch(`${server.url}/v1/install`, { method: "POST", body: JSON.stringify({ backend: "cloud", provider: "webagain", base_url: "http://127.0.0.1:9/v1", api_key: "k", allow_insecure_http: true }) });
    await page.locator(".log", { hasText: "Cloud provider webagain could not be reached" }).waitFor();
    await fetch(`${server.url}/v1/uninstall`, { method: "POST", body: JSON.stringify({ backend: "cloud", provider: "webagain" }) });
    await shot(page, "logs");
    await page.setViewportSize({ width: 390, height: 844 });
    // Long lines wrap on a phone: the panel is not wider than the screen, nor the lines than the panel.
    const lines = page.getByRole("log", { name: "Log lines" });
    const [scroll, client] = await lines.evaluate((el) => [el.scrollWidth, el.clientWidth]);
    expect(scroll).toBeLessThanOrEqual(client);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot(page, "logs");
    await close(page);
  });

  test("try it: a later success clears the rerank error; hidden panels name the model they need; empty speech text is explained", async () => {
    const page = await open("/");
    // A reranking model, and a rerank that fails once, stood in for by the page's own routes.
    await page.route(
      (url) => url.pathname === "/v1/models",
      async (route) => {
        const body = await (await route.fetch()).json();
        body.data.push({ id: "web-rerank", recipe: "llamacpp", labels: ["reranking"], downloaded: true, suggested: false });
        await route.fulfill({ json: body });
      },
    );
    let ranks = 0;
    await page.route("**/v1/rerank", (route) =>
      ranks++ === 0
        ? route.fulfill({ status: 500, json: { error: { message: "the engine crashed", type: "server_error" } } })
        : route.fulfill({ json: { results: [{ index: 0, relevance_score: 0.9 }, { index: 1, relevance_score: 0.1 }, { index: 2, relevance_score: 0.5 }] } }),
    );
    await page.goto(`${server.url}/#try`);
    const panel = page.locator("fieldset", { hasText: "Reranking" });
    await panel.getByRole("button", { name: "Rank" }).click();
    await panel.locator(".error", { hasText: "the engine crashed" }).waitFor();
    await panel.getByRole("button", { name: "Rank" }).click();
    await panel.getByText("0.900 — A lemon is a citrus fruit.").waitFor();
    expect(await panel.locator(".error").count()).toBe(0);
    const speech = page.locator("fieldset", { hasText: "Text to speech" });
    await speech.getByLabel("Text").fill("");
    await speech.getByRole("button", { name: "Speak" }).click();
    await speech.getByText("Type some text to speak.").waitFor();
    await shot(page, "try");
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "try");
    await page.setViewportSize({ width: 1280, height: 800 });
    // No image model here: the panel's absence is explained, with a way to find one.
    const hint = page.locator(".missing li", { hasText: "Images needs a model labelled image" });
    await hint.getByRole("link").click();
    expect(await page.locator(".filters label", { hasText: /^Label/ }).locator("select").inputValue()).toBe("image");
    await close(page);
  });

  test("chat: conversations kept in the browser; edit and resend, regenerate, copy, read aloud, delete, export; the wait before the first token with its load time", async () => {
    await fetch(`${server.url}/v1/unload`, { method: "POST", body: "{}" });
    const page = await open("/?model=extra.tiny-chat#chat");
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
    const asked: unknown[] = [];
    page.on("request", (r) => r.url().endsWith("/v1/chat/completions") && asked.push(r.postDataJSON()));
    await page.getByText("Sampling settings").click();
    await page.getByLabel("Max tokens").fill("8");
    await page.getByLabel("Top k").fill("20");
    await page.getByLabel("Seed").fill("7");
    await page.getByLabel("System prompt (this conversation)").fill("You are terse.");
    // A sampling value that is not a number is refused at its field, and nothing is sent.
    await page.getByLabel("Temperature").fill("abc");
    await page.getByLabel("Message").fill("First question");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".sampling label", { hasText: "Temperature" }).getByRole("alert").getByText("must be a number").waitFor();
    await page.getByText("Fix the sampling settings first: temperature.").waitFor();
    expect(await page.getByLabel("Temperature").getAttribute("aria-invalid")).toBe("true");
    expect(asked).toEqual([]);
    await page.getByLabel("Temperature").fill("0.2");
    await page.getByLabel("Top p").fill("0.9");
    await page.getByLabel("Min p").fill("0.05");
    await page.getByLabel("Repeat penalty").fill("1.1");
    await page.getByRole("switch", { name: "Thinking" }).uncheck();
    const sent = page.waitForRequest("**/v1/chat/completions");
    await page.getByRole("button", { name: "Send" }).click();
    const body = (await sent).postDataJSON();
    expect([body.messages[0], body.top_k, body.seed, body.max_tokens]).toEqual([{ role: "system", content: "You are terse." }, 20, 7, 8]);
    expect([body.temperature, body.top_p, body.min_p, body.repeat_penalty, body.chat_template_kwargs]).toEqual([0.2, 0.9, 0.05, 1.1, { enable_thinking: false }]);
    // Defect 9: the model was not loaded: what the user waited for, and the load apart from it.
    const stats = page.locator(".bubble.assistant .stats");
    await stats.waitFor({ timeout: 30_000 });
    expect(await stats.textContent()).toMatch(/TTFT \d+ ms · model load \d+ ms/);
    await shot(page, "chat");

    // Regenerate: one reply, made anew.
    await page.getByRole("button", { name: "Regenerate the reply" }).click();
    await stats.waitFor({ timeout: 30_000 });
    expect(await page.locator(".bubble.assistant").count()).toBe(1);
    await page.getByRole("button", { name: "Copy the reply" }).click();
    await page.getByRole("button", { name: "Copy the reply" }).getByText("Copied").waitFor();
    const speech = page.waitForResponse("**/v1/audio/speech");
    await page.getByRole("button", { name: "Read the reply aloud" }).click();
    expect((await speech).status()).toBe(200);
    // Edit the question and resend: the answer after it is replaced.
    await page.getByRole("button", { name: "Edit what you wrote" }).click();
    await page.getByLabel("Edit message").fill("Second question");
    await page.getByRole("button", { name: "Save and resend" }).click();
    await page.locator(".bubble.user", { hasText: "Second question" }).waitFor();
    await stats.waitFor({ timeout: 30_000 });
    expect(await page.locator(".bubble.user").count()).toBe(1);

    // Export as Markdown and JSON.
    await page.getByText("Export").click();
    const md = page.waitForEvent("download");
    await page.getByRole("button", { name: "Markdown" }).click();
    expect(readFileSync((await (await md).path())!, "utf8")).toContain("## User\n\nSecond question");
    const json = page.waitForEvent("download");
    await page.getByRole("button", { name: "JSON", exact: true }).click();
    expect(JSON.parse(readFileSync((await (await json).path())!, "utf8")).system).toBe("You are terse.");

    // Defect 10: New chat keeps the old conversation in the list; rename, search, delete.
    await page.getByRole("button", { name: "New chat" }).click();
    expect(await page.locator(".bubble").count()).toBe(0);
    const list = page.getByRole("navigation", { name: "Conversations" });
    page.once("dialog", (d) => void d.accept("Lemon talk"));
    await list.getByRole("button", { name: "Rename First question" }).click();
    await list.getByRole("button", { name: "Lemon talk", exact: true }).click();
    await page.locator(".bubble.user", { hasText: "Second question" }).waitFor();
    await page.getByRole("button", { name: "Delete the reply" }).click();
    expect(await page.locator(".bubble.assistant").count()).toBe(0);
    await page.reload();
    await list.getByRole("button", { name: "Lemon talk", exact: true }).waitFor();
    await list.getByLabel("Search conversations").fill("lemon");
    expect(await list.getByRole("listitem").count()).toBe(1);
    page.once("dialog", (d) => void d.accept());
    await list.getByRole("button", { name: "Delete Lemon talk" }).click();
    await list.getByRole("button", { name: "Lemon talk", exact: true }).waitFor({ state: "detached" });
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "chat");
    await close(page);
  }, 90_000);

  test("replies: LaTeX through KaTeX, links in a new tab without a handle on the app; images by file, paste and drop for a vision model", async () => {
    const page = await open("/#chat");
    // The tiny model stands in for a vision one.
    await page.route(
      (url) => url.pathname === "/v1/models",
      async (route) => {
        const body = await (await route.fetch()).json();
        for (const m of body.data) if (m.id === "tiny-chat") m.labels.push("vision");
        await route.fulfill({ json: body });
      },
    );
    await seedConversation(page, {
      id: "seeded",
      title: "Seeded",
      model: "tiny-chat",
      system: "",
      updated: Date.now(),
      messages: [
        { role: "user", content: "Physics?" },
        { role: "assistant", content: "See [the docs](https://example.com/) for $E = mc^2$.\n\n$$\\int_0^1 x\\,dx$$" },
      ],
    });
    const reply = page.locator(".bubble.assistant .markdown");
    await reply.locator("math").first().waitFor();
    expect(await reply.locator("math").count()).toBe(2);
    expect(await reply.textContent()).not.toContain("$E");
    const link = reply.getByRole("link", { name: "the docs" });
    expect([await link.getAttribute("target"), await link.getAttribute("rel")]).toEqual(["_blank", "noopener noreferrer"]);

    const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
    await page.getByLabel("Image").setInputFiles({ name: "dot.png", mimeType: "image/png", buffer: png });
    await page.getByAltText("Image to send").waitFor();
    await page.getByRole("button", { name: "Remove image" }).click();
    const drop = (type: "paste" | "drop") =>
      page.evaluate(
        ([kind, b64]) => {
          const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
          const data = new DataTransfer();
          data.items.add(new File([bytes], "dot.png", { type: "image/png" }));
          const target = document.querySelector(kind === "paste" ? "textarea[aria-label=Message]" : "form.composer")!;
          target.dispatchEvent(kind === "paste" ? new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }) : new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
        },
        [type, png.toString("base64")] as const,
      );
    for (const kind of ["paste", "drop"] as const) {
      await drop(kind);
      await page.getByAltText("Image to send").waitFor();
      await page.getByRole("button", { name: "Remove image" }).click();
    }

    // Defect 2: before the first token the reply says what the server is doing: here an engine
    // that is not installed (as system-info says, stood in for), then the load.
    await fetch(`${server.url}/v1/unload`, { method: "POST", body: "{}" });
    await page.route("**/v1/system-info", async (route) => {
      const info = await (await route.fetch()).json();
      info.recipes.llamacpp.default_backend = "cpu";
      info.recipes.llamacpp.backends.cpu.state = "installable";
      await route.fulfill({ json: info });
    });
    await page.route("**/v1/chat/completions", async (route) => {
      await Bun.sleep(2500);
      await route.continue();
    });
    // The server lists no install now (none runs); the page is shown one under way.
    expect(await api("/v1/installs")).toEqual([]);
    await page.route("**/v1/installs", (route) => route.fulfill({ json: [{ recipe: "llamacpp", backend: "cpu", phase: "build", percent: 40 }] }));
    await page.getByText("Sampling settings").click();
    await page.getByLabel("Max tokens").fill("4");
    await page.getByLabel("Message").fill("Hi");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".bubble.assistant .phase", { hasText: "Installing llamacpp (cpu), then loading tiny-chat…" }).waitFor();
    await page.locator(".bubble.assistant .phase", { hasText: "Installing llamacpp (cpu) — build, 40 %" }).waitFor();
    await page.locator(".bubble.assistant .stats").last().waitFor({ timeout: 30_000 });
    await page.getByRole("button", { name: "Downloads" }).click();
    await page.locator('li[data-install="llamacpp:cpu"]', { hasText: "build, 40 %" }).waitFor();
    await close(page);
  });

  test("favicon, distinct labels and the theme toggle", async () => {
    const missing: string[] = [];
    const page = await open("/docs");
    page.on("response", (r) => r.status() === 404 && missing.push(r.url()));
    await page.locator(".swagger-ui .info .title").waitFor({ timeout: 20_000 });
    expect(await page.locator('link[rel="icon"]').getAttribute("href")).toStartWith("data:image/svg+xml");
    await page.goto(`${server.url}/#models`);
    await page.locator('tr[data-model="tiny-chat"]').waitFor();
    await page.getByText("Add a model from Hugging Face").click();
    // Defect 12: no two inputs called "Search".
    expect(await page.getByLabel("Search", { exact: true }).count()).toBe(0);
    expect(await page.getByLabel("Filter models").count()).toBe(1);
    expect(await page.getByLabel("Search Hugging Face").count()).toBe(1);
    await page.getByLabel("Theme").selectOption("dark");
    await page.waitForFunction(() => document.documentElement.dataset.theme === "dark");
    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.theme === "dark");
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe("rgb(23, 23, 26)");
    expect(missing).toEqual([]);
    await close(page);
  });

  test("compare: one prompt to two models, both streaming, tokens/s and time to first token under each", async () => {
    const page = await open("/#compare");
    await page.getByLabel("Left model").selectOption("tiny-chat");
    await page.getByLabel("Right model").selectOption("tiny-chat-b");
    await page.getByLabel("Max tokens").fill("8");
    await page.getByLabel("Prompt").fill("Say something sour");
    await page.getByRole("button", { name: "Send to both" }).click();
    for (const side of ["left", "right"]) {
      const stats = page.locator(`[data-side="${side}"] .stats`);
      await stats.waitFor({ timeout: 30_000 });
      expect(await stats.textContent()).toMatch(/[\d.]+ tokens\/s · TTFT \d+ ms/);
    }
    expect(await page.locator('[data-side="right"] .hint').textContent()).toBe("tiny-chat-b");
    await shot(page, "compare");
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "compare");
    await close(page);
  });

  test("dashboard: loaded models, host figures and live charts from /metrics", async () => {
    await fetch(`${server.url}/v1/load`, { method: "POST", body: JSON.stringify({ model_name: "extra.tiny-chat" }) });
    const page = await open("/#dashboard");
    const row = page.locator('tr[data-loaded="tiny-chat"]');
    await row.waitFor();
    // Its slots and the memory the server estimates for it, as /v1/health reports them.
    const entry = (await api("/v1/health")).all_models_loaded.find((m: any) => m.model_name === "tiny-chat");
    expect(await row.locator("td[data-slots]").textContent()).toContain(`of ${entry.slots}`);
    expect(await row.locator("td[data-memory]").textContent()).toBe(`≈ ${(entry.memory_estimate_bytes / 1024 ** 2).toFixed(0)} MiB`);
    await page.locator(".dashboard .host").getByText(/RAM in use \d/).waitFor();
    // A request between two scrapes shows in the charts.
    await page.waitForResponse((r) => r.url().endsWith("/metrics"));
    await api("/v1/chat/completions", { method: "POST", body: JSON.stringify({ model: "extra.tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 4 }) });
    await page.locator('[data-chart="Requests per minute"] strong', { hasText: /^[1-9][\d.]* \/min$/ }).waitFor({ timeout: 15_000 });
    expect(await page.locator(".chart canvas").count()).toBe(3);
    // Each chart's time axis spans the last 15 minutes, however few points it has.
    expect(await page.locator(".chart [data-x-span]").evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.xSpan))).toEqual(["900", "900", "900"]);
    await shot(page, "dashboard");
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "dashboard");
    // A model leaving memory is a toast, whichever panel is open.
    await fetch(`${server.url}/v1/unload`, { method: "POST", body: JSON.stringify({ model_name: "extra.tiny-chat" }) });
    await page.locator(".toast", { hasText: "tiny-chat was unloaded" }).waitFor({ timeout: 10_000 });
    await close(page);
  });

  test("dashboard: a model the runtime monitor flags as slow is shown with the re-tune it suggests", async () => {
    const page = await open("/#dashboard");
    // The monitor's own rule (under half the tuned speed) is tested on the server; here, that its flag reaches the user.
    await page.route("**/v1/health", async (route) => {
      const health = await (await route.fetch()).json();
      const retune = [{ model_name: "extra.tiny-chat", expected_tokens_per_second: 240, observed_tokens_per_second: 60.5, hint: "lemonade tune extra.tiny-chat" }];
      await route.fulfill({ json: { ...health, auto_tune: { ...health.auto_tune, retune_suggested: retune } } });
    });
    const flag = page.locator('[data-retune="extra.tiny-chat"]');
    await flag.waitFor({ timeout: 10_000 });
    expect(await flag.textContent()).toContain("lemonade tune extra.tiny-chat");
    expect(await flag.textContent()).toContain("60.5 tokens/s");
    await close(page);
  });

  test("accessibility: axe-core finds no serious or critical violation on any panel, light and dark, at 1280×800 and 390×844", async () => {
    const page = await open("/#chat");
    const found: string[] = [];
    for (const theme of ["light", "dark"]) {
      await page.getByLabel("Theme").selectOption(theme);
      await page.waitForFunction((t) => document.documentElement.dataset.theme === t, theme);
      for (const [width, height] of [[1280, 800], [390, 844]] as const) {
        await page.setViewportSize({ width, height });
        for (const panel of ["chat", "models", "downloads", "compare", "dashboard", "try", "backends", "logs", "settings"]) {
          await page.goto(`${server.url}/#${panel}`);
          await page.locator("main > *").first().waitFor();
          await page.waitForFunction(() => ![...document.querySelectorAll("main p")].some((p) => p.textContent!.startsWith("Loading")));
          // The theme is the stored one, after each navigation.
          expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
          const { violations } = await new AxeBuilder({ page }).analyze();
          for (const v of violations) {
            if (v.impact === "serious" || v.impact === "critical") found.push(`${panel} ${theme} ${width}: ${v.id} (${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join("; ")})`);
          }
        }
      }
    }
    expect(found).toEqual([]);
    await page.getByLabel("Theme").selectOption("system");
    await close(page);
  }, 240_000);
});

test("no page made a request to any host but the server", () => {
  expect(foreign).toEqual([]);
});
