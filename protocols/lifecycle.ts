// A model's lifecycle as Lemonade's routes ask for it: found in a registry, registered, pulled
// (at once, as an event stream, or as a server-owned job), loaded, unloaded and deleted. Each
// route of http/routes/lifecycle.ts and http/routes/downloads.ts is one call of a function here.
import type {
  CheckUpdatesResponse,
  DeleteModelResponse,
  DownloadsControlRequest,
  DownloadsControlResponse,
  PullRequest,
  PullResponse,
  RegisterRequest,
  RegisterResponse,
  RegistrySearchQuery,
  RegistrySearchResponse,
} from "../spec/downloads.ts";
import { load as loadSpec, type LoadRequest, type LoadResponse, type UnloadResponse } from "../spec/lifecycle.ts";
import { E } from "../spec/errors.ts";
import { ApiError } from "../lib/api-error.ts";
import { clip } from "../lib/scrub.ts";
import { forRequestedModel } from "../runtime/model-error.ts";
import { sseResponse } from "../lib/sse.ts";
import type { ServerContext } from "../runtime/context.ts";
import type { CatalogModel } from "../models/catalog.ts";
import { DownloadStopped, type Progress } from "../models/downloads.ts";
import { saveLoadOptions, shownCheckpoints } from "./models.ts";
import { replacingSaved } from "../models/recipe-options.ts";

type LoadContext = Pick<ServerContext, "aliases" | "catalog" | "config" | "library" | "proxy" | "recipeOptions" | "scheduler">;

/** The fields the load body declares: a field it does not is ignored. */
const LOAD_FIELDS = new Set(Object.keys(loadSpec.body.properties));

/** Recipe option keys the load request carries (every declared field but the load's own). */
function requestOptions(body: LoadRequest): Record<string, unknown> {
  const { model_name: _name, pinned: _pinned, save_options: _save, ...rest } = body;
  return Object.fromEntries(Object.entries(rest).filter(([key]) => LOAD_FIELDS.has(key)));
}

/** POST /v1/load: the model's target (its engine, a provider, a collection) loads it its own way.
 * The answer names the model as the request gave it (an alias's target), as Lemonade does; so does
 * an error naming it (the alias itself). */
export async function load(ctx: LoadContext, body: LoadRequest): Promise<LoadResponse> {
  const model = ctx.catalog.get(body.model_name);
  const options = requestOptions(body);
  const name = ctx.aliases.resolve(body.model_name);
  try {
    const save = body.save_options === true;
    const loaded = await ctx.proxy.targets.of(model).load({ name, options: save ? replacingSaved(model.recipe, options) : options, pinned: body.pinned });
    // Saved once the load took them, so a refused option is never saved.
    if (loaded.tookOptions && save) saveLoadOptions(ctx, model, { ...options, ...(body.pinned !== undefined ? { pinned: body.pinned } : {}) });
    return { status: "success", message: loaded.message, model_name: name, checkpoint: loaded.checkpoint ?? shownCheckpoints(ctx, model, false).main ?? "", recipe: model.recipe };
  } catch (err) {
    throw forRequestedModel(err, body.model_name);
  }
}

/** POST /v1/unload: the model named (the answer names it as the request did, an alias by its
 * target, as Lemonade does), or every model when none is. */
export async function unload(ctx: Pick<ServerContext, "aliases" | "catalog" | "proxy" | "scheduler">, given: string | undefined): Promise<UnloadResponse> {
  if (given === undefined) {
    await ctx.scheduler.unloadWhere();
    ctx.proxy.unloadCloud();
    return { status: "success", message: "All models unloaded successfully" };
  }
  const name = ctx.aliases.resolve(given);
  const done: UnloadResponse = { status: "success", message: "Model unloaded successfully", model_name: name };
  const model = ctx.catalog.find(name);
  // A loaded cloud model is unloaded by its name even once its provider no longer lists it.
  if (ctx.proxy.unloadCloud(model?.id ?? name)) return done;
  if (!model || !(await ctx.scheduler.unload(model.id))) throw ApiError.of(E.modelNotLoaded, `Model not loaded: ${clip(name)}`);
  return done;
}

/** POST /v1/pull: installed before the answer, as Server-Sent Events, or (`subscribe: false`)
 * as a server-owned job answered with its first snapshot. Answers, messages and jobs name the
 * model as the request did, as Lemonade names them. */
export async function pull(ctx: Pick<ServerContext, "library">, body: PullRequest): Promise<PullResponse | Response> {
  let model: CatalogModel;
  try {
    model = ctx.library.modelFor(body);
  } catch (err) {
    // A name that could never be registered is the stream's error event, as Lemonade sends it;
    // any other refusal is answered before the stream starts.
    if (!(body.stream === true && body.subscribe !== false && err instanceof ApiError && err.code === E.unknownModel.code)) throw err;
    return sseResponse(async (send) => send("error", { error: err.message, code: err.code }));
  }
  // Registered first, as Lemonade does; offline, nothing is installed, even what is there.
  ctx.library.refuseOffline();
  if (body.stream === true && body.subscribe === false) {
    return ctx.library.startJob(model, body.model_name) ?? { status: "success", message: `${body.model_name} is local; nothing to download`, model_name: body.model_name };
  }
  if (body.stream !== true) {
    await ctx.library.install(model);
    return { status: "success", message: `Installed model: ${body.model_name}`, model_name: body.model_name };
  }
  return sseResponse(async (send) => {
    let last: Progress | undefined;
    try {
      await ctx.library.install(model, (p) => {
        last = p;
        send("progress", p);
      });
    } catch (err) {
      // A download a client stopped ends the stream with no error event and no complete, as Lemonade's does.
      if (err instanceof DownloadStopped) return;
      throw err;
    }
    // The last file's figures, at 100 %; a model with nothing left to fetch says only that it is done.
    send("complete", last ? { ...last, bytes_downloaded: last.bytes_total, percent: 100, model_name: body.model_name } : { status: "ok", percent: 100, model_name: body.model_name });
  });
}

/** POST /v1/models/register: the definition stored, nothing downloaded. */
export function register(ctx: Pick<ServerContext, "catalog" | "library">, body: RegisterRequest): RegisterResponse {
  const model = ctx.library.modelFor(body, { definitions: false });
  // model_name is the name /v1/models lists it by; canonical_model_name its `user.` id.
  return {
    status: "success",
    message: `Registered model: ${model.id}`,
    model_name: ctx.catalog.publicId(model),
    canonical_model_name: model.id,
    model: { id: ctx.catalog.publicId(model), recipe: model.recipe, downloaded: ctx.catalog.isDownloaded(model) },
  };
}

/** POST /v1/delete. */
export async function deleteModel(ctx: Pick<ServerContext, "catalog" | "library">, name: string): Promise<DeleteModelResponse> {
  // A name the registry does not know cannot be deleted: 422, as the real server answers.
  if (!ctx.catalog.find(name)) throw ApiError.of(E.deleteUnknownModel, `Model not found: ${clip(name)}`, "model_name");
  await ctx.library.delete(name);
  // Named as the request named it, as Lemonade answers.
  return { status: "success", message: `Deleted model: ${name}` };
}

/** POST /v1/downloads/control: steers a job that a `subscribe: false` pull started. */
export async function controlDownload(ctx: Pick<ServerContext, "downloads">, body: DownloadsControlRequest): Promise<DownloadsControlResponse> {
  const known = ctx.downloads.get(body.id) !== undefined;
  const snapshot = await ctx.downloads.control(body.id, body.action);
  if (body.action === "remove") return known ? { status: "ok" } : { status: "ok", missing: true };
  if (!snapshot) throw ApiError.of(E.downloadNotFound, `No download job ${body.id}`);
  return snapshot;
}

/** GET /v1/registry/search: candidate repositories for a pull. */
export async function searchRegistry(ctx: Pick<ServerContext, "library">, query: RegistrySearchQuery): Promise<RegistrySearchResponse> {
  const text = String(query.query ?? query.q ?? "").trim();
  if (text.length < 3) throw ApiError.of(E.invalidArgument, "'query' must be at least 3 characters", "query");
  const source = ctx.library.registryOf(query.source);
  const found = await ctx.library.search(text, query.limit ?? 12, query.format === "gguf", source);
  return { query: text, source, ...(query.format === "gguf" ? { format: "gguf" } : {}), ...found };
}

/** POST /v1/models/check-updates. */
export async function checkUpdates(ctx: Pick<ServerContext, "library">): Promise<CheckUpdatesResponse> {
  const models = await ctx.library.checkUpdates();
  return { status: "success", updates_available: models.length, models };
}
