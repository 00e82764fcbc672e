// Where eviction is decided: pure functions over the models resident in one type, so every rule
// is unit-tested without an engine. The scheduler acts on what they return.

export type ResidentState = "ready" | "draining" | "stopping";

/** What eviction needs to know of one resident model. */
export interface Resident {
  id: string;
  state: ResidentState;
  pinned: boolean;
  /** ms since the epoch of the last request's start or end. */
  lastUse: number;
  inflight: number;
  /** `evict_idle_timeout` in seconds when `auto_evict` is on; 0 or less never expires. */
  idleTimeoutS: number;
  /** How long its engine took to load (ms): a model slow to load again is kept longer. */
  loadMs: number;
  /** `evict_weight_factor`: above 1 keeps the model longer, below 1 lets it go sooner. */
  weight: number;
}

export type RoomDecision =
  | { kind: "load" }
  | { kind: "evict"; victim: string }
  /** A model is already leaving; the load waits for it to go. */
  | { kind: "wait" }
  /** Every resident model is pinned: nothing can make room. */
  | { kind: "refuse"; pinned: string[] };

/** How readily a model is evicted (lemonade.md): its idle time over its load time times its
 * `evict_weight_factor`. With equal load times and weights this is least recently used. */
export function evictionScore(r: Resident, now: number): number {
  return (now - r.lastUse) / (Math.max(1, r.loadMs) * (r.weight > 0 ? r.weight : 1));
}

/** The model to evict: ready, not pinned, with the highest eviction score. */
export function pickVictim(residents: readonly Resident[], now: number): Resident | undefined {
  return residents.filter((r) => r.state === "ready" && !r.pinned).sort((a, b) => evictionScore(b, now) - evictionScore(a, now) || a.lastUse - b.lastUse)[0];
}

/** What one more load of a type needs, given its residents, the loads already starting and the
 * limit (`max_loaded_models`, -1 unlimited). */
export function decideRoom(residents: readonly Resident[], loading: number, max: number, now: number): RoomDecision {
  if (max < 0 || residents.length + loading < max) return { kind: "load" };
  const victim = pickVictim(residents, now);
  if (victim) return { kind: "evict", victim: victim.id };
  if (loading > 0 || residents.some((r) => r.state !== "ready")) return { kind: "wait" };
  return { kind: "refuse", pinned: residents.map((r) => r.id) };
}

/** Models idle past their `evict_idle_timeout`: ready, unpinned, nothing in flight. */
export function idleExpired(residents: readonly Resident[], now: number): Resident[] {
  return residents.filter(
    (r) => r.state === "ready" && !r.pinned && r.inflight === 0 && r.idleTimeoutS > 0 && now - r.lastUse >= r.idleTimeoutS * 1000,
  );
}
