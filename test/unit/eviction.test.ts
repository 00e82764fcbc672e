// The eviction choices, as pure functions: decideAdmission's table (count limits per type, memory
// admission, one victim rule), the victim rule itself and the idle timeout.
import { describe, expect, test } from "bun:test";
import { decideAdmission, idleDegradation, idleExpired, pickVictim, pressureVictim, type Admission, type Incoming, type Resident } from "../../runtime/eviction.ts";

const GB = 1024 ** 3;
const NOW = 100_000;

const r = (id: string, over: Partial<Resident> = {}): Resident => ({
  id,
  type: "llm",
  residency: "standard",
  state: "ready",
  pinned: false,
  lastUse: 0,
  inflight: 0,
  idleTimeoutS: 300,
  downsizeTimeoutS: 60,
  autoEvict: true,
  tier: "full",
  loadMs: 1000,
  weight: 1,
  ...over,
});

const llm = (over: Partial<Incoming> = {}): Incoming => ({ id: "new", type: "llm", autoEvict: false, ...over });
const fits = { need: 2 * GB, free: 8 * GB };
const tooBig = { need: 6 * GB, free: 4 * GB };

describe("decideAdmission", () => {
  test.each([
    // The count limit, per type.
    ["room below the limit", [r("a")], llm(), 2, { kind: "load" }],
    ["nothing loaded", [], llm(), 1, { kind: "load" }],
    ["unlimited (-1)", [r("a"), r("b"), r("c")], llm(), -1, { kind: "load" }],
    ["full: the least recently used goes", [r("a", { lastUse: 5 }), r("b", { lastUse: 1 })], llm(), 2, { kind: "evict", victim: "b", reason: "count" }],
    ["full: a busy model may be chosen, it drains first", [r("a", { inflight: 3 })], llm(), 1, { kind: "evict", victim: "a", reason: "count" }],
    ["pinned models are passed over", [r("a", { pinned: true, lastUse: 0 }), r("b", { lastUse: 9 })], llm(), 2, { kind: "evict", victim: "b", reason: "count" }],
    ["every one of the type pinned: 409", [r("a", { pinned: true }), r("b", { pinned: true })], llm(), 2, { kind: "refuse", status: 409, pinned: ["a", "b"] }],
    ["one of the type draining: wait for it", [r("a", { state: "draining" })], llm(), 1, { kind: "wait" }],
    ["one stopping beside a pinned one: wait", [r("a", { pinned: true }), r("b", { state: "stopping" })], llm(), 2, { kind: "wait" }],
    ["one draining, another evictable: wait, evict no second one", [r("a", { state: "draining" }), r("b")], llm(), 2, { kind: "wait" }],
    ["one of the type starting: wait (one load per type)", [r("a", { state: "loading" })], llm(), 4, { kind: "wait" }],
    ["another type starting does not hold this one", [r("e", { type: "embedding", state: "loading" })], llm(), 1, { kind: "load" }],
    ["other types do not count against the limit", [r("e", { type: "embedding" }), r("t", { type: "tts" })], llm(), 1, { kind: "load" }],
    ["the count victim is of the incoming type", [r("e", { type: "embedding", lastUse: 0 }), r("a", { lastUse: 50 })], llm(), 1, { kind: "evict", victim: "a", reason: "count" }],
    ["an embedding type full of pinned models: 409 names them", [r("e", { type: "embedding", pinned: true })], llm({ type: "embedding" }), 1, { kind: "refuse", status: 409, pinned: ["e"] }],
    // The routing-helper pool (multi-model guide): helpers neither count nor are counted.
    ["a routing helper takes no standard slot", [r("judge", { residency: "routing_helper" })], llm(), 1, { kind: "load" }],
    ["a full standard pool does not limit a helper's load", [r("a")], llm({ residency: "routing_helper" }), 1, { kind: "load" }],
    ["the count victim is a standard model, never the helper", [r("judge", { residency: "routing_helper", lastUse: 0 }), r("a", { lastUse: 50 })], llm(), 1, { kind: "evict", victim: "a", reason: "count" }],
    // Memory admission, shared by every type.
    ["memory unknown: loads", [r("a")], llm({ memory: undefined }), -1, { kind: "load" }],
    ["memory fits: loads", [r("a")], llm({ memory: fits }), -1, { kind: "load" }],
    ["exactly fits: loads", [], llm({ memory: { need: GB, free: GB } }), -1, { kind: "load" }],
    ["does not fit, auto_evict off: 507", [r("a")], llm({ memory: tooBig }), -1, { kind: "refuse", status: 507, need: 6 * GB, free: 4 * GB, evictable: true }],
    ["does not fit, auto_evict on: evict", [r("a")], llm({ memory: tooBig, autoEvict: true }), -1, { kind: "evict", victim: "a", reason: "memory" }],
    ["memory victim of any type, by the same rule", [r("a", { lastUse: 90_000 }), r("e", { type: "embedding", lastUse: 10_000 })], llm({ memory: tooBig, autoEvict: true }), -1, { kind: "evict", victim: "e", reason: "memory" }],
    ["does not fit, only pinned models: 507, nothing evictable", [r("a", { pinned: true })], llm({ memory: tooBig, autoEvict: true }), -1, { kind: "refuse", status: 507, need: 6 * GB, free: 4 * GB, evictable: false }],
    ["does not fit, nothing loaded: 507", [], llm({ memory: tooBig, autoEvict: true }), -1, { kind: "refuse", status: 507, need: 6 * GB, free: 4 * GB, evictable: false }],
    ["does not fit while a model of another type leaves: wait for the memory", [r("e", { type: "embedding", state: "stopping" }), r("a")], llm({ memory: tooBig, autoEvict: true }), -1, { kind: "wait" }],
    ["does not fit, auto_evict off, one leaving: wait, then decide", [r("a", { state: "draining" })], llm({ memory: tooBig }), -1, { kind: "wait" }],
    ["count first: a full type evicts by count even when memory does not fit", [r("a")], llm({ memory: tooBig }), 1, { kind: "evict", victim: "a", reason: "count" }],
    ["count room, memory fits: loads beside the others", [r("a"), r("e", { type: "embedding" })], llm({ memory: fits }), 2, { kind: "load" }],
  ] as [string, Resident[], Incoming, number, Admission][])("%s", (_name, residents, incoming, maxLoaded, expected) => {
    expect(decideAdmission(residents, incoming, { maxLoaded }, NOW)).toEqual(expected);
  });
});

test("pickVictim: ready and unpinned only, oldest use first when load times and weights are equal", () => {
  expect(pickVictim([r("a", { state: "draining", lastUse: 0 }), r("b", { lastUse: 4 }), r("c", { lastUse: 2 })], 10)?.id).toBe("c");
  expect(pickVictim([r("a", { pinned: true }), r("b", { state: "loading" })], 10)).toBeUndefined();
});

test("pickVictim: idle time over load time x evict_weight_factor", () => {
  const now = 100_000;
  // Idle 60 s but 30 s to load again, against idle 20 s and 1 s to load: the quick one goes.
  expect(pickVictim([r("slow", { lastUse: now - 60_000, loadMs: 30_000 }), r("quick", { lastUse: now - 20_000, loadMs: 1000 })], now)?.id).toBe("quick");
  // A weight of 10 keeps an otherwise equal model resident.
  expect(pickVictim([r("heavy", { lastUse: now - 50_000, weight: 10 }), r("light", { lastUse: now - 10_000 })], now)?.id).toBe("light");
});

test("idleExpired: ready, unpinned, idle and past its timeout (0: at once); none while auto_evict is off (Infinity)", () => {
  const now = 1_000_000;
  const residents = [
    r("expired", { lastUse: now - 301_000 }),
    r("fresh", { lastUse: now - 299_000 }),
    r("busy", { lastUse: now - 900_000, inflight: 1 }),
    r("pinned", { lastUse: now - 900_000, pinned: true }),
    r("never", { lastUse: 0, idleTimeoutS: Infinity }),
    r("at-once", { lastUse: now, idleTimeoutS: 0 }),
    r("draining", { lastUse: 0, state: "draining" }),
    r("loading", { lastUse: 0, state: "loading" }),
  ];
  expect(idleExpired(residents, now).map((x) => x.id)).toEqual(["expired", "at-once"]);
});

test("idleDegradation: evict past evict_idle_timeout, else downsize a whole model past downsize_idle_timeout", () => {
  const now = 1_000_000;
  const residents = [
    r("evict", { lastUse: now - 301_000 }),
    r("downsize", { lastUse: now - 61_000 }),
    r("fresh", { lastUse: now - 59_000 }),
    r("downsized", { lastUse: now - 61_000, tier: "downsized" }),
    r("downsizing", { lastUse: now - 61_000, tier: "downsizing" }),
    r("pinned", { lastUse: now - 900_000, pinned: true }),
    r("busy", { lastUse: now - 900_000, inflight: 1 }),
    r("never", { lastUse: now - 200_000, downsizeTimeoutS: Infinity }),
    r("at-once", { lastUse: now, downsizeTimeoutS: 0 }),
  ];
  const { evict, downsize } = idleDegradation(residents, now);
  expect(evict.map((x) => x.id)).toEqual(["evict"]);
  expect(downsize.map((x) => x.id)).toEqual(["downsize", "at-once"]);
});

test("pressureVictim: the most disposable idle auto_evict model; none while one is leaving", () => {
  const now = 1_000_000;
  const slow = r("slow", { lastUse: now - 100_000, loadMs: 20_000 });
  const quick = r("quick", { lastUse: now - 10_000, loadMs: 100 });
  expect(pressureVictim([slow, quick], now)?.id).toBe("quick");
  expect(pressureVictim([slow, { ...quick, autoEvict: false }], now)?.id).toBe("slow");
  expect(pressureVictim([slow, { ...quick, inflight: 1 }], now)?.id).toBe("slow");
  expect(pressureVictim([{ ...slow, pinned: true }, { ...quick, pinned: true }], now)).toBeUndefined();
  expect(pressureVictim([slow, quick, r("leaving", { state: "stopping" })], now)).toBeUndefined();
});
