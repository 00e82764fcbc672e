// Where eviction is decided: pure functions over the models resident (or starting), so every rule
// is unit-tested without an engine. `decideAdmission` is the one answer to "may this model load
// now?": the per-type count limit and the memory admission, with one victim rule (`pickVictim`).
// `idleDegradation` and `pressureVictim` are the dynamic VRAM management of the multi-model guide:
// idle models downsized then evicted, and the most disposable one evicted under GPU memory pressure.
// The scheduler acts on what they return.

export type ResidentState = "loading" | "ready" | "draining" | "stopping";

/** The pool a model counts in (multi-model guide): `standard` models count against
 * `max_loaded_models` per type; a `routing_helper` (a model a collection's routing runs on, not the
 * client) has a pool of its own per helper model, so it evicts no standard model by count. */
export type Residency = "standard" | "routing_helper";

/** How much of itself a ready model holds: all of it, its KV cache being freed, or weights only. */
export type Tier = "full" | "downsizing" | "downsized";

/** What eviction needs to know of one model in memory, or on its way in ("loading"). */
export interface Resident {
  id: string;
  /** Its model type (`llm`, `embedding`, ...): `max_loaded_models` counts per type. */
  type: string;
  residency: Residency;
  state: ResidentState;
  pinned: boolean;
  /** ms since the epoch of the last request's start or end. */
  lastUse: number;
  inflight: number;
  /** `evict_idle_timeout` in seconds when `auto_evict` is on (0 or less: as soon as it is idle, as
   * Lemonade's eviction engine reads it); Infinity when off. */
  idleTimeoutS: number;
  /** `downsize_idle_timeout` in seconds when `auto_evict` is on (0 or less: as soon as it is
   * idle); Infinity when off. */
  downsizeTimeoutS: number;
  /** Its `auto_evict` (its own, else the server's): idle and pressure eviction may take it. */
  autoEvict: boolean;
  /** A failed downsize counts as `downsized`, so it is not tried again until the model is used. */
  tier: Tier;
  /** How long its engine took to load (ms): a model slow to load again is kept longer. */
  loadMs: number;
  /** `evict_weight_factor`: above 1 keeps the model longer, below 1 lets it go sooner. */
  weight: number;
}

/** The model asking to load. */
export interface Incoming {
  id: string;
  type: string;
  /** The pool it loads into; standard unless set. */
  residency?: Residency;
  /** Its `auto_evict`: whether a load that does not fit in memory may evict a model to make room. */
  autoEvict: boolean;
  /** What its load needs and what memory is free for it (itself aside), in bytes; undefined when
   * it cannot be worked out, and then memory does not limit it. */
  memory?: { need: number; free: number };
}

export interface Limits {
  /** `max_loaded_models`: models of one type at once; -1 is unlimited. */
  maxLoaded: number;
}

export type Admission =
  | { kind: "load" }
  /** Make room first: the victim drains and stops, then the load is decided again. */
  | { kind: "evict"; victim: string; reason: "count" | "memory" }
  /** A model is already leaving, or one of the type is starting: decide again once it has. */
  | { kind: "wait" }
  /** Every model of the type is pinned, so none can go (409 `slots_pinned_error`). */
  | { kind: "refuse"; status: 409; pinned: string[] }
  /** The load does not fit and nothing may be evicted for it (507 `model_load_error`, naming
   * what it needs and what is free); `evictable` says whether `auto_evict` would have helped. */
  | { kind: "refuse"; status: 507; need: number; free: number; evictable: boolean };

/** How readily a model is evicted (lemonade.md): its idle time over its load time times its
 * `evict_weight_factor`. With equal load times and weights this is least recently used. */
export function evictionScore(r: Resident, now: number): number {
  return (now - r.lastUse) / (Math.max(1, r.loadMs) * (r.weight > 0 ? r.weight : 1));
}

/** The one victim rule: ready, not pinned, with the highest eviction score. */
export function pickVictim(residents: readonly Resident[], now: number): Resident | undefined {
  return residents.filter((r) => r.state === "ready" && !r.pinned).sort((a, b) => evictionScore(b, now) - evictionScore(a, now) || a.lastUse - b.lastUse)[0];
}

const leaving = (r: Resident) => r.state === "draining" || r.state === "stopping";

/** Whether `incoming` may load now beside `residents` (every type's, starting loads included). The
 * count limit is its type's; memory is shared, so a memory victim may be of any type. One step at
 * a time: after an eviction or a wait the scheduler asks again, so no second model is evicted for
 * room the first one's leaving will make. */
export function decideAdmission(residents: readonly Resident[], incoming: Incoming, limits: Limits, now: number): Admission {
  // One load at a time per type, so a type never holds more engines than its limit.
  if (residents.some((r) => r.type === incoming.type && r.state === "loading")) return { kind: "wait" };
  const residency = incoming.residency ?? "standard";
  const ofType = residents.filter((r) => r.type === incoming.type && r.residency === residency);
  // A routing helper's pool is its own model's: it never counts against another.
  if (residency === "standard" && limits.maxLoaded >= 0 && ofType.length >= limits.maxLoaded) {
    if (ofType.some(leaving)) return { kind: "wait" };
    const victim = pickVictim(ofType, now);
    if (victim) return { kind: "evict", victim: victim.id, reason: "count" };
    return { kind: "refuse", status: 409, pinned: ofType.map((r) => r.id) };
  }
  const mem = incoming.memory;
  if (!mem || mem.need <= mem.free) return { kind: "load" };
  if (residents.some(leaving)) return { kind: "wait" };
  const victim = pickVictim(residents, now);
  if (victim && incoming.autoEvict) return { kind: "evict", victim: victim.id, reason: "memory" };
  return { kind: "refuse", status: 507, need: mem.need, free: mem.free, evictable: victim !== undefined };
}

/** Ready, unpinned, nothing in flight: what idle and pressure eviction may touch (a pinned model
 * is never downsized nor evicted by them). */
const idle = (r: Resident) => r.state === "ready" && !r.pinned && r.inflight === 0;

/** Models idle past their `evict_idle_timeout`: ready, unpinned, nothing in flight. */
export function idleExpired(residents: readonly Resident[], now: number): Resident[] {
  return residents.filter((r) => idle(r) && now - r.lastUse >= r.idleTimeoutS * 1000);
}

/** Tiered degradation (multi-model guide): past `evict_idle_timeout` a model is evicted; else past
 * `downsize_idle_timeout` one still whole is downsized (its KV cache freed, its weights kept). */
export function idleDegradation(residents: readonly Resident[], now: number): { evict: Resident[]; downsize: Resident[] } {
  const evict = idleExpired(residents, now);
  const downsize = residents.filter(
    (r) => idle(r) && !evict.includes(r) && r.tier === "full" && now - r.lastUse >= r.downsizeTimeoutS * 1000,
  );
  return { evict, downsize };
}

/** Under GPU memory pressure: the most disposable idle `auto_evict` model, by the eviction score;
 * none while a model is already leaving (its memory is on its way back). */
export function pressureVictim(residents: readonly Resident[], now: number): Resident | undefined {
  if (residents.some(leaving)) return undefined;
  return pickVictim(residents.filter((r) => idle(r) && r.autoEvict), now);
}
