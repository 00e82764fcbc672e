// app/idle-gc.ts's policy: what a quiet server hands back, and when, from the request count seen
// at each check QUIET_MS apart.
import { expect, test } from "bun:test";
import { DROP_CODE_MS, IdlePolicy, QUIET_MS, type IdleStep } from "../../app/idle-gc.ts";

/** The steps taken at each check, given the request count at each. */
const run = (policy: IdlePolicy, counts: number[]): (IdleStep | null)[] => counts.map((n) => policy.check(n));
const checksToDrop = DROP_CODE_MS / QUIET_MS;

test("start-up's code is dropped at the first quiet check, and nothing more is done while nothing happens", () => {
  const policy = new IdlePolicy(0);
  expect(run(policy, [0, 0, 0])).toEqual(["drop-code", null, null]);
  expect(run(policy, Array(checksToDrop * 2).fill(0)).every((s) => s === null)).toBe(true);
});

test("after a burst: a collection at the first quiet check, the code dropped only once the server was quiet for DROP_CODE_MS", () => {
  const policy = new IdlePolicy(0);
  run(policy, [0]);
  // Requests at two checks, then quiet.
  const steps = run(policy, [5, 9, ...Array(checksToDrop + 3).fill(9)]);
  expect(steps.slice(0, 2)).toEqual([null, null]);
  const quiet = steps.slice(2);
  expect(quiet[0]).toBe("collect");
  expect(quiet.indexOf("drop-code")).toBe(checksToDrop - 1);
  expect(quiet.filter((s) => s !== null)).toEqual(["collect", "drop-code"]);
});

test("a conversation's pauses shorter than DROP_CODE_MS keep the code: each pause is collected, none dropped", () => {
  const policy = new IdlePolicy(0);
  run(policy, [0]);
  let count = 0;
  const steps: (IdleStep | null)[] = [];
  for (let turn = 0; turn < 10; turn++) {
    steps.push(policy.check(++count));
    // A pause one check short of the drop.
    steps.push(...run(policy, Array(checksToDrop - 1).fill(count)));
  }
  expect(steps.filter((s) => s === "drop-code")).toEqual([]);
  expect(steps.filter((s) => s === "collect").length).toBe(10);
});

test("a request during the wait starts it over", () => {
  const policy = new IdlePolicy(0);
  run(policy, [0]);
  const half = Math.ceil(checksToDrop / 2);
  // Quiet for half the wait, a request, quiet for half again: not dropped.
  expect(run(policy, [1, ...Array(half).fill(1), 2, ...Array(half).fill(2)]).includes("drop-code")).toBe(false);
  // Quiet for the rest of the wait since that request: dropped.
  expect(run(policy, Array(checksToDrop - half).fill(2))).toEqual([...Array(checksToDrop - half - 1).fill(null), "drop-code"]);
});
