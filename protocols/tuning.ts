// Auto-tune as the API shows it: the archetype and profiles in use (`/v1/tuning/profiles`, and in
// `/v1/health` with the runtime monitor's suggestions), a model's tuning view (in its options),
// and the overlay `lemonade tune` saves (`/v1/models/{id}/tuning`).
import type { CatalogModel } from "../models/catalog.ts";
import type { Tuning } from "../models/recipe-options.ts";
import type { ServerContext } from "../runtime/context.ts";
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import { RECIPE_SPECS } from "../spec/recipes.ts";
import type { ProfileDocumentT, TuningSaveRequest, TuningStatusT, TuningViewT } from "../spec/tuning.ts";

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
export function autoTuneStatus(ctx: Pick<ServerContext, "scheduler" | "stats" | "tuning">): TuningStatusT {
  const current = ctx.tuning.profiles.current();
  const retune: TuningStatusT["retune_suggested"] = [];
  for (const instance of ctx.scheduler.list()) {
    const expected = instance.spec.tuning?.expectedTokensPerSecond;
    const recent = ctx.stats.recentSpeeds(instance.model.id);
    if (expected === undefined || recent.length < MIN_SAMPLES) continue;
    const observed = median(recent);
    if (observed < expected * RETUNE_BELOW) {
      retune.push({
        model_name: instance.model.id,
        expected_tokens_per_second: expected,
        observed_tokens_per_second: Math.round(observed * 10) / 10,
        hint: `lemonade tune ${instance.model.id}`,
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

export function profilesView(ctx: Pick<ServerContext, "scheduler" | "stats" | "tuning">): { status: TuningStatusT; document: ProfileDocumentT; profile?: ReturnType<ServerContext["tuning"]["profile"]> } {
  const profile = ctx.tuning.profile();
  return { status: autoTuneStatus(ctx), document: ctx.tuning.profiles.current().document, ...(profile ? { profile } : {}) };
}

/** The model's tuning as its next load would resolve it. */
function modelTuning(ctx: Pick<ServerContext, "options">, model: CatalogModel): { model_name: string; tuning: TuningViewT } {
  const t = ctx.options.resolution(model).tuning;
  if (!t) throw ApiError.of(E.modelNotSupported, `${model.id}'s recipe (${model.recipe}) takes no tuning parameters`);
  return { model_name: model.id, tuning: tuningView(t) };
}

/** POST /v1/models/{id}/tuning: saves the overlay `lemonade tune` measured. */
export function saveTuning(ctx: Pick<ServerContext, "options" | "tuning">, model: CatalogModel, body: TuningSaveRequest): { model_name: string; tuning: TuningViewT } {
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
    throw ApiError.of(E.optionsIoError, `Could not save ${model.id}'s tuning: ${(err as Error).message}`);
  }
  return modelTuning(ctx, model);
}

/** DELETE /v1/models/{id}/tuning. */
export function deleteTuning(ctx: Pick<ServerContext, "options" | "tuning">, model: CatalogModel): { model_name: string; tuning: TuningViewT } {
  if (!RECIPE_SPECS[model.recipe]?.tuning) throw ApiError.of(E.modelNotSupported, `${model.recipe} models take no tuning parameters`);
  try {
    ctx.tuning.local.set(model.id, null);
  } catch (err) {
    throw ApiError.of(E.optionsIoError, `Could not remove ${model.id}'s tuning: ${(err as Error).message}`);
  }
  return modelTuning(ctx, model);
}
