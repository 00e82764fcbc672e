// The scheduler's `downsize` effect (the multi-model guide's soft idle): an engine that keeps slots
// (llama-server's `/slots`) has each slot's KV cache erased (`POST /slots/{id}?action=erase`, as
// Lemonade's llama.cpp backend does), so the memory its conversations held is free while its
// weights stay loaded; the next request is processed from its prompt. Engines without slots have
// nothing to free this way, so their downsize changes only the state /v1/health reports.
import { enginePath, serves } from "../spec/recipes.ts";
import type { Instance, SchedulableModel } from "./scheduler.ts";

/** An erase that takes longer is given up (the model stays whole). */
const ERASE_TIMEOUT_MS = 10_000;

export async function eraseSlots(instance: Instance<SchedulableModel & { recipe: string }>, signal: AbortSignal, fetcher: typeof fetch = fetch): Promise<void> {
  const { engine, model } = instance;
  if (!serves(model.recipe, "slots")) return;
  const slotsUrl = engine.url + enginePath(model.recipe, "slots");
  const opts = () => ({ signal: AbortSignal.any([signal, AbortSignal.timeout(ERASE_TIMEOUT_MS)]) });
  const res = await fetcher(slotsUrl, opts());
  if (!res.ok) throw new Error(`${slotsUrl} answered ${res.status}`);
  const listed: unknown = await res.json();
  const ids = (Array.isArray(listed) ? listed : [listed]).map((s) => (s as { id?: unknown }).id).filter((id): id is number => typeof id === "number");
  for (const id of ids) {
    const erased = await fetcher(`${slotsUrl}/${id}?action=erase`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}", ...opts() });
    if (!erased.ok) throw new Error(`erasing slot ${id} answered ${erased.status} ${(await erased.text()).slice(0, 200)}`);
  }
}
