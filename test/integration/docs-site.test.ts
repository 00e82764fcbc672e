// `bun run docs:site`: the reference as a folder opened from disk in headless Chromium (Debian's
// package, which the pretest step installs): Swagger UI lists every operation of the document,
// the markdown pages hold every endpoint, and no request leaves the folder.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { openApiDocument } from "../../http/openapi.ts";
import { VERSION } from "../../lib/version.ts";
import { writeDocsSite } from "../../scripts/docs-site.ts";
import { docPath, endpoints } from "../../spec/index.ts";
import { tempDir } from "../helpers/server.ts";

const CHROMIUM = "/usr/bin/chromium";
const dir = tempDir("lemonade-docs-site-");
let browser: Browser;

beforeAll(async () => {
  writeDocsSite(dir);
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (the pretest step does)`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
});
afterAll(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

test("the folder holds the document, the markdown pages and every endpoint's page section", () => {
  const doc = openApiDocument(VERSION) as { paths: Record<string, object> };
  expect(JSON.parse(readFileSync(join(dir, "openapi.json"), "utf8"))).toEqual(JSON.parse(JSON.stringify(doc)));
  for (const def of endpoints) {
    const html = readFileSync(join(dir, "assets", `${def.page}.html`), "utf8");
    expect(html, def.id).toContain(`${def.method} ${docPath(def)}`);
    expect(existsSync(join(dir, "markdown", `${def.page}.md`))).toBe(true);
  }
});

test("opened from disk, the reference lists every operation, its pages render, and nothing loads from a host", async () => {
  const page = await browser.newPage();
  const requests: string[] = [];
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(`file://${join(dir, "index.html")}`);
  await page.locator(".swagger-ui .info .title").waitFor({ timeout: 20_000 });
  expect(await page.locator(".swagger-ui .info .title").textContent()).toContain("Lemonade Server");
  const doc = openApiDocument(VERSION) as { paths: Record<string, object> };
  const operations = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
  // Swagger UI draws only what is in view: its parsed state holds every operation.
  const parsed = await page.evaluate(() => (window as unknown as { ui: { specSelectors: { operations(): { size: number } } } }).ui.specSelectors.operations().size);
  expect(parsed).toBe(operations);
  // An operation opened by its link: its `$ref`s resolve from disk (the error answers' body is OpenAIError's).
  await page.goto(`file://${join(dir, "index.html")}#/openai/openai.chat_completions`);
  await page.reload();
  const error = page.locator(".opblock.is-open .responses-table .response", { hasText: "LEMONADE_API_KEY" });
  await error.locator("pre.example", { hasText: '"message"' }).waitFor({ timeout: 20_000 });
  expect(await page.locator(".errors-wrapper").count()).toBe(0);

  await page.getByRole("link", { name: "Lemonade", exact: true }).click();
  await page.locator("#post-v1load").waitFor();
  expect(await page.title()).toBe("Lemonade Server API: Lemonade");
  await page.close();
  expect(requests.filter((url) => !url.startsWith("file://") && !url.startsWith("data:"))).toEqual([]);
});
