// The web app in headless Chromium against a server whose engines are the FAKE ones
// (scripts/fake-engine): image edit with a mask painted in the page, variations and upscale on the
// fake sd-server and sd-cli; routers and Omni collections made and changed with the forms; model
// export; an engine killed under the dashboard; slots in use while a slow answer streams; a model
// evicted for another under max_loaded_models 1; and an engine install (from a stand-in for
// GitHub's releases) cancelled in Downloads.
// The server requires an API key, which the app is given as a user gives it in Settings.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { AxeBuilder } from "@axe-core/playwright";
import { readImage } from "../../lib/images.ts";
import { png, pngParameters } from "../../scripts/fake-engine/png.ts";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import type { TestServer } from "../helpers/server.ts";
import { closePage, FLAGS, CHROMIUM, offScreenButtons, openPage, requireChromium, shot } from "../helpers/browser.ts";

const KEY = "sk-web-fake";
let browser: Browser;
let server: TestServer;
/** A stand-in for GitHub's release downloads: an archive that trickles in, never done in a test's time. */
let github: ReturnType<typeof Bun.serve>;
const foreign: string[] = [];

/** A page of the app with the API key in its storage, as Settings leaves it; the page keeps the
 * last form it sent (Chromium does not hand a request's file parts to playwright). */
const open = (path: string) =>
  openPage(browser, server.url, path, foreign, async (page) => {
    await page.addInitScript((key) => {
      localStorage.setItem("lemonade.apiKey", key);
      const send = window.fetch.bind(window);
      (window as any).fetch = (input: RequestInfo, init?: RequestInit) => {
        if (init?.body instanceof FormData) (window as any).lastForm = init.body;
        return send(input, init);
      };
    }, KEY);
  });

/** The last multipart form the page sent: each field's text, or a file's name, type and bytes (base64). */
const lastForm = (page: Page) =>
  page.evaluate(async () => {
    const out: Record<string, string | { name: string; type: string; b64: string }> = {};
    for (const [k, v] of (window as any).lastForm as FormData) {
      if (typeof v === "string") out[k] = v;
      else out[k] = { name: v.name, type: v.type, b64: btoa(String.fromCharCode(...new Uint8Array(await v.arrayBuffer()))) };
    }
    return out;
  });
const bytesOf = (part: unknown) => Buffer.from((part as { b64: string }).b64, "base64");

const close = closePage;

const auth = { authorization: `Bearer ${KEY}` };
const api = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, { ...init, headers: { ...auth, ...init.headers } }).then((r) => r.json());
const post = (path: string, body: unknown) => api(path, { method: "POST", body: JSON.stringify(body) });

/** Puts a checkpoint's file in the server's Hugging Face cache, as a download would leave it. */
function seed(checkpoint: string): void {
  const [repo, file] = checkpoint.split(":") as [string, string];
  const base = join(server.cacheDir, "hf", `models--${repo.replace(/\//g, "--")}`);
  const sha = "c".repeat(40);
  mkdirSync(join(base, "refs"), { recursive: true });
  writeFileSync(join(base, "refs", "main"), sha);
  const path = join(base, "snapshots", sha, file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, "FAKE: the fake image engines read no weights");
}

beforeAll(async () => {
  requireChromium();
  // chat-a's file is the tiny GGUF, so the server can estimate its memory (the fake engine reads no weights).
  const gguf = join(testModelsDir(), MODELS.chat);
  github = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      if (!new URL(req.url).pathname.includes("/releases/download/")) return new Response("Not Found", { status: 404 });
      let timer: ReturnType<typeof setInterval>;
      const body = new ReadableStream({
        start: (c) => void (timer = setInterval(() => c.enqueue(new Uint8Array(1024)), 50)),
        cancel: () => clearInterval(timer),
      });
      return new Response(body, { headers: { "content-length": String(50 * 1024 * 1024) } });
    },
  });
  const endpoint = `http://127.0.0.1:${github.port}`;
  server = await startFakeServer(
    ["chat-a", "chat-b"],
    { LEMONADE_API_KEY: KEY, LEMONADE_MAX_LOADED_MODELS: "-1", LEMONADE_GITHUB_ENDPOINT: endpoint, LEMONADE_GITHUB_API_ENDPOINT: endpoint },
    {},
    { "chat-a": (path) => copyFileSync(gguf, path) },
  );
  seed("stabilityai/sd-turbo:sd_turbo.safetensors");
  seed("amd/realesrgan-x4plus:RealESRGAN_x4plus.pth");
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  github?.stop(true);
});

/** Drags the pointer across the middle of the mask canvas, left to right. */
async function paintStripe(page: Page): Promise<void> {
  const canvas = page.getByLabel("Mask: paint over the parts to change");
  // The pointer reaches only what is in the viewport.
  await canvas.scrollIntoViewIfNeeded();
  const box = (await canvas.boundingBox())!;
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + 2, y);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(box.x + 2 + ((box.width - 4) * i) / 10, y);
  await page.mouse.up();
}

/** RGB of pixels of a PNG, decoded by the browser. */
const pixels = (page: Page, bytes: Uint8Array, points: [number, number][]) =>
  page.evaluate(
    async ([b64, at]) => {
      const bitmap = await createImageBitmap(new Blob([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], { type: "image/png" }));
      const c = new OffscreenCanvas(bitmap.width, bitmap.height);
      const g = c.getContext("2d")!;
      g.drawImage(bitmap, 0, 0);
      return at.map(([x, y]) => [...g.getImageData(x, y, 1, 1).data.slice(0, 3)]);
    },
    [Buffer.from(bytes).toString("base64"), points] as const,
  );

const decodedSize = (page: Page, alt: string) => page.getByAltText(alt).evaluate((img: HTMLImageElement) => img.decode().then(() => `${img.naturalWidth}x${img.naturalHeight}`));

describe("try it with image models (FAKE sd-server and sd-cli)", () => {
  test("edit with a mask painted over the image: the mask goes as a PNG of the image's size, white where painted; the edited image shows", async () => {
    const page = await open("/#try");
    await page.getByLabel("Source image file").setInputFiles({ name: "lemon.png", mimeType: "image/png", buffer: png(96, 64, [230, 200, 40], {}) });
    await page.getByText("lemon.png, 96×64").waitFor();
    const panel = page.locator("fieldset", { hasText: "Edit an image" });
    await paintStripe(page);
    await panel.getByLabel("Edit prompt").fill("make the middle blue");
    const sent = page.waitForRequest("**/v1/images/edits");
    await panel.getByRole("button", { name: "Edit", exact: true }).click();
    expect((await sent).headers().authorization).toBe(`Bearer ${KEY}`);
    const form = await lastForm(page);
    expect([form.prompt, form.model, (form.image as { name: string }).name]).toEqual(["make the middle blue", "SD-Turbo", "lemon.png"]);
    expect((form.mask as { type: string }).type).toBe("image/png");
    const mask = bytesOf(form.mask);
    expect([...mask.subarray(1, 4)].map((c) => String.fromCharCode(c)).join("")).toBe("PNG");
    expect(readImage(mask)).toMatchObject({ width: 96, height: 64 });
    // Painted across the middle: white there, black at the top corner.
    expect(await pixels(page, mask, [[48, 32], [2, 2]])).toEqual([[255, 255, 255], [0, 0, 0]]);
    const shown = page.getByAltText("Edited image 1");
    await shown.waitFor({ timeout: 30_000 });
    // What the fake sd-server received, read back from the image it made.
    const src = (await shown.getAttribute("src"))!;
    const got = pngParameters(Buffer.from(src.slice(src.indexOf(",") + 1), "base64")) as any;
    expect(got.endpoint).toBe("edits");
    expect(got.mask).toMatchObject({ decoded: true, width: 96, height: 64 });
    // sd.cpp rounds sizes up to 64.
    expect(await decodedSize(page, "Edited image 1")).toBe("128x64");
    await shot(page, "image-edit", panel);

    // Clear the mask: none is sent, and the whole image is the model's.
    await panel.getByRole("button", { name: "Clear mask" }).click();
    const again = page.waitForRequest("**/v1/images/edits");
    await panel.getByRole("button", { name: "Edit", exact: true }).click();
    await again;
    expect(Object.keys(await lastForm(page)).sort()).toEqual(["image", "model", "prompt", "response_format"]);

    // A fast drag gives two points a third of the width apart: the mask is painted between them too.
    const canvas = page.getByLabel("Mask: paint over the parts to change");
    const box = (await canvas.boundingBox())!;
    await page.mouse.move(box.x + box.width / 3, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + (box.width * 2) / 3, box.y + box.height / 2, { steps: 1 });
    await page.mouse.up();
    const stroke = page.waitForRequest("**/v1/images/edits");
    await panel.getByRole("button", { name: "Edit", exact: true }).click();
    await stroke;
    expect(await pixels(page, bytesOf((await lastForm(page)).mask), [[48, 32], [2, 2]])).toEqual([[255, 255, 255], [0, 0, 0]]);
    await shot(page, "images");
    await close(page);
  });

  test("generate an image from a prompt; it can become the source image", async () => {
    const page = await open("/#try");
    const panel = page.locator("fieldset", { hasText: "Images" }).filter({ has: page.getByRole("button", { name: "Generate" }) });
    await panel.getByLabel("Prompt").fill("a lemon tree");
    const sent = page.waitForRequest("**/v1/images/generations");
    await panel.getByRole("button", { name: "Generate" }).click();
    const body = (await sent).postDataJSON();
    expect([body.model, body.prompt, body.response_format]).toEqual(["SD-Turbo", "a lemon tree", "b64_json"]);
    const shown = panel.getByAltText("a lemon tree 1");
    await shown.waitFor({ timeout: 30_000 });
    // What the fake sd-server received, read back from the image it made.
    const src = (await shown.getAttribute("src"))!;
    const got = pngParameters(Buffer.from(src.slice(src.indexOf(",") + 1), "base64")) as any;
    expect(got.endpoint).toBe("generations");
    expect(got.prompt.trim()).toBe("a lemon tree");
    await panel.getByRole("button", { name: "Use as the source image" }).click();
    await page.getByText(/^source\.png, \d+×\d+/).waitFor();
    await close(page);
  }, 60_000);

  test("variations of the source image, and an upscale to four times its size; a result becomes the next source", async () => {
    const page = await open("/#try");
    await page.getByLabel("Source image file").setInputFiles({ name: "small.png", mimeType: "image/png", buffer: png(48, 32, [20, 120, 200], {}) });
    await page.getByText("small.png, 48×32").waitFor();
    const vary = page.locator("fieldset", { hasText: "Variations" });
    await vary.getByLabel("How many").fill("2");
    const sent = page.waitForRequest("**/v1/images/variations");
    await vary.getByRole("button", { name: "Make variations" }).click();
    await sent;
    const form = await lastForm(page);
    expect([form.n, "mask" in form, (form.image as { type: string }).type]).toEqual(["2", false, "image/png"]);
    await vary.getByAltText("Variation 2").waitFor({ timeout: 30_000 });
    expect(await vary.getByRole("img").count()).toBe(2);

    const up = page.locator("fieldset", { hasText: "Upscale" });
    const asked = page.waitForRequest("**/v1/images/upscale");
    await up.getByRole("button", { name: "Upscale", exact: true }).click();
    const body = (await asked).postDataJSON();
    expect(body.model).toBe("RealESRGAN-x4plus");
    expect(readImage(Buffer.from(body.image, "base64"))).toMatchObject({ width: 48, height: 32 });
    await up.getByText("48×32 → 192×128").waitFor({ timeout: 30_000 });

    await up.getByRole("button", { name: "Use as the source image" }).click();
    await page.getByText("source.png, 192×128").waitFor();
    expect(await up.getByText("48×32 → 192×128").count()).toBe(1);
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await offScreenButtons(page)).toEqual([]);
    await shot(page, "images", up);
    await close(page);
  });
});

describe("the model manager's forms and export", () => {
  test("a router made with the form: checked live, the rule a test prompt matches marked; registered, routing a chat; edited", async () => {
    const page = await open("/#models");
    const checked = page.waitForResponse("**/v1/routing/validate");
    await page.getByText("New router (collection.router)").click();
    const form = page.getByRole("form", { name: "New router" });
    // The untouched form is checked, but not called wrong before the first edit.
    await checked;
    await page.evaluate(() => new Promise(requestAnimationFrame));
    expect(await form.locator("[data-validation]").textContent()).toBe("Pick the candidates and add rules; the policy is checked as you go.");
    expect(await form.locator("[data-validation].error").count()).toBe(0);
    await form.getByLabel("Router name").fill("web-router");
    // No candidate yet: the server says what is missing, at once.
    await form.locator("[data-validation].error").waitFor();
    await form.getByLabel("chat-a").check();
    await form.getByLabel("chat-b").check();
    await form.getByRole("button", { name: "Add a rule" }).click();
    await form.getByLabel("Rule id").fill("code");
    await form.getByLabel("Value of rule 1").fill("python, code");
    await form.getByLabel("Route rule 1 to").selectOption("chat-b");
    await form.getByText("The test prompt goes to chat-b by rule code.").waitFor();
    expect(await form.locator('li[data-rule="code"]').getAttribute("class")).toBe("matched");
    await form.getByLabel("Test prompt").fill("Tell me about lemons");
    await form.getByText("The test prompt goes to chat-a by default (no rule matches).").waitFor();
    expect(await form.locator("li.matched").count()).toBe(0);
    // A pattern the server refuses (nested unbounded quantifiers) is shown as it types.
    await form.getByLabel("Condition of rule 1").selectOption("regex");
    await form.getByLabel("Value of rule 1").fill("(a+)+");
    await form.locator("[data-validation].error", { hasText: "regex" }).waitFor();
    await form.getByLabel("Condition of rule 1").selectOption("keywords_any");
    await form.getByLabel("Value of rule 1").fill("python, code");
    await form.getByText("The test prompt goes to chat-a by default").waitFor();
    await shot(page, "router-form", form);
    // The same policy as JSON; what does not parse is said at once.
    await form.getByLabel("Edit the routing block as JSON (classifiers, any/all/not)").check();
    expect(JSON.parse(await form.getByLabel("Routing JSON").inputValue()).rules[0]).toEqual({ id: "code", match: { keywords_any: ["python", "code"] }, route_to: "chat-b" });
    await form.getByLabel("Routing JSON").fill("{ not json");
    await form.locator("[data-validation].error", { hasText: "Not JSON" }).waitFor();
    await form.getByLabel("Edit the routing block as JSON (classifiers, any/all/not)").uncheck();
    await form.getByText("The test prompt goes to chat-a by default").waitFor();
    await form.getByRole("button", { name: "Create router" }).click();
    await page.getByText("Created the router user.web-router").waitFor();
    const row = page.locator('tr[data-model="user.web-router"]');
    await row.waitFor();
    const registered = await api("/v1/models/user.web-router");
    expect(registered.routing).toMatchObject({ candidates: ["chat-a", "chat-b"], default_model: "chat-a", rules: [{ id: "code", match: { keywords_any: ["python", "code"] }, route_to: "chat-b" }] });
    const routed = await fetch(`${server.url}/v1/chat/completions`, { method: "POST", headers: auth, body: JSON.stringify({ model: "user.web-router", messages: [{ role: "user", content: "some python please" }], max_tokens: 4 }) });
    expect([routed.status, routed.headers.get("x-lemonade-route")]).toEqual([200, "code"]);
    await routed.arrayBuffer();

    // Edit: the saved policy comes back into the form; a new word is saved.
    await row.getByRole("button", { name: "Edit" }).click();
    const edit = page.getByRole("form", { name: "Edit router user.web-router" });
    await expect(edit.getByLabel("Value of rule 1").inputValue()).resolves.toBe("python, code");
    await edit.getByLabel("Value of rule 1").fill("python, code, rust");
    await edit.getByLabel("Test prompt").fill("rust question");
    await edit.getByText("by rule code").waitFor();
    await edit.getByRole("button", { name: "Save router" }).click();
    await page.getByText("Saved the router user.web-router").waitFor();
    expect((await api("/v1/models/user.web-router")).routing.rules[0].match.keywords_any).toEqual(["python", "code", "rust"]);
    // A policy the form cannot show (a nested any) is edited as its JSON.
    const nested = { candidates: ["extra.chat-a", "extra.chat-b"], default_model: "extra.chat-a", rules: [{ id: "either", match: { any: [{ keywords_any: ["x"] }, { min_chars: 500 }] }, route_to: "extra.chat-b" }] };
    expect((await post("/v1/models/register", { model_name: "user.web-nested", recipe: "collection.router", version: "1", components: ["extra.chat-a", "extra.chat-b"], routing: nested })).model_name).toBe("user.web-nested");
    await page.reload();
    await page.locator('tr[data-model="user.web-nested"]').getByRole("button", { name: "Edit" }).click();
    const json = page.getByRole("form", { name: "Edit router user.web-nested" }).getByLabel("Routing JSON");
    expect(JSON.parse(await json.inputValue()).rules[0].match.any).toHaveLength(2);
    await page.getByRole("button", { name: "Close" }).click();
    await page.getByText("New router (collection.router)").click();
    // On a phone, the form keeps every button on screen.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await offScreenButtons(page)).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot(page, "router-form", form);
    await close(page);
  });

  test("an Omni collection made from models here, listed with its components, edited; exported as `lemonade export` writes it", async () => {
    const page = await open("/#models");
    await page.getByText("New Omni collection").click();
    const form = page.getByRole("form", { name: "New Omni collection" });
    await form.getByLabel("Collection name").fill("web-omni");
    await form.getByLabel("Chat model (plans and answers)").selectOption("chat-a");
    await form.getByLabel("Image model", { exact: true }).selectOption("SD-Turbo");
    // The speech model stays unset: kokoro-v1 is not downloaded, and a pull would fetch it.
    await form.getByRole("button", { name: "Create collection" }).click();
    await page.getByText("Created the collection user.web-omni").waitFor();
    const row = page.locator('tr[data-model="user.web-omni"]');
    await row.getByText("collection of chat-a, SD-Turbo").waitFor({ timeout: 15_000 });
    await row.getByRole("button", { name: "Edit" }).click();
    const edit = page.getByRole("form", { name: "Edit collection user.web-omni" });
    await expect(edit.getByLabel("Image model", { exact: true }).inputValue()).resolves.toBe("SD-Turbo");
    await edit.getByLabel("System prompt (optional)").fill("Draw when asked.");
    await edit.getByRole("button", { name: "Save collection" }).click();
    await page.getByText("Saved the collection user.web-omni").waitFor();
    expect(await api("/v1/models/user.web-omni")).toMatchObject({ components: ["chat-a", "SD-Turbo"], system_prompt: "Draw when asked." });

    // Export: the file is the CLI's, byte for byte, for a model, the collection and the router (made above).
    for (const [id, file] of [["chat-a", "chat-a.json"], ["user.web-omni", "web-omni.json"], ["user.web-router", "web-router.json"]] as const) {
      const saved = page.waitForEvent("download");
      await page.locator(`tr[data-model="${id}"]`).getByRole("button", { name: "Export" }).click();
      const download = await saved;
      expect(download.suggestedFilename()).toBe(file);
      // Not spawnSync: the server runs in this process and must answer the CLI meanwhile.
      const cli = Bun.spawn([process.execPath, "cli/main.ts", "export", id, "--host", server.url], { env: { ...process.env, LEMONADE_API_KEY: KEY }, cwd: join(import.meta.dir, "..", ".."), stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(cli.stdout).text(), new Response(cli.stderr).text(), cli.exited]);
      expect(code, err).toBe(0);
      expect(readFileSync((await download.path())!, "utf8")).toBe(out);
      // The router's file carries its policy, as an import needs it.
      if (id === "user.web-router") expect(JSON.parse(out)).toMatchObject({ model_name: "user.web-router", recipe: "collection.router", version: "1", routing: { default_model: "chat-a" } });
    }
    await shot(page, "collections", row);
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await offScreenButtons(page)).toEqual([]);
    await shot(page, "collections", row);
    await close(page);
  }, 60_000);

  test("axe: the forms open, the edit dialog and the image panels have no serious or critical violation", async () => {
    const page = await open("/#models");
    await page.getByText("New router (collection.router)").click();
    await page.getByText("New Omni collection").click();
    await page.locator('tr[data-model="user.web-router"]').getByRole("button", { name: "Edit" }).click();
    await page.getByRole("form", { name: "Edit router user.web-router" }).waitFor();
    const found: string[] = [];
    const check = async (panel: string) => {
      const { violations } = await new AxeBuilder({ page }).analyze();
      for (const v of violations) if (v.impact === "serious" || v.impact === "critical") found.push(`${panel}: ${v.id} (${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join("; ")})`);
    };
    await check("models");
    await page.goto(`${server.url}/#try`);
    await page.getByLabel("Source image file").setInputFiles({ name: "a.png", mimeType: "image/png", buffer: png(32, 32, [1, 2, 3], {}) });
    await page.getByText("a.png, 32×32").waitFor();
    await check("try");
    expect(found).toEqual([]);
    await close(page);
  }, 60_000);
});

describe("the dashboard on FAKE llama-servers", () => {
  test("slots in use while an answer streams, the memory estimate, and a toast when the engine is killed", async () => {
    await post("/v1/load", { model_name: "extra.chat-a" });
    const page = await open("/#dashboard");
    const row = page.locator('tr[data-loaded="chat-a"]');
    const entry = (await api("/v1/health")).all_models_loaded.find((m: any) => m.model_name === "chat-a");
    await row.locator("td[data-slots]", { hasText: `0 of ${entry.slots}` }).waitFor();
    expect(await row.locator("td[data-memory]").textContent()).toBe(`≈ ${(entry.memory_estimate_bytes / 1024 ** 2).toFixed(0)} MiB`);
    // A slow answer holds one slot until it ends.
    const slow = new AbortController();
    const streaming = fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ model: "extra.chat-a", stream: true, max_tokens: 200, messages: [{ role: "user", content: "go slowly" }], fake: { token_ms: 100 } }),
      signal: slow.signal,
    });
    await row.locator("td[data-slots]", { hasText: `1 of ${entry.slots}` }).waitFor({ timeout: 15_000 });
    await shot(page, "dashboard-slots", row);
    slow.abort();
    await streaming.then((r) => r.body?.cancel()).catch(() => {});

    // Killed from outside: the server logs the crash, and the app says so, whichever panel is open.
    await page.getByRole("button", { name: "Model manager" }).click();
    process.kill((await api("/v1/health")).all_models_loaded.find((m: any) => m.model_name === "chat-a").pid, "SIGKILL");
    await page.locator(".toast.error", { hasText: "The engine for chat-a crashed (exit code 137)" }).waitFor({ timeout: 15_000 });
    // Its leaving memory is that toast's news, not another one's.
    await page.waitForResponse((r) => r.url().endsWith("/v1/health"));
    await page.waitForResponse((r) => r.url().endsWith("/v1/health"));
    expect(await page.locator(".toast", { hasText: "chat-a was unloaded" }).count()).toBe(0);
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "crash-toast");
    await close(page);
  }, 60_000);
});

describe("eviction on FAKE llama-servers", () => {
  test("with max_loaded_models 1, loading a second chat model evicts the first: a toast says which made room for which", async () => {
    await post("/v1/unload", {});
    // Set live, as an admin does (the API key is the admin key here).
    expect(await post("/internal/set", { max_loaded_models: 1 })).toMatchObject({ status: "success", applied: ["max_loaded_models"] });
    let release = () => {};
    try {
      await post("/v1/load", { model_name: "extra.chat-a" });
      const page = await open("/#models");
      await page.getByTestId("loaded").filter({ hasText: "chat-a" }).waitFor({ timeout: 10_000 });
      // The app's health polls wait out the second load: the next one it sees has chat-b in chat-a's
      // place (a poll between the eviction and the arrival would call it a plain unload).
      const loaded = new Promise<void>((r) => (release = r));
      await page.route("**/v1/health", async (route) => {
        await loaded;
        await route.continue();
      });
      await post("/v1/load", { model_name: "extra.chat-b" });
      expect((await api("/v1/health")).all_models_loaded.map((m: any) => m.model_name)).toEqual(["chat-b"]);
      release();
      await page.locator(".toast", { hasText: "chat-a was evicted for chat-b" }).waitFor({ timeout: 10_000 });
      expect(await page.locator(".toast", { hasText: "chat-a was unloaded" }).count()).toBe(0);
      await close(page);
    } finally {
      release();
      await post("/internal/set", { max_loaded_models: -1 });
    }
  }, 60_000);
});

describe("chat on a FAKE llama-server", () => {
  test("Stop ends a slow reply where it is, and the composer takes the next message", async () => {
    const page = await open("/?model=extra.chat-b#chat");
    // The first reply streams slowly (the fake engine's pause between tokens); the next at full speed.
    let slow = true;
    await page.route("**/v1/chat/completions", async (route) => {
      const body = route.request().postDataJSON();
      await route.continue({ postData: JSON.stringify(slow ? { ...body, max_tokens: 400, fake: { token_ms: 200 } } : body) });
      slow = false;
    });
    await page.getByLabel("Message").fill("Take your time");
    await page.getByRole("button", { name: "Send" }).click();
    const reply = page.locator(".bubble.assistant").last();
    await reply.locator(".markdown").filter({ hasText: /\S/ }).waitFor({ timeout: 30_000 });
    await page.getByRole("button", { name: "Stop" }).click();
    await reply.locator(".stats", { hasText: "(stopped)" }).waitFor();
    expect(await reply.locator(".error").count()).toBe(0);
    await page.getByLabel("Message").fill("Now quickly");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".bubble.assistant").nth(1).locator(".stats", { hasText: /TTFT \d+ ms/ }).waitFor({ timeout: 30_000 });
    expect(await page.locator(".bubble.user").count()).toBe(2);
    await close(page);
  }, 60_000);
});

describe("engine installs in Downloads", () => {
  test("an install under way is cancelled: its partial download deleted, the request waiting on it told; pause is not offered", async () => {
    const plan = await post("/v1/install/dry-run", { recipe: "llamacpp", backend: "cpu" });
    // The release's pinned digest (never reached: the download does not end).
    writeFileSync(join(server.cacheDir, "backend_versions.json"), JSON.stringify({ checksums: { github: { [plan.repo]: { [plan.version]: { [plan.filename]: `sha256:${"0".repeat(64)}` } } } } }));
    const waiting = fetch(`${server.url}/v1/install`, { method: "POST", headers: auth, body: JSON.stringify({ recipe: "llamacpp", backend: "cpu" }) });
    const page = await open("/#downloads");
    const card = page.locator('li[data-install="llamacpp:cpu"]');
    await card.getByText(/^download, \d+ %/).waitFor({ timeout: 15_000 });
    const partial = join(server.cacheDir, "downloads", `${plan.filename}.partial`);
    expect(existsSync(partial)).toBe(true);
    expect(await card.getByRole("button", { name: /pause/i }).count()).toBe(0);
    // The nav badge counts the install as a download under way.
    await page.getByRole("button", { name: "Downloads" }).getByLabel("1 active").waitFor();
    await shot(page, "install-cancel");
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await offScreenButtons(page)).toEqual([]);
    await shot(page, "install-cancel");
    await card.getByRole("button", { name: "Cancel install" }).click();
    await card.waitFor({ state: "detached" });
    const answer = await waiting;
    expect(answer.status).toBe(409);
    expect(JSON.stringify(await answer.json())).toContain("install_cancelled");
    expect(existsSync(partial)).toBe(false);
    expect(await api("/v1/installs")).toEqual([]);
    // Nothing is under way now: nothing to cancel.
    const none = await fetch(`${server.url}/v1/installs/cancel`, { method: "POST", headers: auth, body: JSON.stringify({ recipe: "llamacpp", backend: "cpu" }) });
    expect(none.status).toBe(404);
    await close(page);
  }, 60_000);
});

describe("names in the model manager", () => {
  test("a name three sources share: the winner bare, each shadowed source as NAME (imported) / NAME (builtin); the built-in's download on its own row", async () => {
    // The built-in's download, started while the name was still its own (no hub answers here: it
    // stops on an error, and keeps its partial state to retry).
    await post("/v1/pull", { model_name: "Qwen3-0.6B-GGUF", stream: true, subscribe: false });
    // An extra model and a registered one on a built-in's name (the custom-models guide's third case).
    const file = join(server.ctx.config.extraModelsDir!, "Qwen3-0.6B-GGUF.gguf");
    writeFileSync(file, "FAKE: the fake engine reads no weights");
    expect((await post("/v1/models/register", { model_name: "user.Qwen3-0.6B-GGUF", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" })).status).toBe("success");
    try {
      const page = await open("/#models");
      const shown = (id: string) => page.locator(`tr[data-model="${id}"] td[data-label="Model"]`).textContent();
      await page.locator('tr[data-model="builtin.Qwen3-0.6B-GGUF"]').waitFor();
      expect(await shown("Qwen3-0.6B-GGUF")).toBe("Qwen3-0.6B-GGUF");
      expect(await shown("extra.Qwen3-0.6B-GGUF")).toBe("Qwen3-0.6B-GGUF (imported)");
      expect(await shown("builtin.Qwen3-0.6B-GGUF")).toBe("Qwen3-0.6B-GGUF (builtin)");
      // A pull refuses the shadowed built-in's only name (builtin.<name>): no Download for it, a hint instead.
      const download = (id: string) => page.locator(`tr[data-model="${id}"]`).getByRole("button", { name: "Download" }).count();
      expect([await download("builtin.Qwen3-0.6B-GGUF"), await download("Qwen3-0.6B-GGUF")]).toEqual([0, 1]);
      expect(await page.locator('tr[data-model="builtin.Qwen3-0.6B-GGUF"] td.actions').textContent()).toContain("not downloadable while Qwen3-0.6B-GGUF names another model");
      // The job the pull of Qwen3-0.6B-GGUF started is the built-in's: its row shows it (with no
      // Retry, which would pull the registered model now), the rows now named so do not.
      const progress = (id: string) => page.locator(`tr[data-model="${id}"] progress`).count();
      expect([await progress("builtin.Qwen3-0.6B-GGUF"), await progress("Qwen3-0.6B-GGUF"), await progress("extra.Qwen3-0.6B-GGUF")]).toEqual([1, 0, 0]);
      expect(await page.locator('tr[data-model="builtin.Qwen3-0.6B-GGUF"]').getByRole("button", { name: "Retry" }).count()).toBe(0);
      // An unshadowed model is shown by its id alone.
      expect(await shown("chat-a")).toBe("chat-a");
      await close(page);
    } finally {
      rmSync(file);
      await post("/v1/delete", { model_name: "user.Qwen3-0.6B-GGUF" });
      await post("/v1/downloads/control", { id: "model:Qwen3-0.6B-GGUF", action: "remove" });
    }
  }, 60_000);
});

test("no page made a request to any host but the server", () => {
  expect(foreign).toEqual([]);
});
