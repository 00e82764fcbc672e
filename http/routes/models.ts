// /v1/models and per-model options; the views are protocols/models'.
import { basename } from "node:path";
import { models as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { listModels, modelObject, optionsView, saveOptions } from "../../protocols/models.ts";
import type { Binder } from "../bind.ts";
import { cachedJson } from "../view-cache.ts";

export function modelRoutes(bind: Binder, ctx: Pick<ServerContext, "aliases" | "catalog" | "config" | "library" | "options" | "recipeOptions" | "scheduler">): void {
  bind.http(spec.list, ({ query }) => {
    const showAll = query.show_all === true;
    const paths = query.include_paths === true;
    return cachedJson(ctx, `models:${showAll}:${paths}`, () => ({ object: "list", data: listModels(ctx, showAll, paths) }));
  });

  bind.http(spec.get, ({ params, query }) => {
    const model = ctx.catalog.get(params.id);
    return modelObject(ctx, model, query.include_paths === true, ctx.aliases.list().some((a) => a.alias === params.id) ? { id: params.id } : {});
  });

  bind.http(spec.files, ({ params, query }) => {
    const model = ctx.catalog.get(params.id);
    return {
      model_id: ctx.catalog.publicId(model),
      files: ctx.catalog.files(model).map((f) => ({
        name: f.path ? basename(f.path) : basename(model.checkpoints[f.role] ?? f.role),
        ...(query.include_paths === true && f.path ? { path: f.path } : {}),
        role: f.role,
        size_bytes: f.sizeBytes,
        exists: f.exists,
      })),
    };
  });

  // The options views answer by the id the URL named, as Lemonade's do.
  bind.http(spec.optionsGet, ({ params }) => optionsView(ctx, ctx.catalog.get(params.id), params.id.trim()));

  bind.http(spec.optionsPost, ({ params, body }) => saveOptions(ctx, ctx.catalog.get(params.id), body, params.id.trim()));

  bind.http(spec.optionsDelete, ({ params }) => {
    const model = ctx.catalog.get(params.id);
    ctx.recipeOptions.replace(model.id, {});
    return optionsView(ctx, model, params.id.trim());
  });
}
