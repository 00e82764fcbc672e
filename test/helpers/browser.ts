// The web app in headless Chromium (Debian's package, driven by playwright-core): a page of the
// app with every request it makes recorded (one to another host is the test's failure to
// report), closed only once its requests are done, and the screenshots and layout checks the
// web tests share.
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Locator, Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
export const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
}

/** Requests each open page has in flight, and its sockets still open. */
const inFlight = new WeakMap<Page, Set<unknown>>();

/** A page of the app at `base` + `path`, at 1280x800; requests to any other host are pushed onto
 * `foreign`; `before` runs once the page exists, before it loads. */
export async function openPage(browser: Browser, base: string, path: string, foreign: string[], before?: (page: Page) => Promise<void>): Promise<Page> {
  // A context of its own (not browser.newPage's), which axe-core's analysis needs.
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const host = new URL(base).host;
  const pending = new Set<unknown>();
  inFlight.set(page, pending);
  page.on("request", (r) => {
    pending.add(r);
    const url = new URL(r.url());
    if (url.protocol !== "data:" && url.protocol !== "blob:" && url.host !== host) foreign.push(r.url());
  });
  page.on("requestfinished", (r) => pending.delete(r));
  page.on("requestfailed", (r) => pending.delete(r));
  page.on("websocket", (ws) => {
    pending.add(ws);
    ws.on("close", () => pending.delete(ws));
  });
  // The page's sockets, so that closePage can close them (a page gives no other way to find them).
  await page.addInitScript(() => {
    const Native = WebSocket;
    const open: WebSocket[] = ((window as any).openSockets = []);
    (window as any).WebSocket = class extends Native {
      constructor(url: string | URL, protocols?: string | string[]) {
        super(url, protocols);
        open.push(this);
      }
    };
  });
  await before?.(page);
  await page.goto(`${base}${path}`);
  return page;
}

/** Closes a page once the app has stopped polling, its sockets are closed and its requests are
 * done: playwright-core under Bun trips over the events of a request or a socket still live when
 * its page is gone, and then fails every later call. Timer ids are counted up, so clearing each
 * id up to a new one stops them all; then each socket (the log stream the app keeps open for its
 * toasts among them) is closed, and the page left for a blank one. */
export async function closePage(page: Page): Promise<void> {
  await page.evaluate(() => {
    const top = setTimeout(() => {}) as unknown as number;
    // Playwright's page.clock numbers its timers from 1e12 up.
    for (let id = top >= 1e12 ? 1e12 : 0; id <= top; id++) clearTimeout(id);
    // Without its handler: the app's would connect again.
    for (const ws of (window as any).openSockets as WebSocket[]) {
      ws.onclose = null;
      ws.close();
    }
  });
  // The requests already asked are let finish first: navigating away disposes of a request whose
  // answer is still coming, and playwright-core under Bun then fails on that answer's event.
  const pending = inFlight.get(page)!;
  const settle = async () => {
    for (let i = 0; i < 500 && pending.size; i++) await Bun.sleep(20);
  };
  await settle();
  // A blank page starts nothing more: an answer arriving now cannot make the app ask again.
  await page.goto("about:blank");
  await settle();
  await page.context().close();
}

/** Buttons of the current panel that stick out of the viewport sideways. */
export const offScreenButtons = (page: Page) =>
  page.evaluate(() =>
    [...document.querySelectorAll("main button")]
      .map((b) => ({ text: b.textContent, rect: b.getBoundingClientRect() }))
      .filter(({ rect }) => rect.width > 0 && (rect.left < 0 || rect.right > innerWidth))
      .map(({ text }) => text),
  );

/** Screenshots for the report, only when WEB_SHOTS names a folder: of the top of the page,
 * or of where `at` is. */
export async function shot(page: Page, name: string, at?: Locator): Promise<void> {
  const dir = process.env.WEB_SHOTS;
  if (!dir) return;
  if (at) await at.scrollIntoViewIfNeeded();
  else await page.evaluate(() => scrollTo(0, 0));
  await page.screenshot({ path: join(dir, `web29-${name}-${page.viewportSize()!.width}.png`) });
}
