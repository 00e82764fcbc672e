// How models look to Lemonade and OpenAI clients: the model object `/v1/models` lists, the
// options-by-layer view, and a `/v1/health` entry. Each combines the catalog (what exists), the
// scheduler (what runs) and the saved options.
import { basename, relative, sep } from "node:path";
import { parseCheckpoint } from "../models/hf-cache.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { OmniSpec } from "../models/omni-manifest.ts";
import { mergeSavedOptions, optionsToSave } from "../models/recipe-options.ts";
import type { Instance } from "../runtime/scheduler.ts";
import type { ServerContext } from "../runtime/context.ts";
import { optionSpecs, type Options } from "../spec/recipes.ts";
import type { ModelOptionsRequest, ModelOptionsResponse, ModelResponse } from "../spec/models.ts";
import type { HealthResponse, RpcSplitView } from "../spec/operations.ts";
import { tuningView } from "./tuning.ts";

/** A model's checkpoints as a client sees them: a local model's files are named relative to the
 * extra-models folder (or by file name) unless the client asked for paths. */
export function shownCheckpoints(ctx: Pick<ServerContext, "config">, model: CatalogModel, includePaths: boolean): Record<string, string> {
  // A published collection is its repository, as the registry names it (its manifest file is how
  // the server fetches it).
  if (model.omni && !model.omni.spec && model.checkpoints.main) return { ...model.checkpoints, main: parseCheckpoint(model.checkpoints.main).repo };
  if (includePaths || model.source === "huggingface") return model.checkpoints;
  const dir = ctx.config.extraModelsDir;
  const shown = (path: string) => (dir && path.startsWith(dir + sep) ? relative(dir, path) : basename(path));
  return Object.fromEntries(Object.entries(model.checkpoints).map(([role, path]) => [role, shown(path)]));
}

/** A model's object in listings; `listed.id` names it otherwise than its listed id (an alias, the
 * name a job asked for), `listed.all` is the catalog when the caller has it. */
export function modelObject(
  ctx: Pick<ServerContext, "catalog" | "config" | "library" | "options" | "recipeOptions" | "scheduler">,
  model: CatalogModel,
  includePaths = false,
  listed: { id?: string; all?: readonly CatalogModel[] } = {},
): ModelResponse {
  const naming = ctx.catalog.naming(model, listed.all);
  const files = ctx.catalog.files(model);
  const instance = ctx.scheduler.list().find((s) => s.model.id === model.id);
  const saved = ctx.recipeOptions.saved(model.id);
  const maxContext = ctx.catalog.maxContextWindow(model);
  // What the engine runs with, or would be loaded with (auto sizes capped as the load caps them).
  const takesCtx = "ctx_size" in optionSpecs(model.recipe);
  const contextLength = instance?.spec.ctxSize ?? (takesCtx ? ctx.options.ctxSize(model, ctx.options.resolve(model)) : undefined);
  const hub = model.source === "huggingface";
  const checkpoints = shownCheckpoints(ctx, model, includePaths);
  return {
    id: listed.id ?? naming.id,
    created: 1234567890,
    object: "model" as const,
    owned_by: "lemonade" as const,
    checkpoint: checkpoints.main ?? "",
    recipe: model.recipe,
    ...(model.size ? { size: model.size } : {}),
    ...(maxContext !== undefined ? { max_context_window: maxContext } : {}),
    ...(contextLength !== undefined ? { context_length: contextLength } : {}),
    downloaded: ctx.catalog.isDownloaded(model),
    update_available: ctx.library.updatesAvailable.has(model.id),
    suggested: model.suggested,
    labels: model.labels,
    components: [],
    checkpoints,
    checkpoint_status: files.map((f) => ({
      type: f.role,
      present: f.exists,
      required: true,
      registry: hub ? (model.registry ?? "huggingface") : "",
      ...(includePaths && f.path ? { path: f.path } : {}),
    })),
    source: model.source,
    canonical_id: naming.canonicalId,
    shadowed: naming.shadowed,
    // Every model has one, as in Lemonade: a local or cloud model names the default registry.
    registry_source: model.registry ?? "huggingface",
    recipe_options: { ...model.registryOptions, ...saved },
    ...(model.imageDefaults ? { image_defaults: model.imageDefaults } : {}),
    ...(model.cloud ? cloudFields(model.cloud) : {}),
    ...(model.router ? { ...componentFields(ctx, model.router.components, includePaths, listed.all), version: model.router.version, routing: model.router.routing } : {}),
    ...(model.omni ? omniFields(ctx, model, includePaths, listed.all) : {}),
  };
}

/** A collection's component by the id listings show it by, as Lemonade lists components; a name
 * the catalog does not know, as registered. */
function listedName(ctx: Pick<ServerContext, "catalog">, name: string, all?: readonly CatalogModel[]): string {
  const model = ctx.catalog.find(name);
  return model ? ctx.catalog.publicId(model, all) : name;
}

/** A collection's components, and each one's full model object (so an export can be imported elsewhere). */
function omniFields(
  ctx: Pick<ServerContext, "catalog" | "config" | "library" | "options" | "recipeOptions" | "scheduler">,
  collection: CatalogModel,
  includePaths: boolean,
  all?: readonly CatalogModel[],
): { components: string[]; models: (Record<string, unknown> | null)[]; system_prompt?: string } {
  // A published collection lists its components once its manifest is downloaded (a broken one, none).
  let omni: OmniSpec | null = null;
  try {
    omni = ctx.catalog.omniSpec(collection);
  } catch {}
  if (!omni) return { components: [], models: [] };
  return { ...componentFields(ctx, omni.components, includePaths, all), ...(omni.systemPrompt ? { system_prompt: omni.systemPrompt } : {}) };
}

/** A collection's components by their listed ids, and each one's full model object, in the same
 * order (one no longer registered is null). */
function componentFields(
  ctx: Pick<ServerContext, "catalog" | "config" | "library" | "options" | "recipeOptions" | "scheduler">,
  components: string[],
  includePaths: boolean,
  all?: readonly CatalogModel[],
): { components: string[]; models: (Record<string, unknown> | null)[] } {
  const models = components.map((c) => ctx.catalog.find(c));
  return {
    components: components.map((c) => listedName(ctx, c, all)),
    models: models.map((m): Record<string, unknown> | null => (m ? modelObject(ctx, m, includePaths, { all }) : null)),
  };
}

/** What a cloud model's listing adds: its provider, and the limits and costs the provider reports. */
function cloudFields(c: NonNullable<CatalogModel["cloud"]>) {
  return {
    cloud_provider: c.provider,
    checkpoint: c.upstreamId,
    ...(c.contextLength !== undefined ? { context_length: c.contextLength } : {}),
    ...(c.maxOutputTokens !== undefined ? { max_output_tokens: c.maxOutputTokens, max_completion_tokens: c.maxOutputTokens } : {}),
    ...(c.costInputPerMillion !== undefined ? { cost_input_per_million: c.costInputPerMillion } : {}),
    ...(c.costOutputPerMillion !== undefined ? { cost_output_per_million: c.costOutputPerMillion } : {}),
  };
}

/** Every model to list: downloaded ones (or all with `showAll`), plus aliases of listed models. */
export function listModels(ctx: Pick<ServerContext, "aliases" | "catalog" | "config" | "library" | "options" | "recipeOptions" | "scheduler">, showAll: boolean, includePaths: boolean): ModelResponse[] {
  const all = ctx.catalog.all();
  const shown = all.filter((m) => ctx.catalog.isSupported(m) && (showAll || ctx.catalog.isDownloaded(m)));
  const listed = shown.map((m) => modelObject(ctx, m, includePaths, { all }));
  // An alias's target is found by the catalog's id, which need not be the id it is listed by.
  const byModel = new Map(shown.map((m, i) => [m.id, listed[i]!]));
  const ids = new Set(listed.map((m) => m.id));
  for (const { alias, target } of ctx.aliases.list()) {
    const model = ctx.catalog.find(target);
    const base = model && byModel.get(model.id);
    if (base && !ids.has(alias)) listed.push({ ...base, id: alias });
  }
  return listed;
}

/** A model's options by layer. `name` is the id the request named it by (trimmed), which the view
 * answers with, as Lemonade does, so `effective` replays as the caller's own load body. */
export function optionsView(ctx: Pick<ServerContext, "config" | "options" | "recipeOptions">, model: CatalogModel, name = model.id, saved: Options = ctx.recipeOptions.saved(model.id)): ModelOptionsResponse {
  const resolution = ctx.options.resolution(model, undefined, saved);
  const effective = resolution.options;
  const defaults = ctx.options.resolve(model, undefined, {});
  const takesCtx = "ctx_size" in optionSpecs(model.recipe);
  return {
    model_name: name,
    recipe: model.recipe,
    saved: ctx.recipeOptions.saved(model.id),
    effective: { ...effective, model_name: name },
    defaults: { ...defaults, model_name: name },
    ...(takesCtx ? { resolved_ctx_size: ctx.options.ctxSize(model, effective) } : {}),
    // The load this view describes, ready to paste (as the real server prints it).
    // The key, on a server that needs one, is left for the caller as the base URL is (lemonade.md).
    load_command: `curl -X POST $LEMONADE_BASE_URL/v1/load -H "Content-Type: application/json"${ctx.config.apiKey ? ' -H "Authorization: Bearer $LEMONADE_API_KEY"' : ""} -d '${JSON.stringify({ ...effective, model_name: name })}'`,
    provenance: resolution.sources,
    ...(resolution.tuning ? { tuning: tuningView(resolution.tuning) } : {}),
  };
}

/** POST /v1/models/{id}/options: merges the body into the saved entry (or, with `dry_run`,
 * only shows what that would give). */
export function saveOptions(ctx: Pick<ServerContext, "config" | "options" | "recipeOptions" | "scheduler">, model: CatalogModel, body: ModelOptionsRequest, name = model.id): ModelOptionsResponse {
  const next = mergeSavedOptions(model.recipe, ctx.recipeOptions.saved(model.id), body);
  // A value the next load would fail on (a reserved flag, an unknown backend) is refused now, not then.
  ctx.scheduler.checkOptions(model, next);
  if (body.dry_run === true) return optionsView(ctx, model, name, next);
  ctx.recipeOptions.replace(model.id, next);
  return optionsView(ctx, model, name);
}

/** `save_options` on a load: the request's concrete values replace the saved entry. */
export function saveLoadOptions(ctx: Pick<ServerContext, "recipeOptions">, model: CatalogModel, request: Record<string, unknown>): void {
  ctx.recipeOptions.replace(model.id, optionsToSave(model.recipe, ctx.recipeOptions.saved(model.id), request));
}

/** The options whose value is not the recipe's default. */
function setOptions(recipe: string, options: Options): Options {
  const specs = optionSpecs(recipe);
  return Object.fromEntries(Object.entries(options).filter(([key, value]) => specs[key]?.default !== value));
}

/** `/v1/health`'s `all_models_loaded` (MCP's lemonade_list_models reports the same), each model
 * by its listed id, as Lemonade reports it. */
export function loadedEntries(ctx: Pick<ServerContext, "catalog" | "cloud" | "proxy" | "scheduler">, all = ctx.catalog.all()): HealthResponse["all_models_loaded"] {
  const local = ctx.scheduler.list().map((s) =>
    healthEntry(s, ctx.catalog.publicId(s.model, all), ctx.scheduler.isLoading(s.model.id), { queued: ctx.proxy.queued(s), slotsInUse: ctx.proxy.slotsInUse(s), memoryBytes: ctx.scheduler.footprint(s) }),
  );
  return [...local, ...ctx.proxy.loadedCloud().map((c) => cloudHealthEntry(ctx, c, all))];
}

/** A loaded cloud model's entry: no engine of its own, in the pool no limit counts. */
function cloudHealthEntry(
  ctx: Pick<ServerContext, "catalog" | "cloud">,
  { model, lastUse, inflight, streaming }: ReturnType<ServerContext["proxy"]["loadedCloud"]>[number],
  all: readonly CatalogModel[],
): HealthResponse["all_models_loaded"][number] {
  const info = model.cloud!;
  return {
    model_name: ctx.catalog.publicId(model, all),
    checkpoint: info.upstreamId,
    last_use: lastUse / 1000,
    type: model.type,
    device: "none",
    pinned: false,
    is_busy: inflight > 0,
    status: inflight > 0 ? "in_use" : "ready",
    is_streaming: streaming > 0,
    queue_depth: 0,
    slots: 0,
    slots_in_use: inflight,
    recipe: model.recipe,
    residency_class: "standard",
    slot_pool: "unmetered",
    pid: 0,
    backend_alive: true,
    // Lemonade's cloud backend is healthy while loaded: a request in flight shows in status, not here.
    backend_health: "ready",
    loaded: true,
    watchdog_reset: false,
    recipe_options: {},
    backend_url: ctx.cloud.systemInfo().find((p) => p.name === info.provider)?.base_url ?? "",
    ...(info.contextLength ? { max_context_window: info.contextLength } : {}),
    ...(info.costInputPerMillion !== undefined ? { cost_input_per_million: info.costInputPerMillion } : {}),
    ...(info.costOutputPerMillion !== undefined ? { cost_output_per_million: info.costOutputPerMillion } : {}),
  };
}

/** One entry of `/v1/health`'s `all_models_loaded`; `name` is the model's listed id. */
export function healthEntry(
  instance: Instance<CatalogModel>,
  name: string,
  loading: boolean,
  load: { queued: number; slotsInUse: number; memoryBytes: number | undefined },
): HealthResponse["all_models_loaded"][number] {
  return {
    model_name: name,
    checkpoint: instance.model.checkpoints.main ?? "",
    last_use: instance.lastUse / 1000,
    type: instance.model.type,
    device: "cpu",
    pinned: instance.pinned,
    is_busy: instance.inflight > 0 || loading || instance.tier === "downsizing",
    status: instance.state !== "ready" ? "evicting" : instance.inflight > 0 ? "in_use" : instance.tier === "full" ? "ready" : instance.tier,
    is_streaming: instance.streaming > 0,
    queue_depth: load.queued,
    slots: instance.engine.slots,
    slots_in_use: load.slotsInUse,
    ...(load.memoryBytes !== undefined ? { memory_estimate_bytes: Math.round(load.memoryBytes) } : {}),
    recipe: instance.model.recipe,
    residency_class: instance.residency,
    slot_pool: `${instance.residency}/${instance.model.type}`,
    pid: instance.engine.pid,
    backend_alive: true,
    backend_health: instance.inflight > 0 ? "busy" : "ready",
    loaded: true,
    watchdog_reset: false,
    // Only what was set (by the load, the saved options or the catalog): defaults are left out.
    recipe_options: { ...setOptions(instance.model.recipe, instance.spec.options), ...("ctx_size" in instance.spec.options ? { ctx_size: instance.spec.ctxSize } : {}) },
    // The command line the engine runs, word by word (the executable first), as Lemonade reports it.
    launch_command: [...instance.engine.argv],
    // The backend it runs on, `auto` resolved.
    ...(instance.engine.backend ? { backend: instance.engine.backend } : {}),
    backend_url: `${instance.engine.url}/v1`,
    ...(instance.engine.detail ? { rpc: instance.engine.detail() as RpcSplitView } : {}),
  };
}
