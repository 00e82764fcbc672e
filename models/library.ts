// The model library: what a /v1/pull or register body names (a catalog model, or a `user.*`
// model to register first), downloading its files, deleting them again, and what the hub offers
// (variants, updates, search). The scheduler's `prepare` is `ensureDownloaded`.
import { rmSync } from "node:fs";
import { basename } from "node:path";
import { changed } from "../lib/generation.ts";
import { clip, scrubPaths } from "../lib/scrub.ts";
import { ApiError } from "../lib/api-error.ts";
import { GGUF_RECIPE } from "../spec/recipes.ts";
import { E } from "../spec/errors.ts";
import type { PullVariantsResponse } from "../spec/downloads.ts";
import { OMNI_RECIPE, reservedNameProblem, ROUTER_RECIPE, type Catalog, type CatalogModel, type RegistryRow } from "./catalog.ts";
import { checkRouting, requireVersion, type Routing } from "./routing-policy.ts";
import { MAX_MANIFEST_BYTES, parseOmniManifest, type OmniSpec } from "./omni-manifest.ts";
import { checkpointRegistry, normalizeCheckpoint, parseCheckpoint, repoCacheDir } from "./hf-cache.ts";
import type { DownloadManager, JobSnapshot, Progress } from "./downloads.ts";
import { cachedRevision, ggufVariants, HubError, registryOf, readRepoFile, repoManifest, searchRepos, type HubOptions, type Registry } from "./hf-download.ts";
import type { UncheckedJson as Json } from "../lib/json.ts";

export interface LibraryOptions {
  catalog: Catalog;
  downloads: DownloadManager;
  /** Each registry's hub and the folder its files live in. */
  hubs: Record<Registry, HubOptions & { dir: string }>;
  /** Whether downloads are refused (`offline`), read at each call. */
  offline(): boolean;
  /** Unloads a model (its engine, or a cloud model's load) before its files go. */
  unload(id: string): Promise<unknown>;
  log(message: string): void;
}

/** The registry row a registration body describes, with the label booleans folded in. */
function rowFrom(body: Json): RegistryRow {
  const labels: string[] = [...(body.labels ?? [])];
  for (const [flag, label] of [["reasoning", "reasoning"], ["vision", "vision"], ["embedding", "embeddings"], ["reranking", "reranking"]] as const) {
    if (body[flag] === true && !labels.includes(label)) labels.push(label);
  }
  const row: RegistryRow = { recipe: body.recipe, labels };
  if (body.checkpoint) row.checkpoint = normalizeCheckpoint(body.checkpoint);
  if (body.checkpoints) row.checkpoints = Object.fromEntries(Object.entries(body.checkpoints as Record<string, string>).map(([role, c]) => [role, normalizeCheckpoint(c)]));
  if (body.mmproj) row.mmproj = body.mmproj;
  if (body.size !== undefined) row.size = body.size;
  if (body.recipe_options) row.recipe_options = body.recipe_options;
  if (registryFor(body.source, [body.checkpoint, ...Object.values(body.checkpoints ?? {})]) === "modelscope") row.source = "modelscope";
  return row;
}

/** The registry a registration downloads from: the one its checkpoints' URLs name, else its
 * `source`. A URL naming another registry than `source` (or than another checkpoint's URL) is a
 * 400, never a download from a host the client did not mean. */
function registryFor(source: unknown, checkpoints: unknown[]): Registry {
  const named = checkpoints.filter((c): c is string => typeof c === "string").map((c) => ({ c, r: checkpointRegistry(c) }));
  const byUrl = named.filter((n) => n.r !== null);
  const given = source === undefined || source === null ? null : registryOf(source);
  for (const { c, r } of byUrl) {
    if (given && r !== given) throw ApiError.of(E.invalidArgument, `\`source\` '${given}' and the checkpoint URL '${c.slice(0, 200)}' identify different registries`, "source");
    if (r !== byUrl[0]!.r) throw ApiError.of(E.invalidArgument, "All checkpoints of one model must come from one registry", "checkpoints");
  }
  return given ?? byUrl[0]?.r ?? "huggingface";
}

function hubError(err: unknown): never {
  if (err instanceof HubError) throw ApiError.of(err.status === 404 ? E.hubNotFound : E.downloadFailed, err.message);
  throw err;
}

/** A fixed-label text classifier, as a router's `classifier` condition needs. */
const isClassifier = (model: CatalogModel | undefined) => model?.type === "classification" && !model.labels.includes("zero-shot");

export class ModelLibrary {
  /** Models the last update check found a newer commit for. */
  readonly updatesAvailable = new Set<string>();

  constructor(private readonly opts: LibraryOptions) {}

  /** A routing policy checked against the registered models, normalised (POST /v1/routing/validate). */
  validateRouting(doc: Record<string, unknown>): Routing {
    return checkRouting(doc, (name) => this.opts.catalog.find(name) !== undefined, (name) => isClassifier(this.opts.catalog.find(name)));
  }

  /** A client's `source` as the registry it names (a 400 for one this server does not know). */
  registryOf(source: unknown): Registry {
    return registryOf(source);
  }

  /** How log lines and error messages name a model: the id the API lists it by. */
  private named(model: CatalogModel): string {
    return this.opts.catalog.publicId(model);
  }

  private hubOf(model: CatalogModel) {
    return this.opts.hubs[model.registry ?? "huggingface"];
  }

  /** Refuses what needs the network while `offline` is set, in Lemonade's words for what it is. */
  refuseOffline(what = "models not downloaded"): void {
    if (this.opts.offline()) throw ApiError.of(E.offline, `Lemond is in offline mode, ${what}`);
  }

  /** The model a pull or register body names, registering a `user.*` definition when it has one.
   * A collection's embedded `models` definitions are registered only by a pull (an import):
   * /v1/models/register takes one definition, so its components must be registered already. */
  modelFor(body: Json, opts: { definitions?: boolean } = {}): CatalogModel {
    const { catalog } = this.opts;
    registryOf(body.source);
    const reserved = reservedNameProblem(body.model_name);
    if (reserved) throw ApiError.of(E.invalidArgument, reserved, "model_name");
    const defines = body.checkpoint !== undefined || body.checkpoints !== undefined || body.recipe !== undefined;
    if (!defines) {
      // Lemonade reads an unknown name without the `user.` prefix as a registration that cannot be.
      if (!catalog.find(body.model_name)) {
        const name = clip(String(body.model_name));
        if (!name.startsWith("user.")) {
          throw ApiError.of(E.unknownModel, `When registering a new model, the model name must include the \`user\` namespace, for example \`user.Phi-4-Mini-GGUF\`. Received: ${name}`, "model_name");
        }
        throw ApiError.of(E.modelNotFound, `Model ${name} is not registered with Lemonade Server. To register it, provide the \`recipe\` argument.`, "model_name");
      }
      return catalog.get(body.model_name);
    }
    if (!body.recipe) throw ApiError.of(E.missingArgument, "Missing required argument 'recipe' to register a model", "recipe");
    if (body.recipe === OMNI_RECIPE || body.recipe === ROUTER_RECIPE) return this.registerCollection(body, opts.definitions ?? true);
    const model = catalog.registerUser(body.model_name, rowFrom(body));
    this.opts.log(`Registered ${this.named(model)} (${model.checkpoints.main})`);
    return model;
  }

  /** A collection (omni or router): its components must be registered models (or be defined in
   * `models`, registered first), none of them a collection; a router's policy is checked against
   * them before anything is stored, every model it names one of its components. */
  private registerCollection(body: Json, definitions: boolean): CatalogModel {
    const { catalog } = this.opts;
    const components = body.components;
    if (body.recipe === OMNI_RECIPE && components === undefined && (body.checkpoint !== undefined || body.checkpoints !== undefined)) {
      // A published collection: its components are what its manifest says, read when it is pulled.
      const model = catalog.registerUser(body.model_name, rowFrom(body));
      this.opts.log(`Registered ${this.named(model)} (collection published in ${model.checkpoints.main})`);
      return model;
    }
    if (!Array.isArray(components) || !components.length || !components.every((c) => typeof c === "string" && c)) {
      throw ApiError.of(E.invalidArgument, "Collection recipe requires a non-empty 'components' array", "components");
    }
    const spec = { components, models: definitions && Array.isArray(body.models) ? body.models : [] };
    const defined = this.checkComponents(body.model_name, spec);
    const extra: Partial<RegistryRow> = {};
    if (body.recipe === ROUTER_RECIPE) {
      // Names compare as the models they resolve to: `extra.a` is the component `a`.
      const resolved = (name: string) => catalog.find(name)?.id ?? name;
      const declared = new Set(components.map(resolved));
      requireVersion(body);
      checkRouting(body, (name) => catalog.find(name) !== undefined || defined.has(name), (name) => isClassifier(catalog.find(name)), (name) => declared.has(resolved(name)));
      Object.assign(extra, { version: body.version, routing: body.routing });
    } else if (typeof body.system_prompt === "string") extra.system_prompt = body.system_prompt;
    this.registerDefined(defined);
    const model = catalog.registerUser(body.model_name, { recipe: body.recipe, labels: body.labels ?? [], components, ...extra });
    this.opts.log(`Registered ${this.named(model)} (collection of ${components.join(", ")})`);
    return model;
  }

  /** Registers the components a collection defines and this server lacks, once every component is
   * known to be a regular model: a refused collection registers nothing. */
  private registerComponents(collection: string, spec: OmniSpec): void {
    this.registerDefined(this.checkComponents(collection, spec));
  }

  private registerDefined(defined: Map<string, Json>): void {
    for (const [name, fields] of defined) this.modelFor({ ...fields, model_name: name.startsWith("user.") ? name : `user.${name}` });
  }

  /** Checks a collection's components (each a regular model, registered or defined in `models`,
   * never the collection itself) and answers the definitions to register: those this server lacks
   * (names that exist keep their local definition). */
  private checkComponents(collection: string, spec: OmniSpec): Map<string, Json> {
    const { catalog } = this.opts;
    // Lemonade's messages, word for word: scripts match them.
    const bare = (name: string) => name.replace(/^user\./, "");
    const defined = new Map<string, Json>();
    for (const def of spec.models) {
      const given = typeof def?.model_name === "string" ? def.model_name : typeof def?.id === "string" ? def.id : undefined;
      const name = spec.components.find((c) => c === given || c === `user.${given}`);
      if (!name || catalog.find(name)) continue;
      const { id: _id, ...fields } = def;
      defined.set(name, fields);
    }
    for (const c of spec.components) {
      if (bare(c) === bare(collection)) throw ApiError.of(E.invalidArgument, `Collection cannot reference itself: ${c}`, "components");
      const part = catalog.find(c);
      const def = defined.get(c);
      if (part?.omni || part?.router || def?.recipe === OMNI_RECIPE || def?.recipe === ROUTER_RECIPE) {
        throw ApiError.of(E.invalidArgument, `Collection components must be regular models, not collections: '${c}'`, "components");
      }
      if (!part && !def) {
        throw ApiError.of(
          E.invalidArgument,
          spec.models.length
            ? `Inline collection component '${c}' has no matching definition in 'models' and is not a registered model. Every component must be defined inline (matching 'model_name') or reference an already-registered model.`
            : `Collection component not registered: '${c}'. Pull or register it before referencing it in a collection.`,
          "components",
        );
      }
    }
    return defined;
  }

  /** Starts a server-owned download job for the model, named `name` (a collection's installs its
   * manifest, then each component); null when the model has nothing to download. */
  startJob(model: CatalogModel, name: string): JobSnapshot | null {
    const { canonicalId } = this.opts.catalog.naming(model);
    if (model.omni) return this.opts.downloads.startJob(model, name, canonicalId, (p) => this.install(model, p));
    if (model.source !== "huggingface") return null;
    return this.opts.downloads.startJob(model, name, canonicalId);
  }

  /** Downloads a model's files (skipping what is already there); local models need nothing. A
   * collection pulls each of its components. */
  async install(model: CatalogModel, onProgress?: (p: Progress) => void): Promise<void> {
    const { catalog } = this.opts;
    if (model.omni) {
      if (!model.omni.spec && !catalog.files(model).every((f) => f.exists)) await this.download(model, onProgress);
      const spec = catalog.omniSpec(model)!;
      if (!model.omni.spec) this.registerComponents(model.id, spec);
      for (const c of spec.components) {
        const part = catalog.get(c);
        if (!catalog.isDownloaded(part)) await this.install(part, onProgress);
      }
      return;
    }
    if (model.source !== "huggingface") return;
    await this.download(model, onProgress);
  }

  private async download(model: CatalogModel, onProgress?: (p: Progress) => void): Promise<void> {
    this.refuseOffline();
    this.opts.log(`Downloading ${this.named(model)}`);
    await this.opts.downloads.pull(model, onProgress).catch(hubError);
    this.updatesAvailable.delete(model.id);
    changed();
    this.opts.log(`Installed ${this.named(model)}`);
  }

  /** A load's first step: fetch what is missing, as the load's own error when that fails. */
  async ensureDownloaded(model: CatalogModel): Promise<void> {
    if (this.opts.catalog.isDownloaded(model)) return;
    try {
      await this.install(model);
    } catch (err) {
      const message = (err as Error).message;
      this.opts.log(`Failed to download ${this.named(model)}: ${message}`);
      if (err instanceof ApiError && err.code === "lemond_offline") throw err;
      throw ApiError.of(E.modelLoadError, `${this.named(model)} is not downloaded and the download failed: ${scrubPaths(message)}`);
    }
  }

  /** Unloads a model, removes its files from the HF cache, and drops a `user.*` registration. */
  async delete(name: string): Promise<CatalogModel> {
    const { catalog } = this.opts;
    const model = catalog.get(name);
    // Named as listed before it goes: once a registration is gone, its bare name is another model's.
    const listed = this.named(model);
    if (model.source === "extra_models_dir") {
      // Lemonade's words; the file by its name, not its path (no home folder in an answer).
      throw ApiError.of(
        E.deleteExtraModel,
        `Cannot delete extra models via API. Models in --extra-models-dir are user-managed. Delete the file directly from the extra models folder: ${basename(model.checkpoints.main ?? model.id)}`,
      );
    }
    // A cloud model has no files: deleting it unloads it, and its provider lists it still, as
    // Lemonade answers (the provider goes with /v1/uninstall).
    if (model.cloud) {
      await this.opts.unload(model.id);
      this.opts.log(`Deleted ${listed} (served by the ${model.cloud.provider} cloud provider; nothing on disk)`);
      return model;
    }
    // Deleting a collection removes its entry; its components stay (lemonade.md). A published
    // collection's entry is its manifest, deleted below like any model's files.
    if (model.omni?.spec || model.router) {
      catalog.unregisterUser(model.id);
      this.opts.log(`Deleted ${listed}`);
      return model;
    }
    await this.opts.unload(model.id);
    // Whole repo folders go: blobs, snapshots and refs together, so no half model is left. A model
    // not downloaded is deleted too, as Lemonade does: what a stopped download left goes with it.
    for (const repo of new Set(Object.values(model.checkpoints).map((c) => parseCheckpoint(c).repo))) {
      const shared = catalog
        .all()
        .some((m) => m.id !== model.id && catalog.isDownloaded(m) && Object.values(m.checkpoints).some((c) => parseCheckpoint(c).repo === repo));
      if (!shared) rmSync(repoCacheDir(this.hubOf(model).dir, repo), { recursive: true, force: true });
      changed();
    }
    if (model.id.startsWith("user.")) catalog.unregisterUser(model.id);
    this.opts.log(`Deleted ${listed}`);
    return model;
  }

  /** GET /v1/pull/variants: what a GGUF repository offers, grouped for the pull form. */
  async variants(given: string, source?: string): Promise<PullVariantsResponse> {
    const hub = this.opts.hubs[registryFor(source, [given])];
    const checkpoint = normalizeCheckpoint(given);
    const repo = parseCheckpoint(checkpoint).repo;
    if (!/^[^/\s]+\/[^/\s]+$/.test(repo)) {
      throw ApiError.of(E.invalidArgument, `checkpoint must be a repository id of the form 'owner/name', got ${JSON.stringify(checkpoint.slice(0, 200))}`, "checkpoint");
    }
    this.refuseOffline();
    const manifest = await repoManifest(hub, repo).catch(hubError);
    const name = repo.split("/")[1]!;
    const published = `${name}.json`;
    if (!manifest.files.some((f) => f.path.toLowerCase().endsWith(".gguf")) && manifest.files.some((f) => f.path === published)) {
      // A collection `lemonade export` published: pulled whole, by its repository.
      if ((manifest.files.find((f) => f.path === published)?.size ?? 0) > MAX_MANIFEST_BYTES) {
        throw ApiError.of(E.invalidArgument, `Repository ${repo} contains '${published}' but it is too large to be a Lemonade Omni collection manifest`, "checkpoint");
      }
      const spec = parseOmniManifest(await readRepoFile(hub, manifest, published).catch(hubError), `${repo}:${published}`);
      return { checkpoint, recipe: OMNI_RECIPE, repo_kind: "collection", suggested_name: name, suggested_labels: [], mmproj_files: [], variants: [], component_count: spec.components.length };
    }
    const mmproj = manifest.files.map((f) => f.path).filter((p) => /(^|\/)mmproj[^/]*\.gguf$/i.test(p));
    const labels = [
      ...(mmproj.length ? ["vision"] : []),
      ...(/embed/i.test(repo) ? ["embeddings"] : []),
      ...(/rerank/i.test(repo) ? ["reranking"] : []),
    ];
    return {
      checkpoint,
      recipe: GGUF_RECIPE,
      suggested_name: repo.split("/")[1]!,
      suggested_labels: labels,
      mmproj_files: mmproj.map((p) => p.split("/").pop()!),
      variants: ggufVariants(manifest),
    };
  }

  /** POST /v1/models/check-updates: downloaded hub models whose repository moved on. */
  async checkUpdates(): Promise<string[]> {
    const { catalog } = this.opts;
    if (this.opts.offline()) throw ApiError.of(E.offlineUpdateCheck, "The server is in offline mode (`offline` is true): no update check is made");
    const found: string[] = [];
    for (const model of catalog.all()) {
      if (model.source !== "huggingface" || !catalog.isDownloaded(model)) continue;
      const repos = [...new Set(Object.values(model.checkpoints).map((c) => parseCheckpoint(c).repo))];
      let newer = false;
      for (const repo of repos) {
        const local = cachedRevision(this.hubOf(model).dir, repo);
        const remote = await repoManifest(this.hubOf(model), repo).then((m) => m.sha, () => null);
        if (local && remote && local !== remote) newer = true;
      }
      if (newer) found.push(model.id);
      else this.updatesAvailable.delete(model.id);
    }
    for (const id of found) this.updatesAvailable.add(id);
    changed();
    return found;
  }

  /** GET /v1/registry/search */
  async search(query: string, limit: number, gguf: boolean, registry: Registry = "huggingface") {
    this.refuseOffline("registry search is unavailable");
    return searchRepos(this.opts.hubs[registry], query, limit, gguf).catch((err) => {
      throw ApiError.of(err instanceof HubError && err.status === 429 ? E.hubRateLimited : E.hubFailed, (err as Error).message);
    });
  }
}
