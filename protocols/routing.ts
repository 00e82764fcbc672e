// collection.router on the OpenAI routes: the policy picks a candidate for a chat or completions
// request (runtime/router-engine.ts), the request goes to it as it would directly, and the answer
// says what was decided: the `x-lemonade-route` header (the rule, or `default`) and, with
// `route_trace: true`, an `x_lemonade_route` object on the body or the first stream event.
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import { checkPolicyDocument, checkRouting, type Classifier, type Routing } from "../models/routing-policy.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { ServerContext } from "../runtime/context.ts";
import type { StreamRule } from "../runtime/stream-pump.ts";
import type { TargetKind } from "../runtime/targets.ts";
import { decide, routeInput, type Decision } from "../runtime/router-engine.ts";
import { embeddingVectors, engineAnswer, mappedStream, needsEmbedder, needsLlm, openaiFramer } from "./openai.ts";
import { classifyText } from "./classify.ts";
import { jsonItems, type Json } from "../lib/json.ts";
import type { ChatCompletionRequest, CompletionRequest, ResponsesRequest } from "../spec/openai.ts";
import { ROUTING_POLICY_MESSAGE, type RoutingValidateRequest, type RoutingValidateResponse } from "../spec/downloads.ts";

export const ROUTE_HEADER = "x-lemonade-route";

/** An `llm` classifier: the model is asked to answer one of the labels; that label scores 1. */
async function llmClassify(ctx: Pick<ServerContext, "proxy">, c: Classifier, text: string, signal: AbortSignal) {
  const res = await ctx.proxy.toModel({
    model: c.model,
    path: "/v1/chat/completions",
    body: {
      messages: [
        { role: "system", content: `${c.prompt}\nAnswer with exactly one of: ${c.labels.join(", ")}.` },
        { role: "user", content: text },
      ],
      max_tokens: 32,
      temperature: 0,
      stream: false,
    },
    check: needsLlm(),
    signal,
    endpoint: "routing",
    generation: false,
    helper: true,
  });
  const answer = String(engineAnswer(await res.json()).choices?.[0]?.message?.content ?? "").trim();
  // The longest label first, so that `big` does not win over `big-coder` in "big-coder".
  const label = [...c.labels].sort((a, b) => b.length - a.length).find((l) => answer.toLowerCase().includes(l.toLowerCase()));
  if (!label) throw new Error(`the router model answered ${JSON.stringify(answer.slice(0, 80))}, not a label`);
  return { scores: Object.fromEntries(c.labels.map((l) => [l, l === label ? 1 : 0])), rationale: answer.slice(0, 200) };
}

/** Reference phrases' embeddings, computed once per classifier and model. */
const phraseVectors = new Map<string, Promise<Record<string, number[][]>>>();

async function embed(ctx: Pick<ServerContext, "proxy">, model: string, input: string[], signal: AbortSignal): Promise<number[][]> {
  const res = await ctx.proxy.toModel({ model, path: "/v1/embeddings", body: { input, encoding_format: "float" }, check: needsEmbedder, signal, endpoint: "routing", generation: false, helper: true });
  return embeddingVectors(await res.json());
}

const cosine = (a: number[], b: number[]) => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * (b[i] ?? 0);
    na += a[i]! * a[i]!;
    nb += (b[i] ?? 0) ** 2;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
};

/** A `semantic_similarity` classifier: each concept scores the best cosine of the input against its
 * phrases (negative similarity counts as 0). */
async function semanticClassify(ctx: Pick<ServerContext, "proxy">, c: Classifier, text: string, signal: AbortSignal) {
  const key = `${c.id}\u0000${c.model}\u0000${JSON.stringify(c.reference_phrases)}`;
  let vectors = phraseVectors.get(key);
  if (!vectors) {
    const concepts = Object.entries(c.reference_phrases ?? {});
    vectors = embed(ctx, c.model, concepts.flatMap(([, p]) => p), signal).then((flat) => {
      const out: Record<string, number[][]> = {};
      let i = 0;
      for (const [concept, phrases] of concepts) out[concept] = phrases.map(() => flat[i++]!);
      return out;
    });
    phraseVectors.set(key, vectors);
    vectors.catch(() => phraseVectors.delete(key));
  }
  const [input] = await embed(ctx, c.model, [text], signal);
  const scores: Record<string, number> = {};
  for (const [concept, list] of Object.entries(await vectors)) scores[concept] = Math.max(0, ...list.map((v) => cosine(input!, v)));
  return { scores };
}

/** A `classifier` classifier: the model's label scores (/v1/classify); a label the policy names
 * that the model does not output scores 0. */
async function onnxClassify(ctx: Pick<ServerContext, "catalog" | "proxy" | "scheduler">, c: Classifier, text: string, signal: AbortSignal) {
  const { labels } = await classifyText(ctx, { model: c.model, input: text }, signal, true);
  return { scores: Object.fromEntries(c.labels.map((l) => [l, labels[l] ?? 0])) };
}

/** How a policy's classifiers are run: each kind on its model, as the server serves it. */
function classifierRunner(ctx: Pick<ServerContext, "catalog" | "proxy" | "scheduler">, signal: AbortSignal) {
  return (c: Classifier, text: string) =>
    c.type === "semantic_similarity" ? semanticClassify(ctx, c, text, signal) : c.type === "classifier" ? onnxClassify(ctx, c, text, signal) : llmClassify(ctx, c, text, signal);
}

/** POST /v1/routing/validate: with `policy` (inline, its names taken as given, or a registered
 * router's name), the decision it makes for the test request, its classifiers run as a routed
 * request runs them (one that fails, fails open); without, the body checked as a policy document.
 * An inline document stands alone, as Lemonade's form sends it: its names taken as given, each one
 * the policy uses among its `components`. */
export async function validateRouting(ctx: Pick<ServerContext, "catalog" | "library" | "proxy" | "scheduler">, body: RoutingValidateRequest, signal: AbortSignal): Promise<RoutingValidateResponse> {
  if (body.policy === undefined) {
    if (body.routing === undefined) throw ApiError.of(E.invalidArgument, ROUTING_POLICY_MESSAGE, "policy");
    return { valid: true, routing: ctx.library.validateRouting(body) };
  }
  let doc: Json;
  let policy: Routing;
  if (typeof body.policy === "string") {
    const named = ctx.catalog.find(body.policy);
    if (!named?.router) throw ApiError.of(E.invalidArgument, `'policy' names '${body.policy.slice(0, 200)}', which is not a registered collection.router model`, "policy");
    doc = { recipe: named.recipe, version: named.router.version, components: named.router.components, routing: named.router.routing };
    policy = named.router.policy;
  } else {
    doc = body.policy;
    policy = checkRouting(doc, () => true, undefined, checkPolicyDocument(doc));
  }
  const decision = await decide(policy, { text: body.prompt ?? "", metadata: body.metadata ?? {}, hasImages: body.has_images === true, hasTools: body.has_tools === true }, classifierRunner(ctx, signal));
  return { decision: { ...decision, trace: decision.trace.map((t) => ({ ...t })) }, normalized_policy: { ...doc, routing: policy } };
}

/** A conversation's identity for counting route switches: its system prompt and first user message. */
function conversationKey(body: Json): string {
  const messages = jsonItems(body.messages);
  const first = (role: string) => JSON.stringify(messages.find((m) => m.role === role)?.content ?? "");
  return new Bun.CryptoHasher("sha256").update(`${first("system")}\n${first("user")}`).digest("hex");
}

/** collection.router models: each request is decided on, then sent to the chosen candidate's own
 * target with the answer marked; a router has nothing of its own to load. */
export function routerKind(ctx: Pick<ServerContext, "catalog" | "logger" | "proxy" | "scheduler" | "stats">): TargetKind {
  return {
    claims: (model) => model.router !== undefined,
    target: (model) => ({
      speaks: "openai",
      load: async ({ name }) => ({ message: `${name} is a router: its candidates load as requests are routed to them`, checkpoint: "", tookOptions: false }),
      async forward(req) {
        if (!req.client) throw ApiError.of(E.routerChatOnly, `Model ${ctx.catalog.publicId(model)} is a collection.router, which routes chat, text completions and responses only`, "model");
        const { decision, trace } = await route(ctx, model, req.client, req.signal);
        const { reshape, stream } = req;
        const res = await ctx.proxy.toModel({
          ...req,
          model: decision.route_to,
          client: undefined,
          ...(trace
            ? {
                reshape: (answer) => ({ ...(reshape ? reshape(answer) : answer), x_lemonade_route: trace }),
                stream: stream && tracedStream(stream, trace),
              }
            : {}),
        });
        res.headers.set(ROUTE_HEADER, decision.matched_rule || "default");
        return res;
      },
    }),
  };
}

/** An OpenAI stream whose first JSON event carries the route trace: a passed-through chat or
 * completions stream's, or the first event a translated one (Responses) sends. Other protocols'
 * streams keep their events (the header still says where the request went). */
function tracedStream(rule: StreamRule, trace: Json): StreamRule {
  if (rule.framer !== openaiFramer) return rule;
  const translate = rule.translate?.bind(rule);
  if (!translate) {
    return mappedStream(() => {
      let first = true;
      return (ev) => {
        if (!first) return ev;
        first = false;
        return { ...ev, x_lemonade_route: trace };
      };
    });
  }
  return {
    framer: rule.framer,
    translate: () => {
      const inner = translate();
      let attached = false;
      return {
        event(data) {
          const out = inner.event(data);
          if (attached) return out;
          // The first `data: {...}` line of what the translator sends for this event.
          const marked = out.replace(/^data: (\{.*\})$/m, (_, json: string) => `data: ${JSON.stringify({ ...JSON.parse(json), x_lemonade_route: trace })}`);
          attached = marked !== out;
          return marked;
        },
        end: () => inner.end(),
      };
    },
  };
}

/** The decision for a request naming a router, and the trace to add when the client asked for it. */
async function route(
  ctx: Pick<ServerContext, "catalog" | "logger" | "proxy" | "scheduler" | "stats">,
  model: CatalogModel,
  body: ChatCompletionRequest | CompletionRequest | ResponsesRequest,
  signal: AbortSignal,
): Promise<{ decision: Decision; trace: Json | null }> {
  const policy = model.router!.policy;
  for (const candidate of policy.candidates) {
    if (!ctx.catalog.find(candidate)) throw ApiError.of(E.modelNotFound, `Router ${ctx.catalog.publicId(model)} routes to ${candidate}, which is no longer registered`);
  }
  const decision = await decide(policy, routeInput(body), classifierRunner(ctx, signal));
  ctx.stats.recordRoute(conversationKey(body), decision.route_to);
  ctx.logger.info("Router", `${ctx.catalog.publicId(model)} routed to ${decision.route_to} (${decision.matched_rule || "default"})`);
  // `route_trace` is Lemonade's, asked for in a field the OpenAI definitions do not name.
  const { route_trace }: Json = body;
  if (route_trace !== true) return { decision, trace: null };
  return { decision, trace: { version: decision.version, route_to: decision.route_to, matched_rule: decision.matched_rule, default_used: decision.default_used, outputs: decision.outputs, trace: decision.trace } };
}
