// The model catalog: built-in models (server_models.json), the user's registered models
// (user_models.json, ids `user.*`), and every GGUF in the extra models folder (ids `extra.*`).
// It answers which models exist, what they are (recipe, labels, type), and which files they need.
import { existsSync, readFileSync, statSync, watch } from "node:fs";
import { dirname, join } from "node:path";
// The built-in catalog as a file, read and parsed when first asked for: as a JSON import it would be
// built into some thousands of objects at start-up, and as text its 65 kB would be part of the code
// every start reads and keeps, while an idle server never reads it (bench memory). TypeScript types a
// .json import by its content whatever the import's type; Bun's `file` gives the file's path (inside
// the single executable, once compiled; beside npm start's bundle).
import builtInFile from "./server_models.json" with { type: "file" };
import { checkpointProblem, findCachedFile, parseCheckpoint } from "./hf-cache.ts";
import { ggufScalar, readGgufMetadata, type GgufMetadata } from "./gguf.ts";
import { GgufHeaderCache } from "./gguf-header-cache.ts";
import { memoInBuild } from "../lib/build-scope.ts";
import { changed, generation } from "../lib/generation.ts";
import { clip } from "../lib/scrub.ts";
import { ApiError } from "../lib/api-error.ts";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import { E } from "../spec/errors.ts";
import type { Static } from "@sinclair/typebox";
import { MAX_MODEL_NAME_BYTES } from "../spec/schemas.ts";
import type { ImageDefaults as ImageDefaultsSchema } from "../spec/models.ts";
import { GGUF_RECIPE, RECIPE_SPECS, type ModelType } from "../spec/recipes.ts";
import type { AliasStore } from "./aliases.ts";
import { checkRouting, type Routing } from "./routing-policy.ts";
import { scanExtraModels } from "./extra-models.ts";
import { MAX_MANIFEST_BYTES, manifestCheckpoint, parseOmniManifest, type OmniSpec } from "./omni-manifest.ts";

/** Deployment labels and the model type each makes. */
const DEPLOYMENT: Record<string, ModelType> = {
  chat: "llm",
  embeddings: "embedding",
  embedding: "embedding",
  reranking: "reranking",
  transcription: "transcription",
  image: "image",
  tts: "tts",
  "audio-generation": "audio-generation",
  classification: "classification",
  classifier: "classification",
  "3d": "mesh",
};

export type ModelSource = "huggingface" | "extra_models_dir" | "local_path" | "cloud";

/** A cloud provider's model (models/cloud.ts): where it is served and what the provider says of it. */
export interface CloudModelInfo {
  provider: string;
  /** The provider's own id, sent upstream as `model`. */
  upstreamId: string;
  /** Whether the provider answered its last model listing. */
  available: boolean;
  /** `anthropic`: the provider speaks Anthropic's Messages API, served through /v1/messages only. */
  wire: "openai" | "anthropic";
  maxOutputTokens?: number;
  contextLength?: number;
  costInputPerMillion?: number;
  costOutputPerMillion?: number;
}

export interface CatalogModel {
  id: string;
  recipe: string;
  type: ModelType;
  labels: string[];
  /** Role -> checkpoint: `org/name:variant` on the hub, or an absolute path for local models. */
  checkpoints: Record<string, string>;
  suggested: boolean;
  size?: number;
  source: ModelSource;
  /** Options the registry row authors (an image model's `image_defaults` among them); saved
   * options layer on top. */
  registryOptions: Record<string, unknown>;
  /** An image model's other generation defaults (sampler, flow shift), passed to sd-server as they are. */
  imageExtras?: Record<string, unknown>;
  /** A registry row's `image_defaults` as Lemonade lists them: steps, cfg_scale, width and height
   * always (its defaults for one left out), the sampler and flow shift when set. */
  imageDefaults?: ImageDefaults;
  cloud?: CloudModelInfo;
  /** The registry a hub model's checkpoints come from; absent: Hugging Face. */
  registry?: "modelscope";
  /** collection.router: the policy, normalised (models/routing-policy.ts), and as registered, with
   * its components (a registration older than their being required: its candidates). */
  router?: { policy: Routing; version: string; routing: unknown; components: string[] };
  /** A collection.omni, which a chat naming runs the tool loop on (protocols/omni.ts): its
   * components as registered, or null when they are its repository's manifest (Catalog.omniSpec). */
  omni?: { spec: OmniSpec | null };
  /** An extra model that was its folder's before the folder split into variants: the folder's
   * name, which requests may still use for it (bare or `extra.`), never listed. */
  folderAlias?: string;
}

export interface ResolvedFile {
  role: string;
  path: string | null;
  exists: boolean;
  sizeBytes: number;
}

/** A size on disk in Lemonade's unit and precision: GiB, to 3 decimals under 1, 2 under 10, else 1. */
export function diskSizeGb(bytes: number): number {
  const gib = bytes / 2 ** 30;
  const scale = gib < 1 ? 1000 : gib < 10 ? 100 : 10;
  return Math.round(gib * scale) / scale;
}

/** A name the catalog does not know or cannot serve (404), or a definition it refuses (400). */
export class CatalogError extends ApiError {
  constructor(kind: "model_not_found" | "model_not_supported" | "invalid_labels", message: string, param?: string) {
    const row = kind === "model_not_found" ? E.modelNotFound : kind === "model_not_supported" ? E.modelNotSupported : E.invalidArgument;
    super(row, message, param);
  }
}

/** How many model names a not-found message suggests, as Lemonade's does. */
const SUGGESTIONS = 3;

export interface RegistryRow {
  checkpoint?: string;
  checkpoints?: Record<string, string>;
  mmproj?: string;
  recipe: string;
  labels?: string[];
  suggested?: boolean;
  size?: number;
  recipe_options?: Record<string, unknown>;
  image_defaults?: Record<string, unknown>;
  /** The registry the checkpoints download from, when not Hugging Face. */
  source?: "modelscope";
  /** collection.router: the policy document's version and its routing block, as registered. */
  version?: string;
  routing?: unknown;
  /** A collection's models, in order (collection.omni: and an optional system prompt of its own). */
  components?: string[];
  system_prompt?: string;
}

/** The prefix that reaches a built-in model a user model of the same name shadows. */
const BUILTIN_PREFIX = "builtin.";

const NO_MODELS: readonly CatalogModel[] = Object.freeze([]);

/** How long a scan of the extra folder serves when its watcher reported nothing (a change it
 * cannot see: a file behind a symbolic link, a file system without notifications). */
const EXTRA_SCAN_LIFETIME_MS = 2000;

/** Why a name cannot be registered or pulled, when its prefix is one the server owns: `extra.`
 * (found on disk) and `builtin.` (shipped), also as the bare part of a `user.` name, which would
 * otherwise take over that prefixed name. Lemonade's wording. */
export function reservedNameProblem(id: string): string | undefined {
  const bare = id.startsWith("user.") ? id.slice("user.".length) : id;
  if (!bare.startsWith("extra.") && !bare.startsWith(BUILTIN_PREFIX)) return undefined;
  return `Model names with 'extra.' / 'builtin.' prefixes are reserved, including as bare-name parts of a 'user.' alias. Received: ${clip(id)}`;
}

/** The three sources of local models, as their canonical ids' prefixes name them, highest
 * precedence first: a bare name is the registered model's, else the imported one's, else the built-in's. */
type NamingSource = "user" | "extra" | "builtin";
const SOURCE_PRECEDENCE: NamingSource[] = ["user", "extra", "builtin"];

/** What naming and lookups ask of one `all()` array, made once per array (all() returns the same
 * array until a part of it changes): the local ids and the extra folder's old names (naming), and
 * each model by id, by lowercased id and by folder alias, the first in the catalog's order winning as
 * `find` would (a lookup tries up to five names, each a scan of some 290 models without it). */
interface CatalogIndex {
  localIds: Set<string>;
  folderAliases: Set<string>;
  byId: Map<string, CatalogModel>;
  byLowerId: Map<string, CatalogModel>;
  byFolderAlias: Map<string, CatalogModel>;
}

const indexes = new WeakMap<readonly CatalogModel[], CatalogIndex>();

function catalogIndex(all: readonly CatalogModel[]): CatalogIndex {
  let index = indexes.get(all);
  if (!index) {
    index = { localIds: new Set(), folderAliases: new Set(), byId: new Map(), byLowerId: new Map(), byFolderAlias: new Map() };
    const first = <K>(map: Map<K, CatalogModel>, key: K, model: CatalogModel) => map.has(key) || map.set(key, model);
    for (const m of all) {
      if (m.source !== "cloud") index.localIds.add(m.id);
      first(index.byId, m.id, m);
      first(index.byLowerId, m.id.toLowerCase(), m);
      if (m.folderAlias) {
        index.folderAliases.add(m.folderAlias);
        first(index.byFolderAlias, m.folderAlias, m);
      }
    }
    indexes.set(all, index);
  }
  return index;
}

/** Whether a name already carries a source's prefix (`user.`, `extra.` or `builtin.`). */
export const hasSourcePrefix = (name: string): boolean => SOURCE_PRECEDENCE.some((s) => name.startsWith(`${s}.`));

/** A model's names in listings (Catalog.naming). */
export interface ModelNaming {
  /** The id listings show it by. */
  id: string;
  /** `user.NAME`, `extra.NAME` or `builtin.NAME`; a cloud model's own id. */
  canonicalId: string;
  /** Whether a source of higher precedence holds its bare name. */
  shadowed: boolean;
}

/** A model's image defaults as /v1/models lists them (spec/models.ts). */
export type ImageDefaults = Static<typeof ImageDefaultsSchema>;

/** A row's `image_defaults` in Lemonade's listed shape; a field of the wrong type takes its default. */
function imageDefaultsOf(raw: Record<string, unknown>): ImageDefaults {
  const num = (v: unknown, fallback: number) => (typeof v === "number" && Number.isFinite(v) ? v : fallback);
  return {
    steps: num(raw.steps, 20),
    cfg_scale: num(raw.cfg_scale, 7.0),
    width: num(raw.width, 512),
    height: num(raw.height, 512),
    ...(typeof raw.sampling_method === "string" && raw.sampling_method ? { sampling_method: raw.sampling_method } : {}),
    ...(typeof raw.flow_shift === "number" && raw.flow_shift > 0 ? { flow_shift: raw.flow_shift } : {}),
  };
}

/** The image defaults that are sd-cpp recipe options; the rest are sd-server's own extras. */
const IMAGE_OPTION_KEYS = ["steps", "cfg_scale", "width", "height"];

/** The label each deployment type is called by. */
const LABEL_OF: Record<ModelType, string> = {
  llm: "chat",
  embedding: "embeddings",
  reranking: "reranking",
  transcription: "transcription",
  image: "image",
  tts: "tts",
  "audio-generation": "audio-generation",
  classification: "classification",
  mesh: "3d",
};

/** The spelling a label is kept under (the docs accept `embedding` and `classifier` as aliases). */
const canonicalLabel = (l: string) => (l === "embedding" ? "embeddings" : l === "classifier" ? "classification" : l);

/** Normalizes labels and derives the model type; refuses label sets that describe no real model. */
export function classify(id: string, recipe: string, labels: string[]): { type: ModelType; labels: string[] } {
  const named = [...new Set(labels.filter((l) => l in DEPLOYMENT).map(canonicalLabel))];
  if (named.length > 1) {
    throw new CatalogError(
      "invalid_labels",
      `Model '${id}': a model deploys in exactly one mode, but these labels name two: ${named.map((l) => `'${l}'`).join(" and ")}. Register one model per mode.`,
    );
  }
  const served = RECIPE_SPECS[recipe]?.serves;
  const defaultLabel = RECIPE_SPECS[recipe]?.defaultLabel;
  if (named.length && served && !served.includes(DEPLOYMENT[named[0]!]!)) {
    const serves = served ? served.map((t) => `'${LABEL_OF[t]}'`).join(", ") : "none";
    throw new CatalogError(
      "invalid_labels",
      `Model '${id}': recipe '${recipe}' cannot serve '${named[0]}'. It serves ${serves}.${defaultLabel ? ` Omit the label to deploy as '${defaultLabel}'.` : ""}`,
    );
  }
  const type = named.length ? DEPLOYMENT[named[0]!]! : defaultLabel ? DEPLOYMENT[defaultLabel]! : "llm";
  const out = labels.map(canonicalLabel);
  if (!named.length && defaultLabel) out.unshift(defaultLabel);
  out.push(...(RECIPE_SPECS[recipe]?.defaultCapabilities ?? []));
  return { type, labels: [...new Set(out)] };
}

/** A local checkpoint's file; a folder stands for a whole-repository model by its index file. */
function localFile(checkpoint: string, index: string | undefined): string {
  if (!index) return checkpoint;
  try {
    return statSync(checkpoint).isDirectory() ? join(checkpoint, index) : checkpoint;
  } catch {
    return checkpoint;
  }
}

/** Checkpoint roles only an NPU engine reads; no engine here does, so they are not files to fetch. */
const NPU_ONLY_ROLES = ["npu_cache"];

function fromRow(id: string, row: RegistryRow, source: ModelSource): CatalogModel {
  const checkpoints: Record<string, string> = { ...(row.checkpoints ?? {}) };
  for (const role of NPU_ONLY_ROLES) delete checkpoints[role];
  if (row.checkpoint) checkpoints.main = row.checkpoint;
  // A published collection is its repository's manifest file (models/omni-manifest.ts).
  const fromManifest = row.recipe === OMNI_RECIPE && !Array.isArray(row.components) && checkpoints.main !== undefined;
  if (fromManifest) checkpoints.main = manifestCheckpoint(checkpoints.main!);
  if (row.mmproj && checkpoints.main && !checkpoints.mmproj) {
    checkpoints.mmproj = `${parseCheckpoint(checkpoints.main).repo}:${row.mmproj}`;
  }
  // A recipe this server has no engine for is listed only with model filtering off; its labels are
  // kept as Lemonade wrote them (they may name modes no recipe here serves).
  const { type, labels } = RECIPE_SPECS[row.recipe]
    ? classify(id, row.recipe, row.labels ?? [])
    : row.recipe === ROUTER_RECIPE || row.recipe === OMNI_RECIPE
      ? { type: "llm" as ModelType, labels: ["chat", ...(row.labels ?? []).filter((l) => l !== "chat")] }
      : { type: "llm" as ModelType, labels: row.labels ?? [] };
  // A user model's labels are a sorted set with `custom` among them, as Lemonade keeps a
  // registration's, whether it was registered or written into user_models.json by hand.
  const listed = id.startsWith("user.") ? [...new Set(["custom", ...labels])].sort() : labels;
  const defaults = Object.entries(row.image_defaults ?? {});
  const imageOptions = Object.fromEntries(defaults.filter(([k]) => IMAGE_OPTION_KEYS.includes(k)));
  const imageExtras = Object.fromEntries(defaults.filter(([k]) => !IMAGE_OPTION_KEYS.includes(k)));
  return {
    id,
    recipe: row.recipe,
    type,
    labels: listed,
    checkpoints,
    suggested: row.suggested ?? false,
    size: row.size,
    source,
    registryOptions: { ...imageOptions, ...(row.recipe_options ?? {}) },
    ...(defaults.length ? { imageExtras } : {}),
    ...(row.image_defaults && typeof row.image_defaults === "object" && !Array.isArray(row.image_defaults) ? { imageDefaults: imageDefaultsOf(row.image_defaults) } : {}),
    ...(row.source === "modelscope" ? { registry: "modelscope" as const } : {}),
    ...(row.recipe === ROUTER_RECIPE ? { router: routerOf(row) } : {}),
    ...(row.recipe === OMNI_RECIPE && Array.isArray(row.components) ? { omni: { spec: { components: row.components, models: [], ...(row.system_prompt ? { systemPrompt: row.system_prompt } : {}) } } } : {}),
    ...(fromManifest ? { omni: { spec: null } } : {}),
  };
}

function routerOf(row: RegistryRow): NonNullable<CatalogModel["router"]> {
  const policy = checkRouting(row, () => true);
  return { policy, version: row.version ?? "1", routing: row.routing, components: row.components ?? policy.candidates };
}

/** A registered routing policy: a model that picks, per request, one of its candidates. */
export const ROUTER_RECIPE = "collection.router";
/** A bundle of models one chat drives with server-side tools. */
export const OMNI_RECIPE = "collection.omni";

interface MetaCacheEntry {
  mtimeMs: number;
  size: number;
  meta: GgufMetadata | null;
}

export interface CatalogOptions {
  cacheDir: string;
  hfCacheDir: string;
  /** ModelScope's files, in the same layout as the Hugging Face cache. */
  msCacheDir?: string;
  extraModelsDir: string | null;
  /** Recipes that can run on this machine; models of others are filtered out. */
  isRecipeSupported: (recipe: string) => boolean;
  /** Why a recipe cannot run here, as its backends' statuses say. */
  unsupportedReason?: (recipe: string) => string;
  onWarning?: (message: string) => void;
  /** Models served elsewhere (cloud providers), listed after the local ones. */
  remote?: () => readonly CatalogModel[];
}

export class Catalog {
  private builtInMade?: { models: CatalogModel[]; ids: Set<string> };
  private user: CatalogModel[];
  private userRows: Record<string, RegistryRow>;
  private readonly metaCache = new Map<string, MetaCacheEntry>();
  /** The headers read in earlier runs (gguf_headers.json), so a restart does not read them again. */
  private readonly headers: GgufHeaderCache;
  private readonly manifestCache = new Map<string, { mtimeMs: number; spec: OmniSpec }>();

  constructor(
    private readonly opts: CatalogOptions,
    private readonly aliases: AliasStore,
  ) {
    const userRows = readJsonFile<Record<string, RegistryRow>>(join(opts.cacheDir, "user_models.json"), {});
    if (typeof userRows !== "object" || userRows === null || Array.isArray(userRows)) {
      throw new Error(`${join(opts.cacheDir, "user_models.json")} must hold a JSON object of model name -> definition`);
    }
    this.userRows = userRows;
    this.headers = new GgufHeaderCache(join(opts.cacheDir, "gguf_headers.json"), opts.onWarning);
    this.user = [];
    for (const [name, row] of Object.entries(userRows)) {
      const id = name.startsWith("user.") ? name : `user.${name}`;
      try {
        // An entry that does not say is suggested, as Lemonade reads a stored user model.
        this.user.push(fromRow(id, { suggested: true, ...row }, "huggingface"));
      } catch (err) {
        // A bad stored entry is skipped with an error naming it; the file is left for the user to fix.
        opts.onWarning?.(`Skipping user model ${id}: ${(err as Error).message}`);
      }
    }
  }

  /** The built-in models, made from server_models.json on first use. */
  private get builtIn(): CatalogModel[] {
    return this.builtInOnce().models;
  }

  private get builtInIds(): Set<string> {
    return this.builtInOnce().ids;
  }

  private builtInOnce(): { models: CatalogModel[]; ids: Set<string> } {
    if (!this.builtInMade) {
      const rows = JSON.parse(readFileSync(builtInFile as unknown as string, "utf8")) as Record<string, RegistryRow>;
      const models = Object.entries(rows).map(([id, row]) => fromRow(id, row, "huggingface"));
      this.builtInMade = { models, ids: new Set(models.map((m) => m.id)) };
    }
    return this.builtInMade;
  }

  /** Validates and stores a `user.*` model in user_models.json (disk first, then memory). */
  registerUser(id: string, row: RegistryRow): CatalogModel {
    const reserved = reservedNameProblem(id);
    if (reserved) throw new CatalogError("invalid_labels", reserved);
    if (!id.startsWith("user.") || id.length <= 5) {
      throw new CatalogError("invalid_labels", `Registered model definitions must use a non-empty \`user.*\` name, for example \`user.Phi-4-Mini-GGUF\`. Received: ${clip(id)}`);
    }
    // The name becomes a folder name (the engine's work folder): no separators, dots or controls.
    if (!/^user\.[A-Za-z0-9_+-][A-Za-z0-9._+-]*$/.test(id) || id.includes("..")) {
      throw new CatalogError("invalid_labels", `Model '${clip(id)}': a name may use letters, digits and . _ + - only`);
    }
    // Lemonade stores a registration's labels as it lists them (the deployment label included)
    // and marks it suggested.
    const model = fromRow(id, { ...row, suggested: true }, "huggingface");
    row = { ...row, labels: model.labels, suggested: true };
    if (!model.checkpoints.main && !model.router && !model.omni) throw new CatalogError("invalid_labels", `Model '${id}': a main checkpoint is required (checkpoint or checkpoints.main)`);
    for (const [role, checkpoint] of Object.entries(model.checkpoints)) {
      const problem = checkpointProblem(checkpoint);
      if (problem) throw new CatalogError("invalid_labels", `Model '${clip(id)}': checkpoint ${role} is refused: ${problem}`);
    }
    const key = id.slice("user.".length);
    const rows = { ...this.userRows, [key]: row };
    writeJsonFileAtomic(join(this.opts.cacheDir, "user_models.json"), rows);
    this.userRows = rows;
    this.user = [...this.user.filter((m) => m.id !== id), model];
    return model;
  }

  /** Removes a `user.*` model's entry; false when it had none. */
  unregisterUser(id: string): boolean {
    const key = id.slice("user.".length);
    if (!id.startsWith("user.") || !(key in this.userRows)) return false;
    const { [key]: _removed, ...rows } = this.userRows;
    writeJsonFileAtomic(join(this.opts.cacheDir, "user_models.json"), rows);
    this.userRows = rows;
    this.user = this.user.filter((m) => m.id !== id);
    return true;
  }

  /** Serves another extra-models folder from now on (POST /internal/set `extra_models_dir`). */
  setExtraModelsDir(dir: string | null): void {
    this.opts.extraModelsDir = dir;
    changed();
  }

  /** The watcher on the extra-models folder, and the folder it watches. */
  private extraWatch?: { dir: string; close(): void };

  /** Files added, removed or changed in the extra-models folder invalidate cached listings. Begun
   * by the first scan, not at start-up: until something was listed there is nothing to invalidate,
   * and an idle server keeps no watcher thread (bench memory: idle 0.6 MB lower with an extra
   * folder). A folder that does not exist yet is looked for again at the next scan. */
  private watchExtraDir(): void {
    const dir = this.opts.extraModelsDir;
    if (this.extraWatch?.dir === dir) return;
    this.extraWatch?.close();
    this.extraWatch = undefined;
    if (!dir || !existsSync(dir)) return;
    try {
      const watcher = watch(dir, { recursive: true }, () => changed());
      watcher.unref?.();
      this.extraWatch = { dir, close: () => watcher.close() };
    } catch {
      // No watcher on this file system: the listings' short lifetime still catches changes. The
      // folder is noted as tried, so later scans do not try again.
      this.extraWatch = { dir, close: () => {} };
    }
  }

  /** Writes the headers read since the last write now (the server stopping) rather than a moment later. */
  flushHeaders(): void {
    this.headers.save();
  }

  /** GGUF metadata of a local file, re-read only when the file changes (checked once per build).
   * After a restart it may come from gguf_headers.json, which keeps no string longer than 256
   * bytes (models/gguf-header-cache.ts): what is asked of it must not be one. */
  metadata(path: string): GgufMetadata | null {
    return memoInBuild(this.metadataTable, path, () => this.readMetadata(path));
  }

  private readonly metadataTable = Symbol("metadata");

  private readMetadata(path: string): GgufMetadata | null {
    let st;
    try {
      st = statSync(path);
    } catch {
      return null;
    }
    if (!st.isFile()) return null;
    const hit = this.metaCache.get(path);
    if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.meta;
    let meta: GgufMetadata | null = this.headers.get(path, st) ?? null;
    if (!meta) {
      try {
        // Scalars only: the listing needs the architecture, pooling and context, not the vocabulary.
        meta = readGgufMetadata(path, { arrays: false, tensors: false });
        this.headers.put(path, st, meta);
      } catch (err) {
        this.opts.onWarning?.(`Cannot read GGUF metadata of ${path}: ${(err as Error).message}`);
      }
    }
    this.metaCache.set(path, { mtimeMs: st.mtimeMs, size: st.size, meta });
    return meta;
  }

  /** Labels of a local GGUF from what it says about itself: rank pooling reranks, other pooling
   * embeds. `custom` first, as Lemonade labels every model of the extra folder. */
  private localLabels(mainPath: string, hasMmproj: boolean): string[] {
    const meta = this.metadata(mainPath);
    const arch = meta ? ggufScalar(meta, "general.architecture") : undefined;
    const pooling = meta && arch ? ggufScalar(meta, `${arch}.pooling_type`) : undefined;
    if (pooling === 4) return ["custom", "reranking"];
    if ((typeof pooling === "number" && pooling > 0) || /bert/.test(String(arch ?? ""))) return ["custom", "embeddings"];
    return hasMmproj ? ["custom", "chat", "vision"] : ["custom", "chat"];
  }

  /** The extra folder's models, scanned again once the folder changed (its watcher counts a
   * change) or the scan is EXTRA_SCAN_LIFETIME_MS old: a scan stats every file, and every lookup
   * and listing reads the catalog (bench catalog, 50 extra models: /v1/health 2.5k -> 16k req/s). */
  private extraScan?: { generation: number; at: number; models: CatalogModel[] };

  private extraModels(): CatalogModel[] {
    const now = performance.now();
    const cached = this.extraScan;
    if (cached && cached.generation === generation() && now - cached.at < EXTRA_SCAN_LIFETIME_MS) return cached.models;
    // Watch, then read the count: a change while scanning makes the next read scan again.
    this.watchExtraDir();
    const at = generation();
    const models = this.scanExtra();
    this.extraScan = { generation: at, at: now, models };
    return models;
  }

  private scanExtra(): CatalogModel[] {
    const dir = this.opts.extraModelsDir;
    if (!dir || !existsSync(dir)) return [];
    return scanExtraModels(dir).map((m): CatalogModel => {
      const id = `extra.${m.name}`;
      const { type, labels } = classify(id, GGUF_RECIPE, this.localLabels(m.main, !!m.mmproj));
      return {
        id,
        recipe: GGUF_RECIPE,
        type,
        labels,
        checkpoints: m.mmproj ? { main: m.main, mmproj: m.mmproj } : { main: m.main },
        // The user put it there to use it: Lemonade lists every extra model as suggested.
        suggested: true,
        size: diskSizeGb(m.sizeBytes),
        source: "extra_models_dir",
        registryOptions: {},
        ...(m.folderAlias ? { folderAlias: m.folderAlias } : {}),
      };
    });
  }

  /** Whether `name` is a built-in model's (bare) name, exactly as server_models.json spells it. */
  isBuiltIn(name: string): boolean {
    return this.builtInIds.has(name);
  }

  /** Whether `id` is a built-in's name that a registered or imported model holds too, so that the
   * bare name is theirs (matched as find matches, case aside); cheap enough for a request's path. */
  isShadowedBuiltIn(id: string): boolean {
    if (!this.isBuiltIn(id)) return false;
    const index = catalogIndex(this.all());
    // A cloud provider named `user` or `extra` lists ids of those shapes too; they shadow nothing.
    const local = (name: string) => {
      const source = index.byLowerId.get(name.toLowerCase())?.source;
      return source !== undefined && source !== "cloud";
    };
    return local(`user.${id}`) || local(`extra.${id}`) || index.byFolderAlias.has(id);
  }

  /** The last all(): its parts, and the array made of them. */
  private allMade?: { parts: readonly (readonly CatalogModel[])[]; all: readonly CatalogModel[] };

  /** Every model known, supported here or not: the same (frozen) array while its parts are the
   * same arrays, so what is derived from it (catalogIndex) is made once per change, not per request. */
  all(): readonly CatalogModel[] {
    const parts = [this.builtIn, this.user, this.extraModels(), this.opts.remote?.() ?? NO_MODELS];
    const made = this.allMade;
    if (made && parts.every((part, i) => part === made.parts[i])) return made.all;
    const all = Object.freeze(parts.flat());
    this.allMade = { parts, all };
    return all;
  }

  isSupported(model: CatalogModel): boolean {
    // Collections run on their components.
    return this.opts.isRecipeSupported(model.recipe) || model.router !== undefined || model.omni !== undefined;
  }

  /** Looks a name up through aliases and Ollama's `:latest` tag; undefined when unknown. */
  find(name: string): CatalogModel | undefined {
    const hit = this.lookup(name);
    if (hit || !this.extraScan) return hit;
    // Not known: a file dropped into the extra folder a moment ago may not have reached the
    // watcher yet, so the folder is scanned afresh before the answer is no.
    this.extraScan = undefined;
    return this.lookup(name);
  }

  private lookup(name: string): CatalogModel | undefined {
    // A name longer than any can be names nothing: no alias walk or comparison is spent on it.
    if (name.length > MAX_MODEL_NAME_BYTES || Buffer.byteLength(name) > MAX_MODEL_NAME_BYTES) return undefined;
    const index = catalogIndex(this.all());
    const exact = (id: string) => index.byId.get(id) ?? index.byLowerId.get(id.toLowerCase());
    // A bare name is the registered model's, else the extra folder's, else the built-in's (which
    // always answers to `builtin.<name>`): registered > imported > built-in. A split folder's old
    // name comes after the models themselves but before a built-in, as Lemonade ranks it.
    const folder = (alias: string) => index.byFolderAlias.get(alias);
    const byId = (id: string) => {
      if (id.startsWith(BUILTIN_PREFIX)) return this.builtIn.find((m) => m.id === id.slice(BUILTIN_PREFIX.length));
      if (id.startsWith("extra.")) return exact(`user.${id}`) ?? exact(id) ?? folder(id.slice("extra.".length));
      return exact(`user.${id}`) ?? exact(`extra.${id}`) ?? folder(id) ?? exact(id);
    };
    const direct = byId(this.aliases.resolve(name));
    if (direct) return direct;
    if (name.endsWith(":latest")) return byId(this.aliases.resolve(name.slice(0, -":latest".length)));
    return undefined;
  }

  /** Which of the three sources a local model is (precedence: user > extra > built-in) and its
   * bare name; undefined for a model served elsewhere (cloud), which is named by its id alone. */
  private origin(model: CatalogModel): { source: NamingSource; bare: string } | undefined {
    if (model.source === "cloud") return undefined;
    if (model.source === "extra_models_dir") return { source: "extra", bare: model.id.slice("extra.".length) };
    if (model.id.startsWith("user.")) return { source: "user", bare: model.id.slice("user.".length) };
    return this.isBuiltIn(model.id) ? { source: "builtin", bare: model.id } : undefined;
  }

  /** How listings name a model (the custom-models guide's "What the API emits"): `id`, the bare
   * name when the model's source wins that name, else its canonical `<source>.<name>`; a
   * collection of the user's or the extra folder's is listed by its canonical id even when it
   * wins, so the id listed is the one it is registered, fetched and chatted by. `shadowed`: a
   * source of higher precedence holds the bare name. `all` is the catalog, when the caller has it. */
  naming(model: CatalogModel, all: readonly CatalogModel[] = this.all()): ModelNaming {
    const origin = this.origin(model);
    if (!origin) return { id: model.id, canonicalId: model.id, shadowed: false };
    const canonicalId = `${origin.source}.${origin.bare}`;
    const outranks = SOURCE_PRECEDENCE.slice(0, SOURCE_PRECEDENCE.indexOf(origin.source));
    // A split extra folder's old name takes a built-in's bare name too (Lemonade's input alias).
    const names = catalogIndex(all);
    const shadowed = outranks.some((s) => names.localIds.has(`${s}.${origin.bare}`)) || (origin.source === "builtin" && names.folderAliases.has(origin.bare));
    const collection = model.router !== undefined || model.omni !== undefined;
    const prefixed = shadowed || (collection && origin.source !== "builtin");
    return { id: prefixed ? canonicalId : origin.bare, canonicalId, shadowed };
  }

  /** The id listings show a model by (see naming). */
  publicId(model: CatalogModel, all?: readonly CatalogModel[]): string {
    return this.naming(model, all).id;
  }

  /** The id listings show the model whose catalog id is `id` by; `id` itself once no model has
   * it (a registration since deleted), as Lemonade names a model it no longer lists. */
  publicIdOf(id: string, all: readonly CatalogModel[] = this.all()): string {
    const model = catalogIndex(all).byId.get(id);
    return model ? this.publicId(model, all) : id;
  }

  /** Like find, but a missing or filtered-out model is a CatalogError, worded as Lemonade's (a
   * missing one with the first names in the registry, so a client sees what it could ask for). */
  get(name: string): CatalogModel {
    const model = this.find(name);
    const requested = { requested_model: clip(name) };
    if (!model) {
      const all = this.all();
      const names = all.filter((m) => this.isSupported(m)).map((m) => this.publicId(m, all)).sort();
      const some = names.slice(0, SUGGESTIONS).map((n) => `'${n}'`).join(", ");
      const more = names.length > SUGGESTIONS ? `, and ${names.length - SUGGESTIONS} more` : "";
      const suggest = names.length ? `Available models include: ${some}${more}. ` : "";
      throw new CatalogError(
        "model_not_found",
        `Model '${clip(name)}' was not found. ${suggest}Use 'lemonade list' or GET /api/v1/models?show_all=true to see all available models.`,
        "model",
      ).with({ fields: requested });
    }
    if (!this.isSupported(model)) {
      throw new CatalogError("model_not_supported", `Model '${clip(name)}' is not available on this system. ${this.unsupportedReason(model)}`, "model").with({ fields: requested });
    }
    return model;
  }

  /** Why a model is filtered out here: its recipe's backends' own word, else the recipe's name. */
  unsupportedReason(model: CatalogModel): string {
    const reason = this.opts.unsupportedReason?.(model.recipe);
    return reason || `Its recipe (${model.recipe}) cannot run on this system.`;
  }

  /** Where each checkpoint's bytes are on disk (local path or HF cache), and whether they are
   * there; looked up once per listing build, which asks it several times a model. */
  files(model: CatalogModel): ResolvedFile[] {
    return memoInBuild(this.filesTable, model, () => this.resolveFiles(model));
  }

  /** This catalog's answers to files() within a build (each server's catalog has its own caches). */
  private readonly filesTable = Symbol("files");

  private resolveFiles(model: CatalogModel): ResolvedFile[] {
    const index = RECIPE_SPECS[model.recipe]?.repositoryIndex;
    return Object.entries(model.checkpoints).map(([role, checkpoint]) => {
      const hubDir = model.registry === "modelscope" ? (this.opts.msCacheDir ?? this.opts.hfCacheDir) : this.opts.hfCacheDir;
      const path = model.source === "huggingface" ? findCachedFile(hubDir, checkpoint, index) : localFile(checkpoint, index);
      let sizeBytes = 0;
      let exists = false;
      if (path) {
        try {
          const st = statSync(path);
          exists = st.isFile();
          sizeBytes = st.size;
        } catch {}
      }
      return { role, path: exists ? path : null, exists, sizeBytes };
    });
  }

  isDownloaded(model: CatalogModel): boolean {
    if (RECIPE_SPECS[model.recipe]?.servesWithoutFiles) return true;
    if (model.omni) {
      // Not before its manifest is: until then its components are unknown.
      const spec = this.omniSpec(model);
      return spec !== null && spec.components.every((c) => {
        const part = this.find(c);
        return part !== undefined && part.omni === undefined && this.isDownloaded(part);
      });
    }
    const files = this.files(model);
    if (!files.every((f) => f.exists)) return false;
    const main = files.find((f) => f.role === "main")?.path;
    const beside = RECIPE_SPECS[model.recipe]?.repositoryFiles ?? [];
    return !main || beside.every((f) => existsSync(join(dirname(main), f)));
  }

  /** A collection's components: as registered, or as its downloaded manifest says (null before
   * the manifest is downloaded). A manifest that is not one is an error. */
  omniSpec(model: CatalogModel): OmniSpec | null {
    if (!model.omni) return null;
    if (model.omni.spec) return model.omni.spec;
    const file = this.files(model).find((f) => f.role === "main");
    if (!file?.path) return null;
    if (file.sizeBytes > MAX_MANIFEST_BYTES) throw new CatalogError("invalid_labels", `${model.id}'s collection manifest is too large to be one`);
    const hit = this.manifestCache.get(file.path);
    const mtimeMs = statSync(file.path).mtimeMs;
    if (hit?.mtimeMs === mtimeMs) return hit.spec;
    const spec = parseOmniManifest(readFileSync(file.path, "utf8"), model.checkpoints.main!);
    this.manifestCache.set(file.path, { mtimeMs, spec });
    return spec;
  }

  /** The byte length of the longest token in the model's GGUF vocabulary, when its main file is present. */
  longestTokenBytes(model: CatalogModel): number | undefined {
    const main = this.files(model).find((f) => f.role === "main");
    if (!main?.path || !main.path.toLowerCase().endsWith(".gguf")) return undefined;
    return this.metadata(main.path)?.longestTokenBytes;
  }

  /** The largest context the model's GGUF says it supports, when its main file is present. */
  maxContextWindow(model: CatalogModel): number | undefined {
    const main = this.files(model).find((f) => f.role === "main");
    if (!main?.path || !main.path.toLowerCase().endsWith(".gguf")) return undefined;
    const meta = this.metadata(main.path);
    const arch = meta && ggufScalar(meta, "general.architecture");
    const ctx = meta && arch ? ggufScalar(meta, `${arch}.context_length`) : undefined;
    return typeof ctx === "number" ? ctx : undefined;
  }
}
