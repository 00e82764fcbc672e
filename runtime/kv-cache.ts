// Conversations that survive a model swap: before an engine that keeps slots (llama-server's
// `/slots`) is evicted, the KV cache of its most recent conversations is saved into the model's
// slot folder (`POST /slots/{id}?action=save`); once the model is loaded again, the first request
// whose rendered prompt starts with a saved conversation's prompt has that slot restored
// (`action=restore`) before it is sent, so the engine prefills only the new turn. A saved file is
// keyed by the model (its id and main file), the context size and the engine binary, and never
// restored into another; the folder is bounded by a disk budget and an age. A corrupt or missing
// file means a normal prefill, never an error.
import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import { isJson, type Json } from "../lib/json.ts";
import { enginePath, serves } from "../spec/recipes.ts";
import type { CatalogModel, ResolvedFile } from "../models/catalog.ts";
import type { Instance, Lease } from "./scheduler.ts";

/** One saved conversation: its slot file, what it may be restored into, and its prompt. */
export interface SavedConversation {
  file: string;
  /** Model, main file, context size and engine binary, hashed: a restore needs the same. */
  key: string;
  /** The prompt the engine last processed in that slot, as its chat template rendered it. */
  prompt: string;
  tokens: number;
  bytes: number;
  savedAt: number;
}

export interface KvCacheSettings {
  enabled: boolean;
  /** Bytes every model's saved conversations may take together. */
  budgetBytes: number;
  /** Saved conversations older than this are removed (ms). */
  maxAgeMs: number;
}

export interface KvCacheDeps {
  settings(): KvCacheSettings;
  /** The folder the engine was started with as its `--slot-save-path` (runtime/launcher.ts). */
  dir(modelId: string): string;
  /** The folder every model's slot folder is in. */
  root: string;
  files(model: CatalogModel): ResolvedFile[];
  /** How log lines name a model: the id the API lists it by. */
  name(model: CatalogModel): string;
  log: { info(tag: string, message: string): void; warn(tag: string, message: string): void };
  fetch?: typeof fetch;
  now?: () => number;
}

/** What /v1/health lists per model. */
export interface SavedKvSummary {
  model_name: string;
  conversations: number;
  bytes: number;
}

const INDEX = "kv-index.json";
/** Conversations saved per eviction: the engine's most recent ones. */
const SAVED_PER_EVICTION = 2;
/** A save or restore that takes longer is given up (the swap goes on without it). */
const ACTION_TIMEOUT_MS = 30_000;

interface EngineSlot {
  id: number;
  id_task?: number;
  n_prompt_tokens?: number;
  prompt?: string;
}

export class KvCache {
  /** Each model's saved conversations, by model id; read from the folders on first use. */
  private indexes: Map<string, SavedConversation[]> | null = null;
  /** The saved conversations a freshly loaded instance may still restore. */
  private readonly restorable = new WeakMap<Instance<CatalogModel>, SavedConversation[]>();
  private readonly restored = new WeakMap<Instance<CatalogModel>, number>();
  private summaryCache: SavedKvSummary[] | null = null;

  constructor(private readonly deps: KvCacheDeps) {}

  private get fetch(): typeof fetch {
    return this.deps.fetch ?? fetch;
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** Whether an instance's engine keeps slots that can be saved. */
  private keeps(instance: Instance<CatalogModel>): boolean {
    return this.deps.settings().enabled && serves(instance.model.recipe, "slots");
  }

  /** The identity a saved file must match to be restored into this instance. */
  keyOf(instance: Instance<CatalogModel>): string {
    const stamp = (path: string | null | undefined) => {
      const st = path ? statSync(path, { throwIfNoEntry: false }) : undefined;
      return st ? `${path}:${st.size}:${st.mtimeMs}` : String(path);
    };
    const main = this.deps.files(instance.model).find((f) => f.role === "main")?.path;
    const parts = [instance.model.id, stamp(main), instance.spec.ctxSize, stamp(instance.engine.argv[0])];
    return new Bun.CryptoHasher("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 32);
  }

  private all(): Map<string, SavedConversation[]> {
    if (this.indexes) return this.indexes;
    this.indexes = new Map();
    let names: string[] = [];
    try {
      names = readdirSync(this.deps.root);
    } catch {}
    for (const name of names) {
      const saved = readIndex(join(this.deps.root, name, INDEX));
      if (saved.model && saved.conversations.length) this.indexes.set(saved.model, saved.conversations);
    }
    return this.indexes;
  }

  private write(modelId: string, conversations: SavedConversation[]): void {
    const all = this.all();
    if (conversations.length) all.set(modelId, conversations);
    else all.delete(modelId);
    writeJsonFileAtomic(join(this.deps.dir(modelId), INDEX), { model: modelId, conversations });
    this.summaryCache = null;
  }

  /** Saved conversations and their bytes, per model by its catalog id (/v1/health names each by its listed id). */
  summary(): SavedKvSummary[] {
    this.summaryCache ??= [...this.all()].map(([model, list]) => ({
      model_name: model,
      conversations: list.length,
      bytes: list.reduce((n, c) => n + c.bytes, 0),
    }));
    return this.summaryCache;
  }

  /** The scheduler's `save` effect: the engine's most recent conversations, saved before it stops. */
  async save(instance: Instance<CatalogModel>): Promise<void> {
    if (!this.keeps(instance)) return;
    const { engine, model } = instance;
    const slotsPath = enginePath(model.recipe, "slots");
    const res = await this.fetch(engine.url + slotsPath, { signal: AbortSignal.timeout(ACTION_TIMEOUT_MS) });
    if (!res.ok) return;
    const slots = (await res.json()) as EngineSlot[];
    const recent = slots
      .filter((s) => typeof s.id_task === "number" && (s.n_prompt_tokens ?? 0) > 0 && typeof s.prompt === "string" && s.prompt !== "")
      .sort((a, b) => b.id_task! - a.id_task!)
      .slice(0, SAVED_PER_EVICTION);
    if (!recent.length) return;
    const key = this.keyOf(instance);
    let list = [...(this.all().get(model.id) ?? [])];
    for (const slot of recent) {
      const file = `${key.slice(0, 12)}-${this.now()}-${slot.id}.bin`;
      const saved = await this.fetch(`${engine.url}${slotsPath}/${slot.id}?action=save`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ filename: file }),
        signal: AbortSignal.timeout(ACTION_TIMEOUT_MS),
      });
      const body = (await saved.json().catch(() => ({}))) as { n_saved?: number; n_written?: number };
      if (!saved.ok || !body.n_written) continue;
      // A conversation this one continues is superseded by it.
      const superseded = list.filter((c) => c.key === key && slot.prompt!.startsWith(c.prompt));
      for (const c of superseded) this.removeFile(model.id, c);
      list = list.filter((c) => !superseded.includes(c));
      list.push({ file, key, prompt: slot.prompt!, tokens: body.n_saved ?? slot.n_prompt_tokens!, bytes: body.n_written, savedAt: this.now() });
    }
    this.write(model.id, list);
    this.deps.log.info("KvCache", `Saved ${recent.length} conversation(s) of ${this.deps.name(model)} before it was unloaded`);
    this.prune();
  }

  /** Drops conversations past their age, then the oldest until every model's fit the budget. */
  prune(): void {
    const { budgetBytes, maxAgeMs } = this.deps.settings();
    const now = this.now();
    const entries = [...this.all()].flatMap(([model, list]) => list.map((c) => ({ model, c })));
    entries.sort((a, b) => b.c.savedAt - a.c.savedAt);
    let total = 0;
    const drop = new Set<SavedConversation>();
    for (const { c } of entries) {
      total += c.bytes;
      if (now - c.savedAt > maxAgeMs || total > budgetBytes) drop.add(c);
    }
    if (!drop.size) return;
    for (const [model, list] of [...this.all()]) {
      const gone = list.filter((c) => drop.has(c));
      if (!gone.length) continue;
      for (const c of gone) this.removeFile(model, c);
      this.write(model, list.filter((c) => !drop.has(c)));
    }
  }

  private removeFile(modelId: string, c: SavedConversation): void {
    rmSync(join(this.deps.dir(modelId), c.file), { force: true });
  }

  /** Before a request is sent to a freshly loaded engine: restores the saved conversation its prompt
   * continues, if any. Every failure (no match, a missing or corrupt file) leaves a normal prefill. */
  async restore(lease: Lease<CatalogModel>, path: string, body: Json): Promise<void> {
    const instance = lease.instance;
    if (!this.keeps(instance)) return;
    let candidates = this.restorable.get(instance);
    if (!candidates) {
      const key = this.keyOf(instance);
      candidates = (this.all().get(instance.model.id) ?? []).filter((c) => c.key === key);
      this.restorable.set(instance, candidates);
    }
    if (!candidates.length) return;
    const prompt = await this.rendered(lease.url, path, body);
    if (prompt === undefined) return;
    const match = candidates.filter((c) => prompt.startsWith(c.prompt)).sort((a, b) => b.prompt.length - a.prompt.length)[0];
    if (!match) return;
    // Taken before the restore is awaited, so a concurrent request cannot restore it twice.
    this.restorable.set(instance, candidates.filter((c) => c !== match));
    const n = this.restored.get(instance) ?? 0;
    this.restored.set(instance, n + 1);
    const slot = n % instance.engine.slots;
    const res = await this.fetch(`${lease.url}${enginePath(instance.model.recipe, "slots")}/${slot}?action=restore`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ filename: match.file }),
      signal: AbortSignal.timeout(ACTION_TIMEOUT_MS),
    }).catch((err: Error) => err);
    if (res instanceof Response && res.ok) {
      this.deps.log.info("KvCache", `Restored a saved conversation of ${this.deps.name(instance.model)} (${match.tokens} tokens) into slot ${slot}`);
      return;
    }
    const why = res instanceof Response ? `${res.status} ${(await res.text()).slice(0, 200)}` : res.message;
    this.deps.log.warn("KvCache", `Could not restore ${match.file} for ${this.deps.name(instance.model)} (${why}); the prompt is processed in full`);
    this.removeFile(instance.model.id, match);
    this.write(instance.model.id, (this.all().get(instance.model.id) ?? []).filter((c) => c.file !== match.file));
  }

  /** The prompt the engine will process: a completion's own, a chat's through its template. */
  private async rendered(url: string, path: string, body: Json): Promise<string | undefined> {
    if (path === "/v1/completions" && typeof body.prompt === "string") return body.prompt;
    if (path !== "/v1/chat/completions" || !Array.isArray(body.messages)) return undefined;
    const res = await this.fetch(`${url}/apply-template`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: body.messages, ...(body.tools ? { tools: body.tools } : {}) }),
      signal: AbortSignal.timeout(ACTION_TIMEOUT_MS),
    }).catch(() => undefined);
    if (!res?.ok) return undefined;
    const out = (await res.json().catch(() => null)) as Json | null;
    return isJson(out) && typeof out.prompt === "string" ? out.prompt : undefined;
  }
}

function readIndex(path: string): { model?: string; conversations: SavedConversation[] } {
  try {
    const raw = readJsonFile<{ model?: string; conversations?: SavedConversation[] }>(path, {});
    return { model: raw.model, conversations: Array.isArray(raw.conversations) ? raw.conversations : [] };
  } catch {
    // An unreadable index forgets its conversations: the engine prefills them again.
    return { conversations: [] };
  }
}
