// The job recipes' expression language (docs/dev/job-expression-language.md) and the step graph's
// creation checks (docs/dev/job-system.md), table by table.
import { describe, expect, test } from "bun:test";
import { evalCondition, JobExprError, resolveRefs, syntaxError, truthy } from "../../lib/job-expr.ts";
import { doneSteps, nextAfterSuccess, parseSteps, validateSteps, type Step } from "../../lib/job-graph.ts";
import type { JsonValue } from "../../lib/json.ts";

const context: JsonValue = {
  inputs: { model: "Qwen3-0.6B-GGUF", ctx: 32768, prompt: [{ role: "user", content: "hi" }] },
  run_v: { timings: { predicted_per_second: 42.5, prompt_ms: 10 } },
  vulkan_tps: 50,
  rocm_tps: 40,
  winner: "vulkan",
  list: [7, 8, 9],
  nothing: null,
  empty: "",
  flag: true,
  obj: {},
};

describe("references in params", () => {
  const cases: [JsonValue, JsonValue][] = [
    ["${inputs.ctx}", 32768],
    ["${inputs.prompt}", [{ role: "user", content: "hi" }]],
    ["${list.0}", 7],
    ["${run_v.timings.predicted_per_second}", 42.5],
    ["vulkan @ ${inputs.ctx} tok", "vulkan @ 32768 tok"],
    ["${winner}${vulkan_tps}", "vulkan50"],
    ["[${nothing}]", "[]"],
    ["l=${list}", "l=[7,8,9]"],
    ["t=${flag}", "t=true"],
    ["plain text", "plain text"],
    [{ a: ["${inputs.model}", { b: "${list.2}" }], n: 3 }, { a: ["Qwen3-0.6B-GGUF", { b: 9 }], n: 3 }],
  ];
  for (const [params, want] of cases) test(JSON.stringify(params), () => expect(resolveRefs(params, context)).toEqual(want));

  for (const bad of ["${no.such.key}", "x ${inputs.nope} y", "${list.3}", "${list.x}", "open ${inputs.ctx"]) {
    test(`${bad} is an error`, () => expect(() => resolveRefs(bad, context)).toThrow(JobExprError));
  }
});

describe("conditions", () => {
  const cases: [string, boolean][] = [
    ["", true],
    ["   ", true],
    ["${vulkan_tps} > ${rocm_tps}", true],
    ["${vulkan_tps} < ${rocm_tps}", false],
    ["${winner} == 'vulkan'", true],
    ['${winner} == "rocm"', false],
    ["${winner} != 'rocm'", true],
    ["2 == 2.0", true],
    ["1 == '1'", false],
    ["${list} == ${list}", true],
    ["${obj} == ${obj}", true],
    ["'abc' < 'abd'", true],
    ["10 / 4 == 2.5", true],
    ["1 + 2 * 3 == 7", true],
    ["(1 + 2) * 3 == 9", true],
    ["-${rocm_tps} == -40", true],
    ["--1 == 1", true],
    ["1 - 2 - 3 == -4", true],
    ["${run_v.timings.predicted_per_second} / ${run_v.timings.prompt_ms} > 4", true],
    ["true && false", false],
    ["true || false", true],
    ["!false", true],
    ["!${empty}", true],
    ["!${obj}", true],
    ["${nothing}", false],
    ["${list}", true],
    ["0", false],
    [".5", true],
    ["'a\\'b' == \"a'b\"", true],
    ["false || true && false", false],
    ["!1 == 2", true],
    ["null == ${nothing}", true],
  ];
  for (const [expr, want] of cases) test(`${expr || "(empty)"} -> ${want}`, () => expect(evalCondition(expr, context)).toBe(want));

  const errors: [string, RegExp][] = [
    ["1 < 2 < 3", /chain/],
    ["${winner} > 3", /two numbers or two strings/],
    ["'a' + 1", /numbers/],
    ["-'a'", /numbers/],
    ["1 / 0", /division by zero/],
    ["${no.such} == 1", /unknown reference/],
    ["${open == 1", /unterminated reference/],
    ["'open == 1", /unterminated string/],
    ["foo == 1", /unknown identifier 'foo'/],
    ["1 # 2", /unexpected character/],
    ["1 2", /trailing/],
    ["(1 == 1", /missing '\)'/],
    ["1 ==", /unexpected end/],
    // Both sides are evaluated: the guard does not protect the right-hand reference.
    ["${nothing} != null && ${nothing.b} > 0", /unknown reference/],
  ];
  for (const [expr, want] of errors) test(`${expr} is an error`, () => expect(() => evalCondition(expr, context)).toThrow(want));

  test("the syntax check finds syntax errors and looks no reference up", () => {
    expect(syntaxError("${not.yet.there} > 1 && ${x} == 'a'")).toBeNull();
    expect(syntaxError("1 < 2 < 3")).toMatch(/chain/);
    expect(syntaxError("foo")).toMatch(/unknown identifier/);
    expect(syntaxError("${a} >")).toMatch(/unexpected end/);
  });

  test("truthiness", () => {
    expect([true, 1, -1, "x", [0], { a: 0 }].map(truthy)).toEqual([true, true, true, true, true, true]);
    expect([false, 0, "", null, [], {}].map(truthy)).toEqual([false, false, false, false, false, false]);
  });
});

const ops = new Set(["load", "chat", "sleep", "unload"]);
const steps = (raw: unknown[]): Step[] => {
  const parsed = parseSteps(raw);
  if (typeof parsed === "string") throw new Error(parsed);
  return parsed;
};

describe("step graph validation", () => {
  const invalid: [string, unknown[], RegExp][] = [
    ["no steps", [], /at least one step/],
    ["an empty id", [{ op: "sleep" }], /no id/],
    ["the reserved id", [{ id: "inputs", op: "sleep" }], /reserved/],
    ["a dotted id", [{ id: "a.b", op: "sleep" }], /'\.'/],
    ["a duplicate id", [{ id: "a", op: "sleep" }, { id: "a", op: "sleep" }], /duplicate step id 'a'/],
    ["no op", [{ id: "a" }], /no op/],
    ["an unknown op", [{ id: "a", op: "fly" }], /unknown op 'fly'/],
    ["on_done to an earlier step", [{ id: "a", op: "sleep" }, { id: "b", op: "sleep", on_done: "a" }], /later step/],
    ["on_done to itself", [{ id: "a", op: "sleep", on_done: "a" }], /later step/],
    ["on_done to no step", [{ id: "a", op: "sleep", on_done: "zz" }], /no step of this job/],
    ["on_fail backwards", [{ id: "a", op: "sleep" }, { id: "b", op: "sleep", on_fail: "a" }], /later step/],
    ["a branch without goto", [{ id: "a", op: "sleep", branch: [{ when: "true" }] }, { id: "b", op: "sleep" }], /no goto/],
    ["a branch backwards", [{ id: "a", op: "sleep" }, { id: "b", op: "sleep", branch: [{ when: "true", goto: "a" }] }], /later step/],
    ["a when that does not parse", [{ id: "a", op: "sleep", when: "1 < 2 < 3" }], /step 'a' when: .*chain/],
    ["a branch when that does not parse", [{ id: "a", op: "sleep", branch: [{ when: "foo", goto: "b" }] }, { id: "b", op: "sleep" }], /branch when: unknown identifier/],
  ];
  for (const [what, raw, want] of invalid) test(`refuses ${what}`, () => expect(validateSteps(steps(raw), ops)).toMatch(want));

  test("accepts forward jumps, continue and abort", () => {
    const ok = steps([
      { id: "a", op: "load", on_fail: "c" },
      { id: "b", op: "chat", on_fail: "continue", branch: [{ when: "${x} > 1", goto: "d" }] },
      { id: "c", op: "sleep", on_done: "d", on_fail: "abort" },
      { id: "d", op: "unload", when: "${x} == 2" },
    ]);
    expect(validateSteps(ok, ops)).toBeNull();
    expect(ok[2]!.on_fail).toBeUndefined();
  });

  test("parse refuses what is no step list", () => {
    expect(parseSteps(undefined)).toMatch(/must be an array/);
    expect(parseSteps([3])).toMatch(/not an object/);
    expect(parseSteps([{ id: "a", op: "sleep", params: [] }])).toMatch(/params must be an object/);
    expect(parseSteps([{ id: "a", op: "sleep", extract: { k: 1 } }])).toMatch(/extract/);
    expect(parseSteps([{ id: 1, op: "sleep" }])).toMatch(/id must be a string/);
  });

  test("where a completed step leads: the first branch that holds, else on_done, else the next", () => {
    const g = steps([
      { id: "a", op: "sleep", branch: [{ when: "${n} > 5", goto: "c" }, { when: "${n} > 1", goto: "d" }], on_done: "b" },
      { id: "b", op: "sleep" },
      { id: "c", op: "sleep" },
      { id: "d", op: "sleep" },
    ]);
    expect(nextAfterSuccess(g, g[0]!, { n: 9 })).toBe("c");
    expect(nextAfterSuccess(g, g[0]!, { n: 3 })).toBe("d");
    expect(nextAfterSuccess(g, g[0]!, { n: 0 })).toBe("b");
    expect(nextAfterSuccess(g, g[2]!, {})).toBe("d");
    expect(nextAfterSuccess(g, g[3]!, {})).toBe("");
  });

  test("progress counts completed, skipped and handled failures", () => {
    const g = steps([{ id: "a", op: "sleep" }, { id: "b", op: "sleep" }, { id: "c", op: "sleep" }, { id: "d", op: "sleep" }, { id: "e", op: "sleep" }]);
    g[0]!.status = "completed";
    g[1]!.status = "skipped";
    g[2]!.status = "failed";
    g[2]!.failure_handled = true;
    g[3]!.status = "failed";
    expect(doneSteps(g)).toBe(3);
  });
});
