// The eviction choices, as pure functions.
import { describe, expect, test } from "bun:test";
import { decideRoom, idleExpired, pickVictim, type Resident, type RoomDecision } from "../../runtime/eviction.ts";

const r = (id: string, over: Partial<Resident> = {}): Resident => ({
  id,
  state: "ready",
  pinned: false,
  lastUse: 0,
  inflight: 0,
  idleTimeoutS: 300,
  loadMs: 1000,
  weight: 1,
  ...over,
});

describe("decideRoom", () => {
  test.each([
    ["room below the limit", [r("a")], 0, 2, { kind: "load" }],
    ["unlimited", [r("a"), r("b")], 0, -1, { kind: "load" }],
    ["a starting load takes room", [r("a")], 1, 2, { kind: "evict", victim: "a" }],
    ["full: the least recently used goes", [r("a", { lastUse: 5 }), r("b", { lastUse: 1 })], 0, 2, { kind: "evict", victim: "b" }],
    ["a busy model may be chosen: it drains first", [r("a", { inflight: 3 })], 0, 1, { kind: "evict", victim: "a" }],
    ["pinned models are passed over", [r("a", { pinned: true, lastUse: 0 }), r("b", { lastUse: 9 })], 0, 2, { kind: "evict", victim: "b" }],
    ["one already leaving: wait for it", [r("a", { state: "draining" })], 0, 1, { kind: "wait" }],
    ["one stopping: wait for it", [r("a", { pinned: true }), r("b", { state: "stopping" })], 0, 2, { kind: "wait" }],
    ["every one pinned: refuse", [r("a", { pinned: true }), r("b", { pinned: true })], 0, 2, { kind: "refuse", pinned: ["a", "b"] }],
  ] as [string, Resident[], number, number, RoomDecision][])("%s", (_name, residents, loading, max, expected) => {
    expect(decideRoom(residents, loading, max, 10)).toEqual(expected);
  });
});

test("pickVictim: ready and unpinned only, oldest use first when load times and weights are equal", () => {
  expect(pickVictim([r("a", { state: "draining", lastUse: 0 }), r("b", { lastUse: 4 }), r("c", { lastUse: 2 })], 10)?.id).toBe("c");
  expect(pickVictim([r("a", { pinned: true })], 10)).toBeUndefined();
});

test("pickVictim: idle time over load time x evict_weight_factor", () => {
  const now = 100_000;
  // Idle 60 s but 30 s to load again, against idle 20 s and 1 s to load: the quick one goes.
  expect(pickVictim([r("slow", { lastUse: now - 60_000, loadMs: 30_000 }), r("quick", { lastUse: now - 20_000, loadMs: 1000 })], now)?.id).toBe("quick");
  // A weight of 10 keeps an otherwise equal model resident.
  expect(pickVictim([r("heavy", { lastUse: now - 50_000, weight: 10 }), r("light", { lastUse: now - 10_000 })], now)?.id).toBe("light");
});

test("idleExpired: ready, unpinned, idle and past a positive timeout", () => {
  const now = 1_000_000;
  const residents = [
    r("expired", { lastUse: now - 301_000 }),
    r("fresh", { lastUse: now - 299_000 }),
    r("busy", { lastUse: now - 900_000, inflight: 1 }),
    r("pinned", { lastUse: now - 900_000, pinned: true }),
    r("never", { lastUse: 0, idleTimeoutS: 0 }),
    r("draining", { lastUse: 0, state: "draining" }),
  ];
  expect(idleExpired(residents, now).map((x) => x.id)).toEqual(["expired"]);
});
