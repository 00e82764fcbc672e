// runtime/kv-cache.ts on an in-memory engine (its `fetch` answers /slots, the save and restore
// actions and /apply-template as llama-server does): which conversations are saved, what may be
// restored into what, the disk budget and age, and failures that leave a normal prefill.
import { expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LLAMACPP } from "../../engines/llamacpp.ts";
import type { RunningEngine } from "../../engines/engine.ts";
import type { CatalogModel } from "../../models/catalog.ts";
import { KvCache, type KvCacheSettings } from "../../runtime/kv-cache.ts";
import type { Instance, Lease } from "../../runtime/scheduler.ts";
import { tempDir } from "../helpers/temp.ts";

interface Slot {
  id: number;
  id_task?: number;
  n_prompt_tokens?: number;
  prompt?: string;
}

/** An engine's HTTP side: its slots, the files it saves (to `dir`), the restores it was asked for. */
function engine(dir: string, slots: Slot[]) {
  const restores: { slot: number; file: string }[] = [];
  const send = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const body = init?.body ? JSON.parse(String(init.body)) : {};
    if (url.pathname === "/slots") return Response.json(slots);
    if (url.pathname === "/apply-template") return Response.json({ prompt: body.messages.map((m: { content: string }) => `<${m.content}>`).join("") });
    const slot = Number(url.pathname.split("/")[2]);
    const file = join(dir, body.filename);
    if (url.searchParams.get("action") === "save") {
      writeFileSync(file, "kv".repeat(50));
      return Response.json({ id_slot: slot, filename: body.filename, n_saved: 10, n_written: 100 });
    }
    restores.push({ slot, file: body.filename });
    if (!existsSync(file) || (await Bun.file(file).text()) !== "kv".repeat(50)) return Response.json({ error: { message: "invalid slot save file" } }, { status: 400 });
    return Response.json({ id_slot: slot, n_restored: 10 });
  }) as typeof fetch;
  return { fetch: send, restores };
}

function setup(slots: Slot[], settings: Partial<KvCacheSettings> = {}, now = { t: 1_000_000 }) {
  const root = tempDir("kv-cache-");
  const dir = (id: string) => {
    const d = join(root, id);
    mkdirSync(d, { recursive: true });
    return d;
  };
  const e = engine(dir("m"), slots);
  const logs: string[] = [];
  const cache = new KvCache({
    settings: () => ({ enabled: true, budgetBytes: 1_000_000, maxAgeMs: 3_600_000, ...settings }),
    dir,
    root,
    files: () => [],
    name: (m) => m.id,
    log: { info: (_t, m) => logs.push(m), warn: (_t, m) => logs.push(m) },
    fetch: e.fetch,
    now: () => now.t,
  });
  return { cache, engine: e, logs, root, now };
}

const instance = (id: string, ctxSize = 4096): Instance<CatalogModel> =>
  ({
    model: { id, recipe: LLAMACPP.recipe, type: "llm" } as CatalogModel,
    spec: { options: {}, ctxSize },
    engine: { url: "http://engine.invalid", argv: ["/no/such/llama-server"], slots: 4 } as unknown as RunningEngine,
  }) as Instance<CatalogModel>;
const lease = (i: Instance<CatalogModel>) => ({ instance: i, url: i.engine.url }) as Lease<CatalogModel>;
const chat = (...contents: string[]) => ({ messages: contents.map((content) => ({ role: "user", content })) });

test("on eviction the engine's two most recent conversations are saved, listed per model", async () => {
  const { cache } = setup([
    { id: 0, id_task: 3, n_prompt_tokens: 10, prompt: "<a>" },
    { id: 1, id_task: 9, n_prompt_tokens: 10, prompt: "<b>" },
    { id: 2 },
    { id: 3, id_task: 5, n_prompt_tokens: 10, prompt: "<c>" },
  ]);
  await cache.save(instance("m"));
  expect(cache.summary()).toEqual([{ model_name: "m", conversations: 2, bytes: 200 }]);
});

test("the next load restores the conversation a prompt continues, once, and only into the same context size", async () => {
  const { cache, engine: e } = setup([{ id: 0, id_task: 1, n_prompt_tokens: 10, prompt: "<a>" }]);
  await cache.save(instance("m"));
  const other = instance("m", 2048);
  await cache.restore(lease(other), "/v1/chat/completions", chat("a", "more"));
  expect(e.restores).toEqual([]);
  const same = instance("m");
  await cache.restore(lease(same), "/v1/chat/completions", chat("x", "more"));
  expect(e.restores).toEqual([]);
  await cache.restore(lease(same), "/v1/chat/completions", chat("a", "more"));
  await cache.restore(lease(same), "/v1/chat/completions", chat("a", "more", "again"));
  expect(e.restores.map((r) => r.slot)).toEqual([0]);
  // Restored, it stays listed: the file is the model's until a newer turn supersedes it.
  expect(cache.summary()[0]!.conversations).toBe(1);
});

test("a missing or corrupt file is dropped and the request goes on as a normal prefill", async () => {
  const { cache, engine: e, logs, root } = setup([{ id: 0, id_task: 1, n_prompt_tokens: 10, prompt: "<a>" }]);
  await cache.save(instance("m"));
  rmSync(join(root, "m"), { recursive: true, force: true });
  mkdirSync(join(root, "m"));
  await cache.restore(lease(instance("m")), "/v1/chat/completions", chat("a", "b"));
  expect(e.restores).toHaveLength(1);
  expect(logs.some((l) => l.includes("the prompt is processed in full"))).toBe(true);
  expect(cache.summary()).toEqual([]);
});

test("a conversation's newer turn supersedes its saved older one", async () => {
  const slots: Slot[] = [{ id: 0, id_task: 1, n_prompt_tokens: 10, prompt: "<a>" }];
  const { cache, now } = setup(slots);
  await cache.save(instance("m"));
  slots[0] = { id: 0, id_task: 2, n_prompt_tokens: 20, prompt: "<a><b>" };
  now.t += 1000;
  await cache.save(instance("m"));
  expect(cache.summary()).toEqual([{ model_name: "m", conversations: 1, bytes: 100 }]);
});

test("the disk budget keeps the newest conversations, and old ones expire", async () => {
  const slots: Slot[] = [{ id: 0, id_task: 1, n_prompt_tokens: 10, prompt: "<a>" }];
  const { cache, now } = setup(slots, { budgetBytes: 250, maxAgeMs: 10_000 });
  for (const [i, p] of ["<x>", "<y>", "<z>"].entries()) {
    slots[0] = { id: 0, id_task: i + 1, n_prompt_tokens: 10, prompt: p };
    now.t += 1000;
    await cache.save(instance("m"));
  }
  expect(cache.summary()).toEqual([{ model_name: "m", conversations: 2, bytes: 200 }]);
  now.t += 20_000;
  cache.prune();
  expect(cache.summary()).toEqual([]);
});

test("off by its setting: nothing is saved or restored", async () => {
  const { cache } = setup([{ id: 0, id_task: 1, n_prompt_tokens: 10, prompt: "<a>" }], { enabled: false });
  await cache.save(instance("m"));
  expect(cache.summary()).toEqual([]);
});

test("saved conversations are read back from the folders by a new server", async () => {
  const { cache, root } = setup([{ id: 0, id_task: 1, n_prompt_tokens: 10, prompt: "<a>" }]);
  await cache.save(instance("m"));
  const fresh = new KvCache({
    settings: () => ({ enabled: true, budgetBytes: 1_000_000, maxAgeMs: 3_600_000 }),
    dir: (id) => join(root, id),
    root,
    files: () => [],
    name: (m) => m.id,
    log: { info: () => {}, warn: () => {} },
  });
  expect(fresh.summary()).toEqual([{ model_name: "m", conversations: 1, bytes: 100 }]);
});
