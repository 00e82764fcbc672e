// /v1/models and per-model options.
import type { Elysia } from "elysia";
import { basename } from "node:path";
import { bind } from "./bind.ts";
import { models as spec } from "../spec/index.ts";
import { listModels, mergeSavedOptions, modelObject, optionsView } from "../server/model-views.ts";
import type { ServerContext } from "../server/context.ts";

export function modelRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  bind(app, spec.list, ({ query }) => ({
    object: "list",
    data: listModels(ctx, query.show_all === true, query.include_paths === true),
  }));

  bind(app, spec.get, ({ params, query }) => {
    const model = ctx.catalog.get(params.id);
    return modelObject(ctx, model, query.include_paths === true, ctx.aliases.list().some((a) => a.alias === params.id) ? params.id : model.id);
  });

  bind(app, spec.files, ({ params, query }) => {
    const model = ctx.catalog.get(params.id);
    return {
      model_id: model.id,
      files: ctx.catalog.files(model).map((f) => ({
        name: f.path ? basename(f.path) : basename(model.checkpoints[f.role] ?? f.role),
        ...(query.include_paths === true && f.path ? { path: f.path } : {}),
        role: f.role,
        size_bytes: f.sizeBytes,
        exists: f.exists,
      })),
    };
  });

  bind(app, spec.optionsGet, ({ params }) => optionsView(ctx, ctx.catalog.get(params.id)));

  bind(app, spec.optionsPost, ({ params, body }) => {
    const model = ctx.catalog.get(params.id);
    const next = mergeSavedOptions(model, ctx.recipeOptions.saved(model.id), body);
    if (body.dry_run === true) return optionsView(ctx, model, next);
    ctx.recipeOptions.replace(model.id, next);
    return optionsView(ctx, model);
  });

  bind(app, spec.optionsDelete, ({ params }) => {
    const model = ctx.catalog.get(params.id);
    ctx.recipeOptions.replace(model.id, {});
    return optionsView(ctx, model);
  });
}
