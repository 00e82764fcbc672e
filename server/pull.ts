// Installing models: resolve what a /v1/pull body names (a catalog model, or a `user.*` model to
// register first), download its files, and delete them again.
import { rmSync } from "node:fs";
import type { ServerContext } from "./context.ts";
import { ApiError } from "./errors.ts";
import type { CatalogModel, RegistryRow } from "../models/catalog.ts";
import { repoCacheDir, parseCheckpoint } from "../models/hf-cache.ts";
import type { Progress } from "../models/downloads.ts";
import { cachedRevision, ggufVariants, HubError, repoManifest, searchRepos } from "../models/hf-download.ts";

type Json = Record<string, any>;

export function refuseOffline(ctx: ServerContext): void {
  if (ctx.config.offline) {
    throw new ApiError(400, "lemond_offline", "The server is in offline mode (`offline` is true): downloads are disabled");
  }
}

/** The registry row a registration body describes, with the label booleans folded in. */
function rowFrom(body: Json): RegistryRow {
  const labels: string[] = [...(body.labels ?? [])];
  for (const [flag, label] of [["reasoning", "reasoning"], ["vision", "vision"], ["embedding", "embeddings"], ["reranking", "reranking"]] as const) {
    if (body[flag] === true && !labels.includes(label)) labels.push(label);
  }
  const row: RegistryRow = { recipe: body.recipe, labels };
  if (body.checkpoint) row.checkpoint = body.checkpoint;
  if (body.checkpoints) row.checkpoints = body.checkpoints;
  if (body.mmproj) row.mmproj = body.mmproj;
  if (body.size !== undefined) row.size = body.size;
  if (body.recipe_options) row.recipe_options = body.recipe_options;
  return row;
}

/** The model a pull or register body names, registering a `user.*` definition when it has one. */
export function modelForPull(ctx: ServerContext, body: Json): CatalogModel {
  const defines = body.checkpoint !== undefined || body.checkpoints !== undefined || body.recipe !== undefined;
  if (!defines) return ctx.catalog.get(body.model_name);
  if (!body.recipe) throw new ApiError(400, "missing_argument", "Missing required argument 'recipe' to register a model", "recipe");
  if (body.recipe === "collection.omni") {
    throw new ApiError(400, "invalid_argument", "collection.omni models are not supported by this server", "recipe");
  }
  const model = ctx.catalog.registerUser(body.model_name, rowFrom(body));
  ctx.logger.info("Models", `Registered ${model.id} (${model.checkpoints.main})`);
  return model;
}

function hubError(err: unknown): never {
  if (err instanceof HubError) throw new ApiError(err.status === 404 ? 404 : 500, "download_failed", err.message);
  throw err;
}

/** Downloads a model's files (skipping what is already there); local models need nothing. */
export async function installModel(ctx: ServerContext, model: CatalogModel, onProgress?: (p: Progress) => void): Promise<void> {
  if (model.source !== "huggingface") return;
  refuseOffline(ctx);
  ctx.logger.info("Models", `Downloading ${model.id}`);
  await ctx.downloads.pull(model, onProgress).catch(hubError);
  ctx.updatesAvailable.delete(model.id);
  ctx.logger.info("Models", `Installed ${model.id}`);
}

/** Unloads a model, removes its files from the HF cache, and drops a `user.*` registration. */
export async function deleteModel(ctx: ServerContext, name: string): Promise<CatalogModel> {
  const model = ctx.catalog.get(name);
  if (model.source === "extra_models_dir") {
    throw new ApiError(500, "delete_failed", `${model.id} lives in the extra models folder; remove the file there instead`);
  }
  await ctx.router.unload(model.id);
  const files = ctx.catalog.files(model);
  if (!files.some((f) => f.exists) && !model.id.startsWith("user.")) {
    throw new ApiError(404, "model_not_downloaded", `${model.id} is not downloaded`);
  }
  // Whole repo folders go: blobs, snapshots and refs together, so no half model is left.
  for (const repo of new Set(Object.values(model.checkpoints).map((c) => parseCheckpoint(c).repo))) {
    const shared = ctx.catalog
      .all()
      .some((m) => m.id !== model.id && ctx.catalog.isDownloaded(m) && Object.values(m.checkpoints).some((c) => parseCheckpoint(c).repo === repo));
    if (!shared) rmSync(repoCacheDir(ctx.config.hfCacheDir, repo), { recursive: true, force: true });
  }
  if (model.id.startsWith("user.")) ctx.catalog.unregisterUser(model.id);
  ctx.logger.info("Models", `Deleted ${model.id}`);
  return model;
}

const hubOf = (ctx: ServerContext) => ({ endpoint: ctx.config.hfEndpoint, token: ctx.config.hfToken ?? undefined });

/** GET /v1/pull/variants: what a GGUF repository offers, grouped for the pull form. */
export async function pullVariants(ctx: ServerContext, checkpoint: string) {
  const repo = parseCheckpoint(checkpoint).repo;
  if (!/^[^/\s]+\/[^/\s]+$/.test(repo)) {
    throw new ApiError(400, "invalid_argument", `'checkpoint' must be a Hugging Face repo id like org/name, got ${JSON.stringify(checkpoint)}`, "checkpoint");
  }
  refuseOffline(ctx);
  const manifest = await repoManifest(hubOf(ctx), repo).catch(hubError);
  const mmproj = manifest.files.map((f) => f.path).filter((p) => /(^|\/)mmproj[^/]*\.gguf$/i.test(p));
  const labels = [
    ...(mmproj.length ? ["vision"] : []),
    ...(/embed/i.test(repo) ? ["embeddings"] : []),
    ...(/rerank/i.test(repo) ? ["reranking"] : []),
  ];
  return {
    checkpoint,
    recipe: "llamacpp",
    suggested_name: repo.split("/")[1]!,
    suggested_labels: labels,
    mmproj_files: mmproj.map((p) => p.split("/").pop()!),
    variants: ggufVariants(manifest),
  };
}

/** POST /v1/models/check-updates: downloaded hub models whose repository moved on. */
export async function checkUpdates(ctx: ServerContext): Promise<string[]> {
  if (ctx.config.offline) throw new ApiError(409, "lemond_offline", "The server is in offline mode (`offline` is true): no update check is made");
  const found: string[] = [];
  for (const model of ctx.catalog.all()) {
    if (model.source !== "huggingface" || !ctx.catalog.isDownloaded(model)) continue;
    const repos = [...new Set(Object.values(model.checkpoints).map((c) => parseCheckpoint(c).repo))];
    let newer = false;
    for (const repo of repos) {
      const local = cachedRevision(ctx.config.hfCacheDir, repo);
      const remote = await repoManifest(hubOf(ctx), repo).then((m) => m.sha, () => null);
      if (local && remote && local !== remote) newer = true;
    }
    if (newer) found.push(model.id);
    else ctx.updatesAvailable.delete(model.id);
  }
  for (const id of found) ctx.updatesAvailable.add(id);
  return found;
}

/** GET /v1/registry/search */
export async function registrySearch(ctx: ServerContext, query: string, limit: number, gguf: boolean) {
  refuseOffline(ctx);
  return searchRepos(hubOf(ctx), query, limit, gguf).catch((err) => {
    throw new ApiError(err instanceof HubError && err.status === 429 ? 429 : 502, "download_failed", (err as Error).message);
  });
}
