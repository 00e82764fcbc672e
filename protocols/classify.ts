// /v1/classify (lemonade.md § classify): the request checked before any load, the model the
// client names (or the classifier already loaded), and the onnxruntime engine's label scores
// answered as `{object: "classification", model, labels}`. The router's `classifier`
// conditions (protocols/routing.ts) call classifyText.
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import { serves, sharedEnginePath } from "../spec/recipes.ts";
import type { ClassifyRequest, ClassifyResponse } from "../spec/classify.ts";
import type { ModelCheck } from "../runtime/request.ts";
import type { ServerContext } from "../runtime/context.ts";

export const needsClassifier: ModelCheck = (model, named) => {
  if (model.type !== "classification" || !serves(model.recipe, "classify")) {
    return ApiError.of(E.invalidArgument, `Model ${named(model)} is not a text classifier: /v1/classify serves onnxruntime models labelled 'classification'`, "model");
  }
  if (model.labels.includes("zero-shot")) {
    return ApiError.of(E.invalidArgument, `Model ${named(model)} is a zero-shot classifier, whose labels come with each request; this server serves fixed-label classifiers only`, "model");
  }
  return null;
};

/** What a classification runs on: the request's fields, checked, `text` read as `input`. */
export interface Classification {
  model?: string;
  input: string;
  topK?: number;
}

/** The request's fields, or the 400 that names what the schema cannot say. */
export function parseClassifyBody(body: ClassifyRequest): Classification {
  if (body.model === "") throw ApiError.of(E.invalidArgument, "'model' must be a non-empty string", "model");
  const input = body.input ?? body.text;
  if (input === undefined) throw ApiError.of(E.missingArgument, "'input' (or its alias 'text') is required: the text to classify", "input");
  return { model: body.model, input, topK: body.top_k };
}

/** The model named, else the classifier loaded (the most recently used one when several are). */
function modelName(ctx: Pick<ServerContext, "scheduler">, named: string | undefined): string {
  if (named) return named;
  const loaded = ctx.scheduler
    .list()
    .filter((s) => s.model.type === "classification")
    // A standard model before a router's helper (multi-model guide), then the most recently used.
    .sort((a, b) => Number(a.residency !== "standard") - Number(b.residency !== "standard") || b.lastUse - a.lastUse);
  if (!loaded.length) throw ApiError.of(E.missingArgument, "'model' is required when no classification model is loaded", "model");
  return loaded[0]!.model.id;
}

/** Label scores, highest first, from the classifier (loaded when it is not), through the proxy:
 * its queue, its watch for a hung engine and its one replay after a crash. `helper`: for a
 * router's policy, so the model is held as a routing helper. */
export async function classifyText(
  ctx: Pick<ServerContext, "catalog" | "proxy" | "scheduler">,
  req: Classification,
  signal: AbortSignal,
  helper = false,
): Promise<{ model: string; labels: Record<string, number> }> {
  const name = modelName(ctx, req.model);
  const res = await ctx.proxy.toModel({
    model: name,
    path: sharedEnginePath("classify"),
    body: { input: req.input, ...(req.topK ? { top_k: req.topK } : {}) },
    check: needsClassifier,
    signal,
    endpoint: "classify",
    generation: false,
    helper,
  });
  const model = ctx.catalog.find(name);
  return { model: model ? ctx.catalog.publicId(model) : name, labels: (await res.json()).labels };
}

/** POST /v1/classify. */
export async function classify(ctx: Pick<ServerContext, "catalog" | "proxy" | "scheduler">, body: ClassifyRequest, signal: AbortSignal): Promise<ClassifyResponse> {
  const req = parseClassifyBody(body);
  const { model, labels } = await classifyText(ctx, req, signal);
  return { object: "classification", model: req.model ?? model, labels };
}
