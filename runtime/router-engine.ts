// The routing engine: a request's text and metadata against a normalised policy
// (models/routing-policy.ts), rules in order, first match wins, else `default_model` (fail-open).
// Classifiers are evaluated at most once per request, through the `classify` function it is handed.
import type { Classifier, MatchExpr, Routing } from "../models/routing-policy.ts";
import { isJson, jsonItems, type Json } from "../lib/json.ts";

export interface RouteInput {
  /** The text conditions read: the last user message. */
  text: string;
  metadata: Record<string, string>;
  hasTools: boolean;
  hasImages: boolean;
}

export interface TraceEntry {
  condition: string;
  result: boolean;
  score?: number;
  label?: string;
  rationale?: string;
}

export interface Decision {
  version: "1";
  route_to: string;
  matched_rule: string;
  default_used: boolean;
  outputs: Record<string, unknown>;
  trace: TraceEntry[];
}

/** A classifier's label scores for the input (and its reasoning), or throws when it cannot run. */
export type Classify = (classifier: Classifier, text: string) => Promise<{ scores: Record<string, number>; rationale?: string }>;

/** Evaluation reads at most this much of the input (the schema's bound on regex work). */
const MAX_INPUT_BYTES = 1024 * 1024;

const bytes = (s: string) => new TextEncoder().encode(s).length;

/** The routing inputs of an OpenAI chat, completions or Responses body (whose `input` is a
 * string or items: messages, with `input_text` and `input_image` parts). */
export function routeInput(body: Json): RouteInput {
  const textOf = (content: unknown): string =>
    typeof content === "string"
      ? content
      : Array.isArray(content)
        ? content.map((p: unknown) => (isJson(p) && (p.type === "text" || p.type === "input_text") ? String(p.text ?? "") : "")).join(" ")
        : "";
  const messages = typeof body.input === "string" ? [{ role: "user", content: body.input }] : [...jsonItems(body.messages), ...jsonItems(body.input)];
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  const text = lastUser ? textOf(lastUser.content) : typeof body.prompt === "string" ? body.prompt : "";
  const metadata: Record<string, string> = {};
  if (isJson(body.metadata)) for (const [k, v] of Object.entries(body.metadata)) if (typeof v === "string") metadata[k] = v;
  const hasImages = messages.some((m) => jsonItems(m.content).some((p) => p.type === "image_url" || p.type === "input_image"));
  return { text: text.slice(0, MAX_INPUT_BYTES), metadata, hasTools: Array.isArray(body.tools) && body.tools.length > 0, hasImages };
}

/** The metadata value as a token set: comma-separated, trimmed; empty means absent. */
const tokens = (v: string | undefined) => (v ?? "").split(",").map((t) => t.trim()).filter(Boolean);

export async function decide(policy: Routing, input: RouteInput, classify: Classify): Promise<Decision> {
  const trace: TraceEntry[] = [];
  const results = new Map<string, Promise<{ scores: Record<string, number>; rationale?: string } | null>>();
  const classifierOf = (id: string) => policy.classifiers.find((c) => c.id === id)!;
  const scores = (c: Classifier) => {
    let r = results.get(c.id);
    if (!r) {
      r = classify(c, input.text).catch(() => null);
      results.set(c.id, r);
    }
    return r;
  };
  const lower = input.text.toLowerCase();

  const leaf = (condition: string, result: boolean) => {
    trace.push({ condition, result });
    return result;
  };

  const evaluate = async (e: MatchExpr): Promise<boolean> => {
    const checks: Promise<boolean>[] = [];
    if (e.any) checks.push((async () => { for (const x of e.any!) if (await evaluate(x)) return true; return false; })());
    if (e.all) checks.push((async () => { for (const x of e.all!) if (!(await evaluate(x))) return false; return true; })());
    if (e.not) checks.push(evaluate(e.not).then((v) => !v));
    if (e.keywords_any) checks.push(Promise.resolve(leaf("keywords_any", e.keywords_any.some((k) => lower.includes(k.toLowerCase())))));
    if (e.keywords_all) checks.push(Promise.resolve(leaf("keywords_all", e.keywords_all.every((k) => lower.includes(k.toLowerCase())))));
    if (e.regex !== undefined) checks.push(Promise.resolve(leaf("regex", new RegExp(e.regex).test(input.text))));
    if (e.min_chars !== undefined) checks.push(Promise.resolve(leaf("min_chars", bytes(input.text) >= e.min_chars)));
    if (e.max_chars !== undefined) checks.push(Promise.resolve(leaf("max_chars", bytes(input.text) <= e.max_chars)));
    if (e.has_tools !== undefined) checks.push(Promise.resolve(leaf("has_tools", input.hasTools === e.has_tools)));
    if (e.has_images !== undefined) checks.push(Promise.resolve(leaf("has_images", input.hasImages === e.has_images)));
    if (e.metadata) {
      const m = e.metadata;
      const set = tokens(input.metadata[m.key]);
      const result = m.exists !== undefined ? (set.length > 0) === m.exists : m.equals !== undefined ? set.length > 0 && input.metadata[m.key] === m.equals : set.some((t) => m.any!.includes(t));
      checks.push(Promise.resolve(leaf(`metadata:${m.key}`, result)));
    }
    if (e.classifier !== undefined) {
      const c = classifierOf(e.classifier);
      const label = e.label ?? c.default_label!;
      checks.push(
        scores(c).then((r) => {
          if (!r) {
            const result = c.on_error === "match_true";
            trace.push({ condition: `classifier:${c.id}`, label, result, rationale: "the classifier failed" });
            return result;
          }
          const score = r.scores[label] ?? 0;
          // No band given: score >= 0.5 (the frozen v1 default).
          const min = e.min_score ?? (e.max_score === undefined ? 0.5 : 0);
          const result = score >= min && score <= (e.max_score ?? 1);
          trace.push({ condition: `classifier:${c.id}`, label, score, result, ...(r.rationale ? { rationale: r.rationale } : {}) });
          return result;
        }),
      );
    }
    // Every condition of one node must hold (a node with several leaves is their conjunction).
    for (const c of checks) if (!(await c)) return false;
    return true;
  };

  for (const rule of policy.rules) {
    if (await evaluate(rule.match)) {
      return { version: "1", route_to: rule.route_to, matched_rule: rule.id, default_used: false, outputs: rule.outputs ?? {}, trace };
    }
  }
  return { version: "1", route_to: policy.default_model, matched_rule: "", default_used: true, outputs: {}, trace };
}
