// The model router: which models are resident, loading on first use, evicting the least recently
// used model of a type when a new one needs room, and noticing engines that die.
//
// Rules it keeps:
// - one process per model: concurrent requests for a model that is loading wait for that load;
// - eviction never aborts a request: the victim stops taking new requests ("draining") and is
//   stopped once its in-flight requests finish;
// - pinned models are never evicted; when only pinned models fill a type, a load fails with 409;
// - an engine that exits on its own is logged, forgotten, and started again by the next request.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Catalog, CatalogModel, ModelType } from "../models/catalog.ts";
import {
  optionSpecs,
  resolveOptions,
  validateOption,
  OptionError,
  type Options,
  type RecipeOptionsStore,
} from "../models/recipe-options.ts";
import { checkUserArgs, locateLlamaServer, splitArgs, startLlamaServer } from "../engines/llamacpp.ts";
import { EngineConfigError, EngineStartError, type RunningEngine } from "../engines/process.ts";
import { EngineRegistry } from "../engines/orphans.ts";
import { checkWhisperArgs, locateWhisperServer, startWhisperServer } from "../engines/whispercpp.ts";
import type { Config } from "./config.ts";
import type { Logger } from "./logger.ts";
import { ApiError } from "./errors.ts";
import { E } from "../spec/errors.ts";

export const MODEL_TYPES: ModelType[] = ["llm", "embedding", "reranking", "transcription", "image", "tts"];

type SlotState = "ready" | "draining" | "stopped";

export interface Slot {
  model: CatalogModel;
  engine: RunningEngine;
  options: Options;
  ctxSize: number;
  pinned: boolean;
  lastUse: number;
  loadedAt: number;
  inflight: number;
  streaming: number;
  state: SlotState;
  /** Settles when the slot has no request in flight and is draining or stopped. */
  drained: PromiseWithResolvers<void>;
}

export interface Lease {
  slot: Slot;
  /** The engine's base URL. */
  url: string;
  /** Marks the request as streaming tokens (reported by /v1/health). */
  streaming(): void;
  /** Ends the request's claim on the model; idempotent. */
  release(): void;
}

export interface LoadRequest {
  /** Option values from the request: undefined keeps the saved value, null skips it. */
  options?: Record<string, unknown>;
  pinned?: boolean;
  saveOptions?: boolean;
}

export class Router {
  private readonly slots = new Map<string, Slot>();
  private readonly loading = new Map<string, Promise<Slot>>();
  private readonly typeLocks = new Map<ModelType, Promise<unknown>>();
  private readonly idleTimer: ReturnType<typeof setInterval>;
  /** Where running engines are recorded, so a later server can stop ones this one leaves. */
  private readonly engines: EngineRegistry;
  /** The model most recently used or loaded (`model_loaded` in /v1/health). */
  mostRecent: string | null = null;

  /** Fetches a model's missing files before it loads (set by the server; downloads are models/). */
  prepare: (model: CatalogModel) => Promise<void> = async () => {};
  /** Builds a recipe's backend the first time a model needs it (set by the server). */
  installEngine: (recipe: string, backend: string) => Promise<void> = async () => {};

  constructor(
    private readonly config: Config,
    private readonly catalog: Catalog,
    private readonly optionsStore: RecipeOptionsStore,
    private readonly logger: Logger,
  ) {
    this.idleTimer = setInterval(() => this.evictIdle(), 1000);
    this.idleTimer.unref();
    this.engines = new EngineRegistry(config.cacheDir);
    const reaped = this.engines.reapOrphans();
    if (reaped.length) logger.warn("Router", `Stopped ${reaped.length} engine(s) left running by a server that was killed (pids ${reaped.join(", ")})`);
  }

  /** Models resident now, oldest load first. */
  list(): Slot[] {
    return [...this.slots.values()].filter((s) => s.state !== "stopped");
  }

  /** The catalog entry of a model loaded under exactly this id. */
  loadedModel(id: string): CatalogModel | undefined {
    const slot = this.slots.get(id);
    return slot?.state === "ready" ? slot.model : undefined;
  }

  isLoading(id: string): boolean {
    return this.loading.has(id);
  }

  maxLoaded(): number {
    return this.config.maxLoadedModels;
  }

  /** The server-wide layer of the options chain. */
  configOptions(): Options {
    return { ctx_size: this.config.ctxSize };
  }

  /** Options a load of `model` would use, without the request layer unless given. */
  resolve(model: CatalogModel, request?: Record<string, unknown>, saved = this.optionsStore.saved(model.id)): Options {
    return resolveOptions(model.recipe, { request, saved, registry: model.registryOptions, config: this.configOptions() });
  }

  /** The context size a load would use: `-1` picks the model's own window, capped for memory. */
  resolvedCtxSize(model: CatalogModel, options: Options): number {
    const ctx = options.ctx_size;
    if (typeof ctx === "number" && ctx > 0) return ctx;
    return Math.min(this.catalog.maxContextWindow(model) ?? 4096, 32768);
  }

  /** Claims a model for one request, loading it first when needed. */
  async acquire(name: string, load: LoadRequest = {}): Promise<Lease> {
    // Fast path for the common case, a loaded model named by its id: no catalog scan.
    const direct = this.slots.get(name);
    if (direct?.state === "ready") return this.leaseOf(direct);
    const model = this.catalog.get(name);
    for (;;) {
      const ready = this.slots.get(model.id);
      if (ready?.state === "ready") return this.leaseOf(ready);
      await this.ensureLoaded(model, load);
    }
  }

  /** Loads (or reloads, when the options differ) a model explicitly. */
  async load(name: string, req: LoadRequest): Promise<Slot> {
    const model = this.catalog.get(name);
    this.validateRequestOptions(model, req.options ?? {});
    const current = this.slots.get(model.id);
    if (current?.state === "ready") {
      const wanted = this.resolve(model, req.options);
      if (JSON.stringify(wanted) === JSON.stringify(current.options)) {
        if (req.pinned !== undefined) current.pinned = req.pinned;
        if (req.saveOptions) this.saveLoadOptions(model, req.options ?? {});
        current.lastUse = Date.now();
        this.mostRecent = model.id;
        return current;
      }
      this.logger.info("Router", `Reloading ${model.id} with new options`);
      await this.evict(current);
    }
    const slot = await this.ensureLoaded(model, req);
    if (req.pinned !== undefined) slot.pinned = req.pinned;
    return slot;
  }

  /** Unloads one model (waiting for its requests), or every model; false when `name` was not loaded. */
  async unload(name?: string): Promise<boolean> {
    if (name === undefined) {
      await Promise.all(this.list().map((s) => this.evict(s)));
      return true;
    }
    const model = this.catalog.find(name);
    const slot = model && this.slots.get(model.id);
    if (!slot) return false;
    await this.evict(slot);
    return true;
  }

  /** Unloads every model a predicate picks (e.g. those on a backend being removed). */
  async unloadWhere(pick: (slot: Slot) => boolean): Promise<string[]> {
    const victims = this.list().filter(pick);
    await Promise.all(victims.map((s) => this.evict(s)));
    return victims.map((s) => s.model.id);
  }

  async shutdown(): Promise<void> {
    clearInterval(this.idleTimer);
    await Promise.all(this.list().map((s) => this.stopSlot(s)));
  }

  private validateRequestOptions(model: CatalogModel, options: Record<string, unknown>): void {
    try {
      for (const [k, v] of Object.entries(options)) {
        if (v !== undefined && k in optionSpecs(model.recipe)) validateOption(model.recipe, k, v);
      }
      if (typeof options.llamacpp_args === "string") checkUserArgs(splitArgs(options.llamacpp_args));
      if (typeof options.whispercpp_args === "string") checkWhisperArgs(splitArgs(options.whispercpp_args));
    } catch (err) {
      if (err instanceof OptionError || err instanceof EngineConfigError) {
        throw ApiError.of(E.invalidArgument, err.message);
      }
      throw err;
    }
  }

  /** `save_options`: concrete values replace the saved entry; a null keeps what was saved. */
  private saveLoadOptions(model: CatalogModel, options: Record<string, unknown>): void {
    const saved = this.optionsStore.saved(model.id);
    const next: Options = {};
    for (const key of Object.keys(optionSpecs(model.recipe))) {
      const v = options[key];
      if (v === null) {
        if (saved[key] !== undefined) next[key] = saved[key]!;
      } else if (v !== undefined) next[key] = v as Options[string];
    }
    this.optionsStore.replace(model.id, next);
  }

  private leaseOf(slot: Slot): Lease {
    slot.inflight++;
    slot.lastUse = Date.now();
    this.mostRecent = slot.model.id;
    let released = false;
    let streaming = false;
    return {
      slot,
      url: slot.engine.url,
      streaming: () => {
        if (!streaming && !released) {
          streaming = true;
          slot.streaming++;
        }
      },
      release: () => {
        if (released) return;
        released = true;
        if (streaming) slot.streaming--;
        slot.inflight--;
        slot.lastUse = Date.now();
        if (slot.inflight === 0 && slot.state !== "ready") slot.drained.resolve();
      },
    };
  }

  private ensureLoaded(model: CatalogModel, req: LoadRequest): Promise<Slot> {
    const pending = this.loading.get(model.id);
    if (pending) return pending;
    // Download first, outside the type lock, so a long download does not hold up other loads.
    const p = this.download(model).then(() => this.withTypeLock(model.type, async () => {
      const existing = this.slots.get(model.id);
      if (existing?.state === "ready") return existing;
      await this.makeRoom(model.type);
      return this.start(model, req);
    }));
    this.loading.set(model.id, p);
    const clear = () => this.loading.delete(model.id);
    p.then(clear, clear);
    return p;
  }

  private async download(model: CatalogModel): Promise<void> {
    if (this.catalog.isDownloaded(model)) return;
    try {
      await this.prepare(model);
    } catch (err) {
      const message = (err as Error).message;
      this.logger.error("Router", `Failed to download ${model.id}: ${message}`);
      if (err instanceof ApiError && err.code === "lemond_offline") throw err;
      throw ApiError.of(E.modelLoadError, `${model.id} is not downloaded and the download failed: ${message}`);
    }
  }

  private async withTypeLock<T>(type: ModelType, fn: () => Promise<T>): Promise<T> {
    const prev = this.typeLocks.get(type) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    this.typeLocks.set(type, run.catch(() => {}));
    return run;
  }

  /** Evicts least-recently-used models of `type` until one more fits. */
  private async makeRoom(type: ModelType): Promise<void> {
    const max = this.config.maxLoadedModels;
    if (max < 0) return;
    for (;;) {
      const ofType = this.list().filter((s) => s.model.type === type);
      if (ofType.length < max) return;
      const victim = ofType
        .filter((s) => s.state === "ready" && !s.pinned)
        .sort((a, b) => a.lastUse - b.lastUse)[0];
      if (victim) {
        this.logger.info("Router", `Evicting ${victim.model.id} (least recently used ${type}) to make room`);
        await this.evict(victim);
        continue;
      }
      const draining = ofType.find((s) => s.state === "draining");
      if (draining) {
        await draining.drained.promise;
        continue;
      }
      throw ApiError.of(
        E.slotsPinned,
        `Every loaded ${type} model is pinned (${ofType.map((s) => s.model.id).join(", ")}), so none can be unloaded to make room; unload one or raise max_loaded_models`,
      );
    }
  }

  /** Stops taking requests for the slot, waits for those in flight, then stops its engine. */
  private async evict(slot: Slot): Promise<void> {
    if (slot.state === "stopped") return;
    if (slot.state === "ready") {
      slot.state = "draining";
      if (slot.inflight === 0) slot.drained.resolve();
    }
    await slot.drained.promise;
    await this.stopSlot(slot);
  }

  private async stopSlot(slot: Slot): Promise<void> {
    if (slot.state === "stopped") return;
    slot.state = "stopped";
    slot.drained.resolve();
    if (this.slots.get(slot.model.id) === slot) this.slots.delete(slot.model.id);
    await slot.engine.process.stop();
    if (this.mostRecent === slot.model.id) this.mostRecent = this.list().sort((a, b) => b.lastUse - a.lastUse)[0]?.model.id ?? null;
    this.logger.info("Router", `Unloaded ${slot.model.id} (pid ${slot.engine.process.pid})`);
  }

  /** The engine binary, built on demand when the backend is installable but not installed yet. */
  private async engineBinary(recipe: string, backend: string, locate: () => string): Promise<string> {
    try {
      return locate();
    } catch (err) {
      if (!(err instanceof EngineConfigError) || !/is not installed/.test(err.message)) throw err;
      this.logger.info("Router", `${recipe}:${backend} is not installed yet; building it now (a few minutes)`);
      try {
        await this.installEngine(recipe, backend);
      } catch (buildErr) {
        throw new EngineConfigError(
          `${recipe}:${backend} is not installed and building it failed (${(buildErr as Error).message.split("\n")[0]}); install it with: lemonade backends install ${recipe}:${backend}`,
        );
      }
      return locate();
    }
  }

  /** The folder a model's saved slot files live in (created on demand). */
  slotDir(modelId: string): string {
    const dir = join(this.config.cacheDir, "slots", modelId.replace(/[^A-Za-z0-9._-]/g, "_"));
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  private evictIdle(): void {
    const now = Date.now();
    for (const slot of this.list()) {
      const timeout = slot.options.evict_idle_timeout;
      if (slot.state !== "ready" || slot.pinned || slot.inflight > 0) continue;
      if (typeof timeout !== "number" || timeout <= 0) continue;
      if (now - slot.lastUse >= timeout * 1000) {
        this.logger.info("Router", `Unloading ${slot.model.id}: idle for ${timeout} s (evict_idle_timeout)`);
        void this.evict(slot);
      }
    }
  }

  private async start(model: CatalogModel, req: LoadRequest): Promise<Slot> {
    if (model.recipe !== "llamacpp" && model.recipe !== "whispercpp") {
      throw ApiError.of(E.modelLoadError, `${model.id} needs the ${model.recipe} engine, which this server does not run`);
    }
    const files = this.catalog.files(model);
    const missing = files.filter((f) => !f.exists).map((f) => f.role);
    if (missing.length) {
      throw ApiError.of(E.modelLoadError, `${model.id} is not downloaded (missing: ${missing.join(", ")})`);
    }
    this.validateRequestOptions(model, req.options ?? {});
    const options = this.resolve(model, req.options);
    if (req.saveOptions) this.saveLoadOptions(model, req.options ?? {});
    const ctxSize = this.resolvedCtxSize(model, options);
    const mode = model.type === "embedding" || model.type === "reranking" ? model.type : "llm";
    const tag = `${model.recipe}:${model.id}`;
    const modelPath = files.find((f) => f.role === "main")!.path!;
    let engine: RunningEngine;
    const started = performance.now();
    try {
      if (model.recipe === "whispercpp") {
        const backend = String(options.whispercpp_backend);
        const binary = await this.engineBinary("whispercpp", backend, () => locateWhisperServer(this.config.cacheDir, backend));
        this.logger.info("Router", `Loading ${model.id} on whisper.cpp (${options.whispercpp_backend})`);
        engine = await startWhisperServer(
          binary,
          modelPath,
          splitArgs(String(options.whispercpp_args ?? "")),
          (line) => this.logger.debug(tag, line),
          this.engines,
        );
      } else {
        const backend = String(options.llamacpp_backend);
        const binary = await this.engineBinary("llamacpp", backend, () => locateLlamaServer(this.config.cacheDir, backend));
        const userArgs = splitArgs(String(options.llamacpp_args ?? ""));
        this.logger.info("Router", `Loading ${model.id} on llama.cpp (${options.llamacpp_backend}, ctx ${ctxSize})`);
        engine = await startLlamaServer(
          binary,
          {
            modelPath,
            mmprojPath: files.find((f) => f.role === "mmproj")?.path ?? undefined,
            mode,
            ctxSize,
            userArgs,
            slotSavePath: this.slotDir(model.id),
          },
          (line) => this.logger.debug(tag, line),
          this.engines,
        );
      }
    } catch (err) {
      if (err instanceof EngineConfigError || err instanceof EngineStartError) {
        this.logger.error("Router", `Failed to load ${model.id}: ${err.message}`);
        throw ApiError.of(E.modelLoadError, `Failed to load ${model.id}: ${err.message}`);
      }
      throw err;
    }
    const now = Date.now();
    const slot: Slot = {
      model,
      engine,
      options,
      ctxSize,
      pinned: req.pinned ?? false,
      lastUse: now,
      loadedAt: now,
      inflight: 0,
      streaming: 0,
      state: "ready",
      drained: Promise.withResolvers<void>(),
    };
    this.slots.set(model.id, slot);
    this.mostRecent = model.id;
    this.logger.info(
      "Router",
      `Loaded ${model.id} in ${Math.round(performance.now() - started)} ms (pid ${engine.process.pid}, ${engine.url})`,
    );
    void engine.process.exited.then((code) => this.onExit(slot, code));
    return slot;
  }

  private onExit(slot: Slot, code: number): void {
    if (slot.engine.process.isStopping || slot.state === "stopped") return;
    slot.state = "stopped";
    slot.drained.resolve();
    if (this.slots.get(slot.model.id) === slot) this.slots.delete(slot.model.id);
    this.logger.error(
      "Router",
      `The ${slot.model.recipe} engine for ${slot.model.id} (pid ${slot.engine.process.pid}) exited unexpectedly with code ${code}; it will be started again on the next request. Last output:\n${slot.engine.process.lastLines}`,
    );
  }
}
