// collection.router: policy checks and the deterministic conditions, table-driven; the llm
// classifier through a stand-in `classify`.
import { describe, expect, test } from "bun:test";
import { checkPolicyDocument, checkRouting, hasNestedQuantifier, type Routing } from "../../models/routing-policy.ts";
import { decide, routeInput, type Classify } from "../../runtime/router-engine.ts";

const known = (n: string) => ["small", "big", "coder", "judge"].includes(n);
const base = { candidates: ["small", "big", "coder"], default_model: "small" };

describe("policy checks", () => {
  const refused: [string, unknown, RegExp][] = [
    ["an unknown major version", { version: "2", routing: { ...base, rules: [] } }, /version "2" is not supported/],
    ["no candidates", { routing: { candidates: [], default_model: "x", rules: [] } }, /candidates must be a list of at least 1/],
    ["an unregistered candidate", { routing: { candidates: ["small", "ghost"], default_model: "small", rules: [] } }, /'ghost', which is not a registered model/],
    ["default_model outside the candidates", { routing: { ...base, default_model: "judge", rules: [] } }, /default_model must be one of the candidates/],
    ["neither rules nor router", { routing: { ...base } }, /needs rules, or a router/],
    ["router with rules", { routing: { ...base, router: { type: "llm", model: "judge", prompt: "p" }, rules: [] } }, /cannot be combined/],
    ["route_to outside the candidates", { routing: { ...base, rules: [{ id: "r", match: { keywords_any: ["x"] }, route_to: "judge" }] } }, /rules\[0\]\.route_to must be one of the candidates/],
    ["a bad rule id", { routing: { ...base, rules: [{ id: "has space", match: { keywords_any: ["x"] }, route_to: "big" }] } }, /rules\[0\]\.id must be letters/],
    ["a duplicated rule id", { routing: { ...base, rules: [1, 2].map(() => ({ id: "r", match: { keywords_any: ["x"] }, route_to: "big" })) } }, /'r' is used twice/],
    ["an unknown condition", { routing: { ...base, rules: [{ id: "r", match: { contains: "x" }, route_to: "big" }] } }, /match\.contains is not a condition/],
    ["an empty match", { routing: { ...base, rules: [{ id: "r", match: {}, route_to: "big" }] } }, /match must be an object with at least one condition/],
    ["a broken regex", { routing: { ...base, rules: [{ id: "r", match: { regex: "(" }, route_to: "big" }] } }, /regex is not a valid pattern/],
    ["a nested unbounded quantifier", { routing: { ...base, rules: [{ id: "r", match: { regex: "(a+)+$" }, route_to: "big" }] } }, /nested unbounded quantifier/],
    ["metadata with two comparators", { routing: { ...base, rules: [{ id: "r", match: { metadata: { key: "k", equals: "a", exists: true } }, route_to: "big" }] } }, /exactly one of equals, any, exists/],
    ["a dangling classifier", { routing: { ...base, rules: [{ id: "r", match: { classifier: "nope", label: "x" }, route_to: "big" }] } }, /'nope', which no classifier of the policy is/],
    [
      "a dangling label",
      { routing: { ...base, classifiers: [{ id: "c", type: "llm", model: "judge", prompt: "p", labels: ["code", "chat"] }], rules: [{ id: "r", match: { classifier: "c", label: "math" }, route_to: "coder" }] } },
      /'math' is not one of classifier 'c''s labels/,
    ],
    ["a score out of range", { routing: { ...base, classifiers: [{ id: "c", type: "llm", model: "judge", prompt: "p", labels: ["x"] }], rules: [{ id: "r", match: { classifier: "c", label: "x", min_score: 2 }, route_to: "big" }] } }, /min_score must be a number from 0 to 1/],
    ["a classifier type not evaluated here", { routing: { ...base, classifiers: [{ id: "c", type: "pii_detection", model: "judge" }], rules: [] } }, /'pii_detection' classifiers are not evaluated by this server yet/],
    ["a classifier that lists no labels", { routing: { ...base, classifiers: [{ id: "c", type: "classifier", model: "judge" }], rules: [] } }, /classifiers\[0\]\.labels must be a list of at least 1/],
    ["semantic_similarity without phrases", { routing: { ...base, classifiers: [{ id: "c", type: "semantic_similarity", model: "judge" }], rules: [] } }, /reference_phrases must map at least one concept/],
    ["semantic_similarity with labels", { routing: { ...base, classifiers: [{ id: "c", type: "semantic_similarity", model: "judge", labels: ["x"], reference_phrases: { x: ["a"] } }], rules: [] } }, /labels is not used by semantic_similarity/],
    [
      "a label that is not a concept",
      { routing: { ...base, classifiers: [{ id: "c", type: "semantic_similarity", model: "judge", reference_phrases: { billing: ["refund"] } }], rules: [{ id: "r", match: { classifier: "c", label: "jokes" }, route_to: "big" }] } },
      /'jokes' is not one of classifier 'c''s labels \(billing\)/,
    ],
    // As Lemonade's parser refuses them.
    ["no rules", { routing: { ...base, rules: [] } }, /routing\.rules must be a non-empty list/],
    ["a candidate named twice", { routing: { ...base, candidates: ["small", "big", "small"], rules: [] } }, /candidates\[2\] duplicates candidate 'small'/],
    ["a logical operator beside a leaf", { routing: { ...base, rules: [{ id: "r", match: { any: [{ keywords_any: ["x"] }], min_chars: 3 }, route_to: "big" }] } }, /cannot mix logical operators with leaf conditions/],
    ["two logical operators in one node", { routing: { ...base, rules: [{ id: "r", match: { any: [{ keywords_any: ["x"] }], not: { min_chars: 3 } }, route_to: "big" }] } }, /must contain only one logical operator/],
    ["an empty any", { routing: { ...base, rules: [{ id: "r", match: { any: [] }, route_to: "big" }] } }, /match\.any must be a non-empty list/],
    [
      "a band whose min_score is above its max_score",
      { routing: { ...base, classifiers: [{ id: "c", type: "llm", model: "judge", prompt: "p", labels: ["x"] }], rules: [{ id: "r", match: { classifier: "c", label: "x", min_score: 0.8, max_score: 0.2 }, route_to: "big" }] } },
      /has min_score greater than max_score/,
    ],
  ];
  for (const [what, doc, message] of refused) {
    test(`refused: ${what}`, () => {
      expect(() => checkRouting(doc as never, known)).toThrow(message);
    });
  }

  test("a classifier condition needs a fixed-label classification model", () => {
    const doc = { routing: { ...base, classifiers: [{ id: "c", type: "classifier", model: "judge", labels: ["SAFE"] }], rules: [{ id: "r", match: { classifier: "c", label: "SAFE", min_score: 0.5 }, route_to: "big" }] } };
    expect(() => checkRouting(doc, known, (n) => n === "guard")).toThrow(/classifiers\[0\]\.model 'judge' is not a fixed-label classification model/);
    expect(checkRouting(doc, known, (n) => n === "judge").classifiers[0]).toMatchObject({ type: "classifier", model: "judge", labels: ["SAFE"] });
  });

  test("the router sugar desugars into one llm classifier over the candidates and identity rules", () => {
    const policy = checkRouting({ version: "1", routing: { ...base, router: { type: "llm", model: "judge", prompt: "Pick a model." } } }, known);
    // Lemonade's ids: a matched pick's rule id is what the route header says.
    expect(policy.classifiers).toEqual([{ id: "__router", type: "llm", model: "judge", prompt: "Pick a model.", labels: ["small", "big", "coder"], on_error: "match_false" }]);
    expect(policy.rules.map((r) => [r.id, r.match, r.route_to])).toEqual([
      ["__route_0", { classifier: "__router", label: "small", min_score: 1 }, "small"],
      ["__route_1", { classifier: "__router", label: "big", min_score: 1 }, "big"],
      ["__route_2", { classifier: "__router", label: "coder", min_score: 1 }, "coder"],
    ]);
  });

  test("every model the policy names must be one of the document's components", () => {
    const declared = (n: string) => ["small", "big", "coder"].includes(n);
    const rules = [{ id: "r", match: { keywords_any: ["x"] }, route_to: "big" }];
    expect(checkRouting({ routing: { ...base, rules } }, known, undefined, declared).candidates).toEqual(["small", "big", "coder"]);
    expect(() => checkRouting({ routing: { ...base, candidates: ["small", "judge"], rules: [] } }, known, undefined, declared)).toThrow(
      "routing.candidates[1] references component 'judge' that is not declared in collection.components",
    );
    expect(() => checkRouting({ routing: { ...base, router: { type: "llm", model: "judge", prompt: "p" } } }, known, undefined, declared)).toThrow(/routing\.router\.model references component 'judge'/);
    const classifiers = [{ id: "c", type: "llm", model: "judge", prompt: "p", labels: ["x"] }];
    expect(() => checkRouting({ routing: { ...base, classifiers, rules } }, known, undefined, declared)).toThrow(/classifiers\[0\]\.model references component 'judge'/);
  });

  test("a document tried on its own has only the document's keys, the router recipe, and its components", () => {
    const doc = { version: "1", recipe: "collection.router", components: ["small"], routing: {} };
    expect(checkPolicyDocument(doc)("small")).toBe(true);
    expect(checkPolicyDocument(doc)("big")).toBe(false);
    expect(() => checkPolicyDocument({ ...doc, stream: true })).toThrow("collection contains unknown key 'stream'");
    expect(() => checkPolicyDocument({ ...doc, recipe: "collection.omni" })).toThrow("collection.recipe must be 'collection.router'");
    expect(() => checkPolicyDocument({ ...doc, components: undefined })).toThrow("collection.router requires a non-empty components array");
    expect(() => checkPolicyDocument({ ...doc, components: [] })).toThrow(/collection\.components must be a list of at least 1/);
    expect(() => checkPolicyDocument({ ...doc, version: undefined })).toThrow(/collection\.version must be a non-empty string/);
  });

  test("nested quantifier detection", () => {
    for (const p of ["(a+)+", "(\\w*)*", "(x+y)+", "(a+){2,}"]) expect(hasNestedQuantifier(p), p).toBe(true);
    for (const p of ["a+b+", "(ab)+", "\\(a+\\)+", "[a+]+"]) expect(hasNestedQuantifier(p), p).toBe(false);
  });
});

const policyOf = (rules: unknown[], classifiers: unknown[] = []): Routing => checkRouting({ routing: { ...base, classifiers, rules } }, known);
const chat = (text: string, extra: Record<string, unknown> = {}) => routeInput({ messages: [{ role: "system", content: "sys" }, { role: "user", content: "old" }, { role: "assistant", content: "a" }, { role: "user", content: text }], ...extra });
const never: Classify = async () => {
  throw new Error("not called");
};

describe("deterministic conditions, first match wins, fail-open to default_model", () => {
  const cases: [string, unknown, Record<string, unknown>, string, boolean][] = [
    ["keywords_any, case-insensitive", { keywords_any: ["PYTHON", "rust"] }, { text: "write some Python" }, "coder", true],
    ["keywords_any, none present", { keywords_any: ["python"] }, { text: "hello" }, "small", false],
    ["keywords_all needs each", { keywords_all: ["sql", "join"] }, { text: "an SQL query" }, "small", false],
    ["keywords_all, all present", { keywords_all: ["sql", "join"] }, { text: "SQL with a JOIN" }, "coder", true],
    ["regex, case-sensitive", { regex: "^def \\w+\\(" }, { text: "def main(" }, "coder", true],
    ["regex no match", { regex: "^def" }, { text: "Def main" }, "small", false],
    ["min_chars in UTF-8 bytes", { min_chars: 6 }, { text: "héllo" }, "coder", true],
    ["max_chars", { max_chars: 3 }, { text: "four" }, "small", false],
    ["has_tools", { has_tools: true }, { text: "x", tools: [{ type: "function", function: { name: "f" } }] }, "coder", true],
    ["has_images false", { has_images: false }, { text: "x" }, "coder", true],
    ["metadata equals", { metadata: { key: "task", equals: "code" } }, { text: "x", metadata: { task: "code" } }, "coder", true],
    ["metadata equals is exact", { metadata: { key: "task", equals: "code" } }, { text: "x", metadata: { task: "Code" } }, "small", false],
    ["metadata any over a comma list", { metadata: { key: "tags", any: ["b", "z"] } }, { text: "x", metadata: { tags: "a, b ,c" } }, "coder", true],
    ["metadata exists false on blank", { metadata: { key: "consent", exists: false } }, { text: "x", metadata: { consent: "  " } }, "coder", true],
    ["metadata exists true", { metadata: { key: "consent", exists: true } }, { text: "x" }, "small", false],
    ["any", { any: [{ keywords_any: ["nope"] }, { regex: "yes" }] }, { text: "yes" }, "coder", true],
    ["all", { all: [{ keywords_any: ["a"] }, { max_chars: 2 }] }, { text: "abc" }, "small", false],
    ["not", { not: { keywords_any: ["secret"] } }, { text: "public" }, "coder", true],
    ["leaves of one node are a conjunction", { keywords_any: ["code"], min_chars: 100 }, { text: "code" }, "small", false],
  ];
  for (const [what, match, request, expected, matched] of cases) {
    test(what, async () => {
      const { text, ...extra } = request;
      const decision = await decide(policyOf([{ id: "r1", match, route_to: "coder", outputs: { tier: "code" } }]), chat(String(text), extra), never);
      expect(decision.route_to).toBe(expected);
      expect(decision.default_used).toBe(!matched);
      expect(decision.matched_rule).toBe(matched ? "r1" : "");
      expect(decision.outputs).toEqual(matched ? { tier: "code" } : {});
    });
  }

  test("the last user message is the input; rules are tried in order", async () => {
    const policy = policyOf([
      { id: "first", match: { keywords_any: ["old"] }, route_to: "big" },
      { id: "second", match: { keywords_any: ["new"] }, route_to: "coder" },
      { id: "third", match: { keywords_any: ["new"] }, route_to: "big" },
    ]);
    const decision = await decide(policy, chat("something new"), never);
    expect(decision).toMatchObject({ route_to: "coder", matched_rule: "second" });
    expect(decision.trace.map((t) => [t.condition, t.result])).toEqual([
      ["keywords_any", false],
      ["keywords_any", true],
    ]);
  });
});

describe("llm classifiers", () => {
  const judge = [{ id: "kind", type: "llm", model: "judge", prompt: "What is it?", labels: ["code", "chat"], default_label: "chat" }];
  test("the label the classifier scores routes, and it is asked once per request", async () => {
    let calls = 0;
    const classify: Classify = async () => {
      calls++;
      return { scores: { code: 1, chat: 0 }, rationale: "it is code" };
    };
    const policy = policyOf(
      [
        { id: "chatty", match: { classifier: "kind" }, route_to: "big" },
        { id: "codey", match: { classifier: "kind", label: "code", min_score: 0.9 }, route_to: "coder" },
      ],
      judge,
    );
    const decision = await decide(policy, chat("fn main() {}"), classify);
    expect(decision).toMatchObject({ route_to: "coder", matched_rule: "codey" });
    expect(calls).toBe(1);
    expect(decision.trace).toEqual([
      { condition: "classifier:kind", label: "chat", score: 0, result: false, rationale: "it is code" },
      { condition: "classifier:kind", label: "code", score: 1, result: true, rationale: "it is code" },
    ]);
  });

  test("a failing classifier is match_false by default (fail-open), match_true when authored so", async () => {
    const failing: Classify = async () => {
      throw new Error("down");
    };
    const open = policyOf([{ id: "r", match: { classifier: "kind", label: "code" }, route_to: "coder" }], judge);
    expect((await decide(open, chat("x"), failing)).default_used).toBe(true);
    const closed = policyOf([{ id: "r", match: { classifier: "kind", label: "code" }, route_to: "coder" }], [{ ...judge[0], on_error: "match_true" }]);
    expect((await decide(closed, chat("x"), failing)).route_to).toBe("coder");
  });
});
