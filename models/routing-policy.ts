// collection.router policies (the shape of Lemonade's route_policy JSON Schema, version "1"):
// checked with precise errors before anything is registered, and normalised — the `router` sugar
// desugared into one `llm` classifier whose labels are the candidates plus identity rules
// (label X → route_to X), so the engine (runtime/router-engine.ts) sees one form.
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";

export interface MetadataMatch {
  key: string;
  equals?: string;
  any?: string[];
  exists?: boolean;
}

/** One node of a rule's `match`: nested any/all/not, or leaf conditions (all of a node's leaves must hold). */
export interface MatchExpr {
  any?: MatchExpr[];
  all?: MatchExpr[];
  not?: MatchExpr;
  classifier?: string;
  label?: string;
  min_score?: number;
  max_score?: number;
  keywords_any?: string[];
  keywords_all?: string[];
  regex?: string;
  min_chars?: number;
  max_chars?: number;
  has_tools?: boolean;
  has_images?: boolean;
  metadata?: MetadataMatch;
}

export interface Rule {
  id: string;
  match: MatchExpr;
  route_to: string;
  outputs?: Record<string, unknown>;
}

export interface Classifier {
  id: string;
  /** `llm`: a model asked to answer one label; `semantic_similarity`: cosine against exemplar
   * phrases on an embedding model; `classifier`: an onnxruntime text classifier's label scores. */
  type: "llm" | "semantic_similarity" | "classifier";
  model: string;
  /** llm only. */
  prompt: string;
  labels: string[];
  /** semantic_similarity only: concept label -> exemplar phrases. */
  reference_phrases?: Record<string, string[]>;
  default_label?: string;
  on_error: "match_true" | "match_false";
}

export interface Routing {
  candidates: string[];
  default_model: string;
  classifiers: Classifier[];
  rules: Rule[];
}

/** Classifier types of the schema this server evaluates; the others are refused by name. */
const SUPPORTED_CLASSIFIERS = new Set(["llm", "semantic_similarity", "classifier"]);
const ALL_CLASSIFIERS = new Set(["semantic_similarity", "classifier", "llm", "pii_detection", "prompt_safety", "language_detection", "domain_classification", "complexity", "sentiment"]);
const EXPR_KEYS = new Set(["any", "all", "not", "classifier", "label", "min_score", "max_score", "keywords_any", "keywords_all", "regex", "min_chars", "max_chars", "has_tools", "has_images", "metadata"]);

const invalid = (path: string, why: string) => ApiError.of(E.invalidArgument, `Invalid routing policy: ${path} ${why}`, "routing");

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const strings = (v: unknown, path: string, min = 0): string[] => {
  if (!Array.isArray(v) || v.length < min || !v.every((s) => typeof s === "string" && s.length > 0)) {
    throw invalid(path, min ? `must be a list of at least ${min} non-empty strings` : "must be a list of non-empty strings");
  }
  return v as string[];
};

/** A nested unbounded quantifier such as `(a+)+` or `(\w*)*`: the usual catastrophic backtracking shape. */
export function hasNestedQuantifier(pattern: string): boolean {
  return /\((?:[^()\\]|\\.)*[+*](?:[^()\\]|\\.)*\)[+*{]/.test(pattern);
}

function checkExpr(e: unknown, path: string, classifiers: Map<string, Classifier>): MatchExpr {
  if (!isObject(e) || Object.keys(e).length === 0) throw invalid(path, "must be an object with at least one condition");
  for (const k of Object.keys(e)) if (!EXPR_KEYS.has(k)) throw invalid(`${path}.${k}`, "is not a condition (use any, all, not, keywords_any, keywords_all, regex, min_chars, max_chars, has_tools, has_images, metadata, classifier)");
  // As Lemonade's parser reads a node: one logical operator alone, or leaf conditions.
  const logical = ["any", "all", "not"].filter((k) => e[k] !== undefined);
  if (logical.length > 1) throw invalid(path, "must contain only one logical operator");
  if (logical.length && Object.keys(e).length > 1) throw invalid(path, "cannot mix logical operators with leaf conditions");
  for (const k of ["any", "all"] as const) {
    if (e[k] !== undefined) {
      if (!Array.isArray(e[k]) || !e[k].length) throw invalid(`${path}.${k}`, "must be a non-empty list of conditions");
      (e[k] as unknown[]).forEach((x, i) => checkExpr(x, `${path}.${k}[${i}]`, classifiers));
    }
  }
  if (e.not !== undefined) checkExpr(e.not, `${path}.not`, classifiers);
  for (const k of ["keywords_any", "keywords_all"] as const) if (e[k] !== undefined) strings(e[k], `${path}.${k}`, 1);
  if (e.regex !== undefined) {
    if (typeof e.regex !== "string" || !e.regex) throw invalid(`${path}.regex`, "must be a non-empty pattern");
    try {
      new RegExp(e.regex);
    } catch (err) {
      throw invalid(`${path}.regex`, `is not a valid pattern (${(err as Error).message})`);
    }
    if (hasNestedQuantifier(e.regex)) throw invalid(`${path}.regex`, "has a nested unbounded quantifier such as (X+)+, refused against catastrophic backtracking");
  }
  for (const k of ["min_chars", "max_chars"] as const) {
    if (e[k] !== undefined && !(Number.isInteger(e[k]) && (e[k] as number) >= 0)) throw invalid(`${path}.${k}`, "must be a whole number from 0");
  }
  for (const k of ["has_tools", "has_images"] as const) if (e[k] !== undefined && typeof e[k] !== "boolean") throw invalid(`${path}.${k}`, "must be true or false");
  if (e.metadata !== undefined) {
    const m = e.metadata;
    if (!isObject(m) || typeof m.key !== "string" || !m.key) throw invalid(`${path}.metadata`, "must name a non-empty key");
    for (const k of Object.keys(m)) if (!["key", "equals", "any", "exists"].includes(k)) throw invalid(`${path}.metadata.${k}`, "is not a metadata comparator (equals, any, exists)");
    const comparators = ["equals", "any", "exists"].filter((k) => m[k] !== undefined);
    if (comparators.length !== 1) throw invalid(`${path}.metadata`, "must have exactly one of equals, any, exists");
    if (m.equals !== undefined && typeof m.equals !== "string") throw invalid(`${path}.metadata.equals`, "must be a string");
    if (m.any !== undefined) strings(m.any, `${path}.metadata.any`, 1);
    if (m.exists !== undefined && typeof m.exists !== "boolean") throw invalid(`${path}.metadata.exists`, "must be true or false");
  }
  for (const k of ["min_score", "max_score"] as const) {
    if (e[k] !== undefined && !(typeof e[k] === "number" && (e[k] as number) >= 0 && (e[k] as number) <= 1)) throw invalid(`${path}.${k}`, "must be a number from 0 to 1");
  }
  if (typeof e.min_score === "number" && typeof e.max_score === "number" && e.min_score > e.max_score) throw invalid(path, "has min_score greater than max_score");
  const scoped = e.label !== undefined || e.min_score !== undefined || e.max_score !== undefined;
  if (scoped && e.classifier === undefined) throw invalid(path, "uses label/min_score/max_score without naming a classifier");
  if (e.classifier !== undefined) {
    const c = classifiers.get(String(e.classifier));
    if (!c) throw invalid(`${path}.classifier`, `names '${String(e.classifier)}', which no classifier of the policy is`);
    const label = e.label ?? c.default_label;
    if (label === undefined) throw invalid(path, `names classifier '${c.id}' without a label, and the classifier has no default_label`);
    if (!c.labels.includes(String(label))) throw invalid(`${path}.label`, `'${String(label)}' is not one of classifier '${c.id}''s labels (${c.labels.join(", ")})`);
  }
  return e as MatchExpr;
}

/** A policy document that is registered or tried must say its version (Lemonade's parser
 * requires it); the routing checks alone take one without. */
export function requireVersion(doc: { version?: unknown }): void {
  if (typeof doc.version !== "string" || !doc.version) {
    throw ApiError.of(E.invalidArgument, 'Invalid routing policy: collection.version must be a non-empty string (this server reads version "1")', "version");
  }
}

/** The keys of a policy document (Lemonade's parser refuses any other). */
const DOCUMENT_KEYS = ["version", "model_name", "recipe", "components", "models", "routing"];

/** A policy document that is tried (POST /v1/routing/validate) stands on its own: only the
 * document's keys, the router recipe, and its `components` listed (each name the policy uses must
 * be one of them). Answers a check that a name is declared. */
export function checkPolicyDocument(doc: Record<string, unknown>): (name: string) => boolean {
  for (const k of Object.keys(doc)) if (!DOCUMENT_KEYS.includes(k)) throw invalid("collection", `contains unknown key '${k}'`);
  requireVersion(doc);
  if (doc.recipe !== "collection.router") throw invalid("collection.recipe", "must be 'collection.router' for a routing policy");
  const components = doc.components;
  if (components === undefined) throw ApiError.of(E.invalidArgument, "Invalid routing policy: collection.router requires a non-empty components array", "components");
  const declared = strings(components, "collection.components", 1);
  return (name) => declared.includes(name);
}

/** Checks a `routing` block (and its document's `version`); `known(name)` says whether a model is
 * registered, `classifierModel(name)` (when given) whether it is a fixed-label classifier, and
 * `declared(name)` (when given) whether the document's `components` list it, as every model the
 * policy names must be. */
export function checkRouting(
  doc: { version?: unknown; routing?: unknown },
  known: (name: string) => boolean,
  classifierModel?: (name: string) => boolean,
  declared?: (name: string) => boolean,
): Routing {
  const mustDeclare = (name: string, path: string) => {
    if (declared && !declared(name)) throw invalid(path, `references component '${name}' that is not declared in collection.components`);
  };
  if (doc.version !== undefined && doc.version !== "1") {
    throw ApiError.of(E.invalidArgument, `Routing policy version ${JSON.stringify(doc.version)} is not supported: this server reads version "1"`, "version");
  }
  const r = doc.routing;
  if (!isObject(r)) throw invalid("routing", "must be an object with candidates, default_model and rules (or router)");
  for (const k of Object.keys(r)) if (!["candidates", "default_model", "router", "classifiers", "rules"].includes(k)) throw invalid(`routing.${k}`, "is not a routing key");
  const candidates = strings(r.candidates, "routing.candidates", 1);
  candidates.forEach((c, i) => {
    if (candidates.indexOf(c) !== i) throw invalid(`routing.candidates[${i}]`, `duplicates candidate '${c}'`);
    if (!known(c)) throw invalid("routing.candidates", `names '${c}', which is not a registered model`);
    mustDeclare(c, `routing.candidates[${i}]`);
  });
  if (typeof r.default_model !== "string" || !candidates.includes(r.default_model)) throw invalid("routing.default_model", "must be one of the candidates");
  if (r.router !== undefined) {
    if (r.rules !== undefined || r.classifiers !== undefined) throw invalid("routing.router", "cannot be combined with rules or classifiers");
    const s = r.router;
    if (!isObject(s) || s.type !== "llm" || typeof s.model !== "string" || !s.model || typeof s.prompt !== "string" || !s.prompt) {
      throw invalid("routing.router", 'must be {"type": "llm", "model", "prompt"}');
    }
    if (!known(s.model)) throw invalid("routing.router.model", `names '${s.model}', which is not a registered model`);
    mustDeclare(s.model, "routing.router.model");
    // The sugar's frozen v1 expansion, with Lemonade's ids (the rule id is the route header's
    // value): one llm classifier labelled with the candidates, an identity rule per candidate.
    const classifier: Classifier = { id: "__router", type: "llm", model: s.model, prompt: s.prompt, labels: candidates, on_error: "match_false" };
    return {
      candidates,
      default_model: r.default_model,
      classifiers: [classifier],
      rules: candidates.map((c, i) => ({ id: `__route_${i}`, match: { classifier: "__router", label: c, min_score: 1 }, route_to: c })),
    };
  }
  if (r.rules === undefined) throw invalid("routing", "needs rules, or a router");
  const classifiers = new Map<string, Classifier>();
  if (r.classifiers !== undefined) {
    if (!Array.isArray(r.classifiers)) throw invalid("routing.classifiers", "must be a list");
    r.classifiers.forEach((c: unknown, i: number) => {
      const path = `routing.classifiers[${i}]`;
      if (!isObject(c) || typeof c.id !== "string" || !c.id) throw invalid(path, "needs an id");
      if (classifiers.has(c.id)) throw invalid(`${path}.id`, `'${c.id}' is used twice`);
      if (!ALL_CLASSIFIERS.has(String(c.type))) throw invalid(`${path}.type`, `'${String(c.type)}' is not a classifier type`);
      if (!SUPPORTED_CLASSIFIERS.has(String(c.type))) throw invalid(`${path}.type`, `'${String(c.type)}' classifiers are not evaluated by this server yet (use llm, semantic_similarity or classifier, or deterministic conditions)`);
      if (typeof c.model !== "string" || !known(c.model)) throw invalid(`${path}.model`, "must name a registered model");
      mustDeclare(c.model, `${path}.model`);
      if (c.type === "classifier" && classifierModel && !classifierModel(c.model)) {
        throw invalid(`${path}.model`, `'${c.model}' is not a fixed-label classification model (an onnxruntime model labelled 'classification')`);
      }
      let labels: string[];
      let phrases: Record<string, string[]> | undefined;
      if (c.type === "semantic_similarity") {
        if (c.labels !== undefined) throw invalid(`${path}.labels`, "is not used by semantic_similarity: its labels are the reference_phrases' concepts");
        if (!isObject(c.reference_phrases) || !Object.keys(c.reference_phrases).length) throw invalid(`${path}.reference_phrases`, "must map at least one concept to its phrases");
        phrases = {};
        for (const [concept, list] of Object.entries(c.reference_phrases)) phrases[concept] = strings(list, `${path}.reference_phrases.${concept}`, 1);
        labels = Object.keys(phrases);
      } else if (c.type === "classifier") {
        // The model's own labels are in its files, which may not be downloaded yet: the policy
        // names those its rules use, so that a dangling one is refused here.
        labels = strings(c.labels, `${path}.labels`, 1);
      } else {
        if (typeof c.prompt !== "string" || !c.prompt) throw invalid(`${path}.prompt`, "must be a non-empty prompt");
        labels = strings(c.labels, `${path}.labels`, 1);
      }
      if (c.default_label !== undefined && !labels.includes(String(c.default_label))) throw invalid(`${path}.default_label`, "must be one of its labels");
      if (c.on_error !== undefined && c.on_error !== "match_true" && c.on_error !== "match_false") throw invalid(`${path}.on_error`, "must be match_true or match_false");
      classifiers.set(c.id, {
        id: c.id,
        type: c.type as Classifier["type"],
        model: c.model,
        prompt: typeof c.prompt === "string" ? c.prompt : "",
        labels,
        ...(phrases ? { reference_phrases: phrases } : {}),
        ...(c.default_label !== undefined ? { default_label: String(c.default_label) } : {}),
        on_error: (c.on_error as Classifier["on_error"]) ?? "match_false",
      });
    });
  }
  if (!Array.isArray(r.rules) || !r.rules.length) throw invalid("routing.rules", "must be a non-empty list");
  const ids = new Set<string>();
  const rules = r.rules.map((rule: unknown, i: number) => {
    const path = `routing.rules[${i}]`;
    if (!isObject(rule)) throw invalid(path, "must be an object with id, match and route_to");
    for (const k of Object.keys(rule)) if (!["id", "match", "route_to", "outputs"].includes(k)) throw invalid(`${path}.${k}`, "is not a rule key");
    if (typeof rule.id !== "string" || !/^[A-Za-z0-9._-]+$/.test(rule.id)) throw invalid(`${path}.id`, "must be letters, digits, '.', '_' or '-'");
    if (ids.has(rule.id)) throw invalid(`${path}.id`, `'${rule.id}' is used twice`);
    ids.add(rule.id);
    if (typeof rule.route_to !== "string" || !candidates.includes(rule.route_to)) throw invalid(`${path}.route_to`, "must be one of the candidates");
    if (rule.outputs !== undefined && !isObject(rule.outputs)) throw invalid(`${path}.outputs`, "must be an object");
    return { id: rule.id, match: checkExpr(rule.match, `${path}.match`, classifiers), route_to: rule.route_to, ...(rule.outputs ? { outputs: rule.outputs as Record<string, unknown> } : {}) };
  });
  return { candidates, default_model: r.default_model, classifiers: [...classifiers.values()], rules };
}
