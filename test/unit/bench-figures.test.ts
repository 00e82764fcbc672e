// lib/bench.ts's figures: a goal on the ratio to the baseline, or (onValue) on the value itself
// with the ratio shown beside it.
import { expect, test } from "bun:test";
import { meets, pairedRatio, table, type Figure } from "../../lib/bench.ts";

const start = (value: number, onValue?: boolean): Figure => ({
  name: "start",
  value,
  unit: "ms",
  baseline: { name: "bare", value: 10 },
  goal: { op: "<", target: 150, ...(onValue ? { onValue } : {}) },
});

test("a goal is on the ratio when the figure has a baseline, unless it is on the value", () => {
  // 120 ms is 12x the baseline: met as a ratio and as a value.
  expect(meets(start(120))).toBe(true);
  expect(meets(start(120, true))).toBe(true);
  // 1,600 ms is 160x the baseline (missed as a ratio) and over 150 ms (missed as a value).
  expect(meets(start(1600))).toBe(false);
  expect(meets(start(1600, true))).toBe(false);
  // 200 ms: a ratio of 20 meets a ratio goal of < 150, but the absolute goal is missed.
  expect(meets(start(200))).toBe(true);
  expect(meets(start(200, true))).toBe(false);
  expect(meets(start(140, true))).toBe(true);
});

test("the table prints an absolute goal with its unit, beside the ratio to the baseline", () => {
  const [, , row] = table("t", [start(200, true)]).split("\n");
  expect(row).toContain("bare 10.0 ms");
  expect(row).toContain("20.000");
  expect(row).toContain("< 150 ms");
  expect(row).not.toContain("ratio <");
  expect(row).toContain("MISSED");
  const [, , ratioRow] = table("t", [start(200)]).split("\n");
  expect(ratioRow).toContain("ratio < 150");
});

test("a figure that is itself a ratio prints to three places, so a value just under its goal does not read as on it", () => {
  const paired: Figure = { name: "paired", value: 0.9754, unit: "x", goal: { op: ">=", target: 0.98 } };
  const [, , row] = table("t", [paired]).split("\n");
  expect(row).toContain("0.975 x");
  expect(row).toContain(">= 0.98");
  expect(row).toContain("MISSED");
  // Other units keep two places under 10.
  const [, , ms] = table("t", [{ name: "ms", value: 0.9754, unit: "ms" }]).split("\n");
  expect(ms).toContain("0.98 ms");
});

test("a paired ratio is the median of each pair's ratio: a run that only one side of its pair lost does not move it", () => {
  // The machine's speed drifts from pair to pair; within each pair the server's side is 2 % slower.
  const direct = [100, 200, 50, 150, 120];
  const through = direct.map((x) => x * 0.98);
  expect(pairedRatio(through, direct)).toBeCloseTo(0.98, 9);
  // One run through the server stalls (another process took the core): the median of the pairs holds.
  through[2] = 10;
  expect(pairedRatio(through, direct)).toBeCloseTo(0.98, 9);
  // Each run is set against its own pair's: against another pair's it would read the drift.
  expect(pairedRatio([196, 49], [200, 50])).toBeCloseTo(0.98, 9);
});
