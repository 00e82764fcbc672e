// Auto-tune as the API shows it: the archetype and profiles in use (`/v1/tuning/profiles`, and in
// `/v1/health` with the runtime monitor's suggestions), a model's tuning view (in its options),
// the overlay `lemonade tune` saves (`/v1/models/{id}/tuning`), and the Job Engine's `tune` op.
import type { CatalogModel } from "../models/catalog.ts";
import type { Tuning } from "../models/recipe-options.ts";
import type { ServerContext } from "../runtime/context.ts";
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import { RECIPE_SPECS } from "../spec/recipes.ts";
import type { ProfileDocumentT, TuningSaveRequest, TuningStatusT, TuningViewT } from "../spec/tuning.ts";
import { sweep, sweepSpace } from "../lib/sweep.ts";

/** A model whose recent requests run under this share of its tuned speed is flagged for a re-tune. */
export const RETUNE_BELOW = 0.5;
/** How many recent requests the monitor needs before it judges. */
const MIN_SAMPLES = 3;

export function tuningView(t: Tuning): TuningViewT {
  return {
    enabled: t.enabled,
    archetype: t.archetype,
    backend: t.backend,
    ...(t.profileSource ? { profile_source: t.profileSource } : {}),
    params: t.params,
    args: t.args.join(" "),
    ...(t.expectedTokensPerSecond !== undefined ? { expected_tokens_per_second: t.expectedTokensPerSecond } : {}),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The archetype, the profile document's version and age, and the loaded models running well below
 * the speed their tuned overlay measured. */
export function autoTuneStatus(ctx: Pick<ServerContext, "catalog" | "scheduler" | "stats" | "tuning">): TuningStatusT {
  const current = ctx.tuning.profiles.current();
  const retune: TuningStatusT["retune_suggested"] = [];
  for (const instance of ctx.scheduler.list()) {
    const expected = instance.spec.tuning?.expectedTokensPerSecond;
    const recent = ctx.stats.recentSpeeds(instance.model.id);
    if (expected === undefined || recent.length < MIN_SAMPLES) continue;
    const observed = median(recent);
    if (observed < expected * RETUNE_BELOW) {
      // By its listed id, which the hint's command takes as it is.
      const name = ctx.catalog.publicId(instance.model);
      retune.push({
        model_name: name,
        expected_tokens_per_second: expected,
        observed_tokens_per_second: Math.round(observed * 10) / 10,
        hint: `lemonade tune ${name}`,
      });
    }
  }
  return {
    enabled: ctx.tuning.enabled(),
    archetype: ctx.tuning.archetype(),
    profiles: { version: current.document.version, source: current.source, ...(current.ageMs !== undefined ? { age_s: Math.round(current.ageMs / 1000) } : {}) },
    retune_suggested: retune,
  };
}

export function profilesView(ctx: Pick<ServerContext, "catalog" | "scheduler" | "stats" | "tuning">): { status: TuningStatusT; document: ProfileDocumentT; profile?: ReturnType<ServerContext["tuning"]["profile"]> } {
  const profile = ctx.tuning.profile();
  return { status: autoTuneStatus(ctx), document: ctx.tuning.profiles.current().document, ...(profile ? { profile } : {}) };
}

/** The model's tuning as its next load would resolve it. */
function modelTuning(ctx: Pick<ServerContext, "catalog" | "options">, model: CatalogModel): { model_name: string; tuning: TuningViewT } {
  const t = ctx.options.resolution(model).tuning;
  if (!t) throw ApiError.of(E.modelNotSupported, `${ctx.catalog.publicId(model)}'s recipe (${model.recipe}) takes no tuning parameters`);
  return { model_name: ctx.catalog.publicId(model), tuning: tuningView(t) };
}

/** POST /v1/models/{id}/tuning: saves the overlay `lemonade tune` measured. */
export function saveTuning(ctx: Pick<ServerContext, "catalog" | "options" | "tuning">, model: CatalogModel, body: TuningSaveRequest): { model_name: string; tuning: TuningViewT } {
  if (!RECIPE_SPECS[model.recipe]?.tuning) throw ApiError.of(E.modelNotSupported, `${model.recipe} models take no tuning parameters`);
  try {
    ctx.tuning.local.set(model.id, {
      archetype: ctx.tuning.archetype().id,
      backend: `${model.recipe}:${body.backend}`,
      params: body.params,
      ...(body.tokens_per_second !== undefined ? { tokens_per_second: body.tokens_per_second } : {}),
      tuned_at: Date.now(),
    });
  } catch (err) {
    throw ApiError.of(E.optionsIoError, `Could not save ${ctx.catalog.publicId(model)}'s tuning: ${(err as Error).message}`);
  }
  return modelTuning(ctx, model);
}

/** DELETE /v1/models/{id}/tuning. */
export function deleteTuning(ctx: Pick<ServerContext, "catalog" | "options" | "tuning">, model: CatalogModel): { model_name: string; tuning: TuningViewT } {
  if (!RECIPE_SPECS[model.recipe]?.tuning) throw ApiError.of(E.modelNotSupported, `${model.recipe} models take no tuning parameters`);
  try {
    ctx.tuning.local.set(model.id, null);
  } catch (err) {
    throw ApiError.of(E.optionsIoError, `Could not remove ${ctx.catalog.publicId(model)}'s tuning: ${(err as Error).message}`);
  }
  return modelTuning(ctx, model);
}

/** How the `tune` job op reaches the model: a load with the candidate, and one chat request. */
export interface TuneIo {
  load(body: Record<string, unknown>): Promise<unknown>;
  chat(request: Record<string, unknown>): Promise<unknown>;
}

const num = (v: unknown, fallback: number) => (typeof v === "number" && Number.isInteger(v) && v >= 1 ? v : fallback);

/** The generation speed and prompt time an engine reported in a chat answer's `timings`. */
function timingsOf(answer: unknown): { tokensPerSecond: number; ttftMs: number } {
  const t = typeof answer === "object" && answer !== null ? (answer as { timings?: { predicted_per_second?: unknown; prompt_ms?: unknown } }).timings : undefined;
  if (typeof t?.predicted_per_second !== "number" || typeof t.prompt_ms !== "number") throw new Error("the engine reports no timings; tune measures llama.cpp models");
  return { tokensPerSecond: t.predicted_per_second, ttftMs: t.prompt_ms };
}

/** The Job Engine's `tune` op: `lemonade tune`'s sweep, run in the server. `params`: `model`,
 * `budget_s` (300), `tokens` (32), `runs` (2), `save` (true). */
export async function tuneOp(
  ctx: Pick<ServerContext, "backends" | "catalog" | "options" | "tuning">,
  params: Record<string, unknown>,
  signal: AbortSignal,
  io: TuneIo,
  logicalThreads: number,
) {
  if (typeof params.model !== "string" || !params.model) throw new Error("the tune op needs params.model");
  const model = ctx.catalog.get(params.model);
  const resolution = ctx.options.resolution(model);
  const spec = RECIPE_SPECS[model.recipe];
  if (!resolution.tuning || !spec?.backendOption) throw new Error(`${ctx.catalog.publicId(model)} (${model.recipe}) takes no tuning parameters`);
  const budgetMs = num(params.budget_s, 300) * 1000;
  const tokens = num(params.tokens, 32);
  const runs = num(params.runs, 2);
  const started = Date.now();
  // The user's own choices are kept, not swept.
  const fixed = Object.entries(resolution.tuning.params).filter(([, p]) => p.source === "saved" || p.source === "registry" || p.source === "config").map(([k]) => k);
  const space = Object.fromEntries(Object.entries(sweepSpace(ctx.tuning.archetype(), logicalThreads)).filter(([k]) => !fixed.includes(k)));
  const backendSource = resolution.sources[spec.backendOption];
  const installed = Object.entries(ctx.backends.statuses()[model.recipe]?.backends ?? {}).filter(([, b]) => b.state === "installed").map(([n]) => n);
  const start = Object.fromEntries(Object.entries(resolution.tuning.params).filter(([k]) => !fixed.includes(k)).map(([k, p]) => [k, p.value]));
  const result = await sweep({
    start,
    space,
    backends: backendSource === "default" || backendSource === "profile" ? installed : [],
    async measure(candidate, backend) {
      await io.load({ model_name: model.id, tuning: candidate, ...(backend ? { [spec.backendOption!]: backend } : {}) });
      const measured: { tokensPerSecond: number; ttftMs: number }[] = [];
      for (let i = 0; i < 1 + runs; i++) {
        const answer = await io.chat({ model: model.id, messages: [{ role: "user", content: `Benchmark run ${i}: write a long story about a lemon.` }], max_tokens: tokens, ignore_eos: true, cache_prompt: false });
        if (i > 0) measured.push(timingsOf(answer));
      }
      return { tokensPerSecond: median(measured.map((m) => m.tokensPerSecond)), ttftMs: median(measured.map((m) => m.ttftMs)) };
    },
    within: () => !signal.aborted && Date.now() - started < budgetMs,
  });
  if (result.baseline.tokensPerSecond === null) throw new Error(`${ctx.catalog.publicId(model)} does not run as it is: ${result.baseline.error}`);
  const backend = result.best.backend ?? ctx.options.resolution(model, { tuning: result.best.params }).tuning?.backend ?? resolution.tuning.backend;
  const save = params.save !== false && !signal.aborted;
  if (save) {
    saveTuning(ctx, model, { backend, params: result.best.params, tokens_per_second: Math.round(result.best.tokensPerSecond! * 10) / 10 });
    await io.load({ model_name: model.id });
  }
  return {
    model: model.id,
    archetype: ctx.tuning.archetype().id,
    before_tokens_per_second: result.baseline.tokensPerSecond,
    after_tokens_per_second: result.best.tokensPerSecond,
    best: { backend, params: result.best.params },
    saved: save,
    budget_exhausted: result.exhausted,
    trials: result.trials.map((t) => ({ ...(t.backend ? { backend: t.backend } : {}), params: t.params, tokens_per_second: t.tokensPerSecond, ttft_ms: t.ttftMs, ...(t.error ? { error: t.error } : {}) })),
  };
}
