// The scheduler: which models are resident, who may use them, and in what order models load.
// It never names a recipe, and acts on the world only through the effects it is handed (as
// Ollama's scheduler is handed newServerFn): downloads (`prepare`), engines (`start`, and the
// engine it returns to stop, check and watch) and time (`clock`). So its unit tests run it on an
// in-memory engine and a fake clock. Whether a model may load now is runtime/eviction.ts's
// `decideAdmission`.
//
// Rules it keeps:
// - one process per model: every request for a model that is loading waits for that one load;
// - requests wait in arrival order; when a model becomes ready, every request waiting for it
//   gets its lease at once, so a model that was just loaded serves its batch before it can be
//   evicted (no evict/load loop under contention);
// - one load at a time per model type, so a type never holds more engines than its limit;
// - eviction never aborts a request: the victim stops taking new requests ("draining") and is
//   stopped once its in-flight requests finish;
// - pinned models are never evicted; when only pinned models fill a type, a load fails with 409;
//   a load that does not fit in memory evicts (its auto_evict on) or fails with 507;
// - a request whose client has gone leaves the queue, and no load starts for it;
// - an engine that exits on its own is logged, forgotten, and started again by the next request.
import { ApiError } from "../lib/api-error.ts";
import type { Clock } from "../lib/clock.ts";
import { changed } from "../lib/generation.ts";
import { E } from "../spec/errors.ts";
import type { LoadSpec } from "../models/recipe-options.ts";
import type { RunningEngine } from "../engines/engine.ts";
import { decideAdmission, idleExpired, type Admission, type Incoming, type Resident } from "./eviction.ts";
import type { ExclusiveGate } from "./job-gate.ts";

/** What the scheduler needs of a model. */
export interface SchedulableModel {
  id: string;
  type: string;
}

type InstanceState = Exclude<Resident["state"], "loading">;

/** A model loaded in memory: its engine, the requests it serves and where it is in its life.
 * ("slot" in this project means only an engine's parallel request slot, llama-server's
 * `--parallel`, whose KV state `/slots` saves and restores.) */
export interface Instance<M extends SchedulableModel = SchedulableModel> {
  model: M;
  engine: RunningEngine;
  spec: LoadSpec;
  pinned: boolean;
  lastUse: number;
  inflight: number;
  streaming: number;
  /** When the engine last sent output for any request, on the shared clock (lib/clock.ts):
   * the proxy writes it and its hang check reads it. */
  lastOutput: number;
  /** How long the engine took to start (ms), for the eviction score. */
  loadMs: number;
  state: InstanceState;
  /** Settles once the engine has stopped (asked to, or on its own). */
  gone: PromiseWithResolvers<void>;
}

export interface Lease<M extends SchedulableModel = SchedulableModel> {
  instance: Instance<M>;
  /** The engine's base URL. */
  url: string;
  /** Marks the request as streaming tokens (reported by /v1/health). */
  streaming(): void;
  /** Ends the request's claim on the model; idempotent. */
  release(): void;
  /** The engine did not answer (dead or hung): ends the claim, stops the engine at once and
   * forgets it, so that the next request starts it again. Settles once it is gone. */
  fail(): Promise<void>;
}

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Everything the scheduler does to the world. Production: runtime/launcher.ts's
 * `Launcher.effects`; unit tests: test/helpers/memory-engine.ts's in-memory engine and fake clock. */
export interface SchedulerEffects<M extends SchedulableModel> {
  /** Fetches a model's missing files before it may load. */
  prepare(model: M): Promise<void>;
  /** Starts an engine for the model, settling once it answers its health check. The scheduler
   * stops the engine, checks its health and learns of its exit through what this returns. */
  start(model: M, spec: LoadSpec): Promise<RunningEngine>;
  /** Last use, load times and the idle check are on this clock. */
  clock: Clock;
  /** Keeps what an evicted engine holds (the KV cache of its recent conversations) before it is
   * stopped; not on a crash or shutdown. Its failure is logged and the stop goes on. */
  save?(instance: Instance<M>): Promise<void>;
}

export interface SchedulerDeps<M extends SchedulableModel> {
  effects: SchedulerEffects<M>;
  /** Refuses request options that would fail the load (a 400), before anything is fetched. */
  check(model: M, request?: Record<string, unknown>): void;
  /** What the load uses; read after the download, since a model's files shape its context size. */
  resolve(model: M, request?: Record<string, unknown>): LoadSpec;
  /** What a load needs and what memory is free for it (loaded models aside), in bytes; undefined
   * when it cannot be worked out. A load that does not fit evicts (auto_evict) or is refused. */
  memory?(model: M, spec: LoadSpec): { need: number; free: number } | undefined;
  /** Models of one type resident at once; -1 is unlimited. Read at each decision. */
  maxLoaded(): number;
  log: Logger;
  /** How often idle models are checked for `evict_idle_timeout` (ms). */
  idleCheckMs?: number;
  /** The gate an exclusive job holds: loads, unloads and requests wait at it, and idle eviction pauses. */
  gate?: ExclusiveGate;
}

export interface AcquireOptions {
  /** Recipe options for the load, when this request triggers one (e.g. `ctx_size`). */
  options?: Record<string, unknown>;
  /** The client's request: once it aborts, the request leaves the queue. */
  signal?: AbortSignal;
}

export interface LoadRequest {
  /** Option values from the request: undefined keeps the saved value, null skips it. */
  options?: Record<string, unknown>;
  pinned?: boolean;
}

interface Waiter<M extends SchedulableModel> {
  model: M;
  spec: LoadSpec;
  /** An explicit load: it reloads a model running with other options, and takes no lease. */
  explicit: boolean;
  signal?: AbortSignal;
  grant(instance: Instance<M>): void;
  fail(err: unknown): void;
}

const sameSpec = (a: LoadSpec, b: LoadSpec) =>
  a.ctxSize === b.ctxSize && JSON.stringify(a.options) === JSON.stringify(b.options) && (a.tuning?.args ?? []).join(" ") === (b.tuning?.args ?? []).join(" ");

/** An evicted engine has no request in flight and nothing left to save (its `save` effect ran), so it gets no grace period: a
 * graceful exit takes llama.cpp ~40 ms, nearly all of what a swap adds to the next engine's start. */
const EVICT_GRACE_MS = 0;

export class Scheduler<M extends SchedulableModel = SchedulableModel> {
  private readonly instances = new Map<string, Instance<M>>();
  /** Models pinned by a load or /internal/pin: an engine that crashes comes back pinned. */
  private readonly pinnedIds = new Set<string>();
  /** Models whose engine is starting, by id. */
  private readonly loading = new Map<string, M>();
  private waiters: Waiter<M>[] = [];
  private readonly stopIdleCheck: () => void;
  private readonly clock: Clock;
  private closed = false;
  /** Requests fetching their model's files before they queue. */
  private preparing = 0;
  /** Engines started since this scheduler was made (for tests and benchmarks). */
  starts = 0;
  /** The model most recently used or loaded (`model_loaded` in /v1/health). */
  mostRecent: string | null = null;

  constructor(private readonly deps: SchedulerDeps<M>) {
    this.clock = deps.effects.clock;
    this.stopIdleCheck = this.clock.every(deps.idleCheckMs ?? 1000, () => this.evictIdle());
  }

  /** Models resident now (ready or finishing their requests), oldest load first. */
  list(): Instance<M>[] {
    return [...this.instances.values()].filter((s) => s.state !== "stopping");
  }

  /** The model loaded under exactly this id and taking requests. */
  ready(id: string): M | undefined {
    const instance = this.instances.get(id);
    return instance?.state === "ready" ? instance.model : undefined;
  }

  isLoading(id: string): boolean {
    return this.loading.has(id);
  }

  /** The memory a loaded model takes by the estimate admission uses, in bytes; undefined when its
   * recipe declares none. */
  footprint(instance: Instance<M>): number | undefined {
    return this.deps.memory?.(instance.model, instance.spec)?.need;
  }

  /** Whether anything is preparing or waiting for a load, loading, or in flight on a loaded model (an exclusive job drains these first). */
  get busy(): boolean {
    return this.preparing > 0 || this.loading.size > 0 || this.waiters.length > 0 || [...this.instances.values()].some((s) => s.inflight > 0);
  }

  /** Requests waiting for a model to load or for room. */
  get queued(): number {
    return this.waiters.length;
  }

  /** Pins or unpins a loaded model; false when it is not loaded. */
  setPinned(id: string, pinned: boolean): boolean {
    const instance = this.instances.get(id);
    if (!instance || instance.state !== "ready") return false;
    instance.pinned = pinned;
    if (pinned) this.pinnedIds.add(id);
    else this.pinnedIds.delete(id);
    changed();
    return true;
  }

  /** Refuses options that would make the model's next load fail (a 400), e.g. before they are saved. */
  checkOptions(model: M, options: Record<string, unknown>): void {
    this.deps.check(model, options);
  }

  /** Claims a model for one request, loading it first when needed. */
  async acquire(model: M, opts: AcquireOptions = {}): Promise<Lease<M>> {
    if (opts.signal?.aborted) throw clientGone();
    await this.deps.gate?.pass(opts.signal);
    const ready = this.instances.get(model.id);
    if (ready?.state === "ready") return this.leaseOf(ready);
    return this.wait(model, opts.options, false, opts.signal, (instance) => this.leaseOf(instance));
  }

  /** Loads a model explicitly (reloading it when it runs with other options). */
  async load(model: M, req: LoadRequest = {}): Promise<Instance<M>> {
    await this.deps.gate?.pass();
    return this.wait(model, req.options, true, undefined, (instance) => {
      if (req.pinned !== undefined) {
        instance.pinned = req.pinned;
        if (req.pinned) this.pinnedIds.add(model.id);
        else this.pinnedIds.delete(model.id);
      }
      instance.lastUse = this.clock.now();
      this.mostRecent = model.id;
      return instance;
    });
  }

  /** Checks the options, fetches the model's files, then queues until the model is ready. `take`
   * claims the ready instance at once, inside the queue's pass, so nothing can evict it in between. */
  private async wait<T>(
    model: M,
    options: Record<string, unknown> | undefined,
    explicit: boolean,
    signal: AbortSignal | undefined,
    take: (instance: Instance<M>) => T,
  ): Promise<T> {
    let spec: LoadSpec;
    this.preparing++;
    try {
      this.deps.check(model, options);
      await this.deps.effects.prepare(model);
      spec = this.deps.resolve(model, options);
    } finally {
      this.preparing--;
    }
    return new Promise<T>((resolve, reject) =>
      this.enqueue({ model, spec, explicit, signal, grant: (instance) => resolve(take(instance)), fail: reject }),
    );
  }

  /** Unloads one model (waiting for its requests); false when it was not loaded. */
  async unload(id: string): Promise<boolean> {
    await this.deps.gate?.pass();
    const instance = this.instances.get(id);
    if (!instance) return false;
    // Unloaded on purpose: the next load is unpinned unless it says (or its saved options say) so.
    this.pinnedIds.delete(id);
    await this.evict(instance);
    return true;
  }

  /** Unloads every model a predicate picks (all of them without one); returns their ids. */
  async unloadWhere(pick: (instance: Instance<M>) => boolean = () => true): Promise<string[]> {
    await this.deps.gate?.pass();
    const victims = this.list().filter(pick);
    await Promise.all(victims.map((s) => this.evict(s)));
    return victims.map((s) => s.model.id);
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    this.stopIdleCheck();
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w.fail(shuttingDown());
    await Promise.all([...this.instances.values()].map((s) => this.stopInstance(s)));
  }

  private enqueue(w: Waiter<M>): void {
    if (this.closed) return w.fail(shuttingDown());
    if (w.signal?.aborted) return w.fail(clientGone());
    this.waiters.push(w);
    w.signal?.addEventListener(
      "abort",
      () => {
        if (!this.waiters.includes(w)) return;
        this.waiters = this.waiters.filter((x) => x !== w);
        w.fail(clientGone());
        this.dispatch();
      },
      { once: true },
    );
    this.dispatch();
  }

  /** Serves the queue. First every request whose model is ready gets its lease, so a model that
   * was just loaded serves its whole batch before anything can evict it; then, in arrival order,
   * each type's first request that needs a load starts it, or the eviction that makes room. */
  private dispatch(): void {
    for (const w of [...this.waiters]) {
      const instance = this.instances.get(w.model.id);
      if (instance?.state === "ready" && !(w.explicit && !sameSpec(instance.spec, w.spec))) {
        this.remove(w);
        w.grant(instance);
      }
    }
    const decided = new Set<string>();
    for (const w of [...this.waiters]) {
      if (!this.waiters.includes(w)) continue;
      const type = w.model.type;
      if (decided.has(type)) continue;
      decided.add(type);
      const instance = this.instances.get(w.model.id);
      if (instance?.state === "ready") {
        // An explicit load with other options: the running engine goes first.
        this.deps.log.info(`Reloading ${w.model.id} with new options`);
        void this.evict(instance);
        continue;
      }
      if (instance) continue;
      const incoming = { id: w.model.id, type, autoEvict: w.spec.options.auto_evict === true, memory: this.deps.memory?.(w.model, w.spec) };
      this.act(w, incoming.memory, decideAdmission(this.residents(), incoming, { maxLoaded: this.deps.maxLoaded() }, this.clock.now()));
    }
  }

  /** Carries out the admission decided for the first request of a model that needs a load. */
  private act(w: Waiter<M>, mem: Incoming["memory"], admission: Admission): void {
    const gb = (b: number) => `${(b / 1024 ** 3).toFixed(2)} GB`;
    switch (admission.kind) {
      case "load":
        return this.startLoad(w);
      case "wait":
        return;
      case "evict": {
        const victim = this.instances.get(admission.victim)!;
        const why = admission.reason === "memory" && mem ? `to free memory for ${w.model.id} (needs ${gb(mem.need)}, ${gb(mem.free)} free)` : `(the ${victim.model.type} idle longest for its load time) to make room for ${w.model.id}`;
        this.deps.log.info(`Evicting ${victim.model.id} ${why}`);
        void this.evict(victim);
        return;
      }
      case "refuse": {
        const err =
          admission.status === 409
            ? ApiError.of(
                E.slotsPinned,
                `Every loaded ${w.model.type} model is pinned (${admission.pinned.join(", ")}), so none can be unloaded to make room; unload one or raise max_loaded_models`,
              )
            : ApiError.of(
                E.insufficientMemory,
                `${w.model.id} needs ${gb(admission.need)} of memory and ${gb(admission.free)} is free${admission.evictable ? "; unload a model, or load with auto_evict on to let one be evicted" : ""}`,
              );
        for (const other of this.waiters.filter((x) => x.model.id === w.model.id)) {
          this.remove(other);
          other.fail(err);
        }
      }
    }
  }

  private remove(w: Waiter<M>): void {
    this.waiters = this.waiters.filter((x) => x !== w);
  }

  /** Every model in memory or starting, as eviction sees it. */
  private residents(): Resident[] {
    const now = this.clock.now();
    const starting = [...this.loading.values()].map(
      (m): Resident => ({ id: m.id, type: m.type, state: "loading", pinned: false, lastUse: now, inflight: 0, idleTimeoutS: 0, loadMs: 0, weight: 1 }),
    );
    return [...[...this.instances.values()].map((s) => this.resident(s)), ...starting];
  }

  private resident(s: Instance<M>): Resident {
    const { evict_idle_timeout: timeout, auto_evict: autoEvict, evict_weight_factor: weight } = s.spec.options;
    return {
      id: s.model.id,
      type: s.model.type,
      state: s.state,
      pinned: s.pinned,
      lastUse: s.lastUse,
      inflight: s.inflight,
      // Idle eviction is off unless auto_evict is on (lemonade.md's default).
      idleTimeoutS: autoEvict === true && typeof timeout === "number" ? timeout : 0,
      loadMs: s.loadMs,
      weight: typeof weight === "number" ? weight : 1,
    };
  }

  private startLoad(w: Waiter<M>): void {
    const { model, spec } = w;
    this.loading.set(model.id, model);
    this.starts++;
    const startedAt = this.clock.now();
    void this.deps.effects.start(model, spec).then(
      (engine) => {
        this.loading.delete(model.id);
        const now = this.clock.now();
        const instance: Instance<M> = {
          model,
          engine,
          spec,
          pinned: spec.pinned === true || this.pinnedIds.has(model.id),
          lastUse: now,
          lastOutput: now,
          loadMs: now - startedAt,
          inflight: 0,
          streaming: 0,
          state: "ready",
          gone: Promise.withResolvers<void>(),
        };
        this.instances.set(model.id, instance);
        changed();
        this.mostRecent = model.id;
        void engine.exited.then((code) => this.onExit(instance, code));
        if (this.closed) void this.stopInstance(instance);
        this.dispatch();
      },
      (err) => {
        this.loading.delete(model.id);
        for (const other of this.waiters.filter((x) => x.model.id === model.id)) {
          this.remove(other);
          other.fail(err);
        }
        this.dispatch();
      },
    );
  }

  private leaseOf(instance: Instance<M>): Lease<M> {
    instance.inflight++;
    instance.lastUse = this.clock.now();
    this.mostRecent = instance.model.id;
    let released = false;
    let streaming = false;
    const lease: Lease<M> = {
      instance,
      url: instance.engine.url,
      streaming: () => {
        if (!streaming && !released) {
          streaming = true;
          instance.streaming++;
        }
      },
      release: () => {
        if (released) return;
        released = true;
        if (streaming) instance.streaming--;
        instance.inflight--;
        instance.lastUse = this.clock.now();
        if (instance.inflight === 0 && instance.state === "draining") void this.stopInstance(instance, EVICT_GRACE_MS, true);
      },
      fail: async () => {
        lease.release();
        if (instance.state !== "stopping" && this.instances.get(instance.model.id) === instance) {
          this.deps.log.warn(`The engine for ${instance.model.id} (pid ${instance.engine.pid}) stopped answering; stopping it so that the next request starts it again`);
          await this.stopInstance(instance, 0);
        }
        await instance.gone.promise;
      },
    };
    return lease;
  }

  /** Stops taking requests for the instance, waits for those in flight, then stops its engine. */
  private async evict(instance: Instance<M>): Promise<void> {
    if (instance.state === "ready") {
      instance.state = "draining";
      if (instance.inflight === 0) void this.stopInstance(instance, EVICT_GRACE_MS, true);
    }
    await instance.gone.promise;
  }

  /** `evicted`: stopped to make room or on request, so its `save` effect runs first. */
  private async stopInstance(instance: Instance<M>, graceMs?: number, evicted = false): Promise<void> {
    if (instance.state === "stopping") return instance.gone.promise;
    instance.state = "stopping";
    const save = this.deps.effects.save;
    if (evicted && save && !this.closed) {
      await save(instance).catch((err: Error) => this.deps.log.warn(`Could not save the state of ${instance.model.id} before unloading it: ${err.message}`));
    }
    await instance.engine.stop(graceMs);
    this.forget(instance);
    this.deps.log.info(`Unloaded ${instance.model.id} (pid ${instance.engine.pid})`);
  }

  /** Drops an instance whose engine is gone, and lets the queue move. */
  private forget(instance: Instance<M>): void {
    if (this.instances.get(instance.model.id) === instance) this.instances.delete(instance.model.id);
    changed();
    if (this.mostRecent === instance.model.id) {
      this.mostRecent = this.list().sort((a, b) => b.lastUse - a.lastUse)[0]?.model.id ?? null;
    }
    instance.gone.resolve();
    this.dispatch();
  }

  private evictIdle(): void {
    // An exclusive job's models stay put while it runs.
    if (this.deps.gate?.holder) return;
    for (const r of idleExpired(this.residents(), this.clock.now())) {
      const instance = this.instances.get(r.id)!;
      this.deps.log.info(`Unloading ${r.id}: idle for ${r.idleTimeoutS} s (evict_idle_timeout)`);
      void this.evict(instance);
    }
  }

  private onExit(instance: Instance<M>, code: number): void {
    // A stop the scheduler asked for (stopInstance marks the instance first) is no crash.
    if (instance.state === "stopping" || this.instances.get(instance.model.id) !== instance) return;
    this.deps.log.error(
      `The engine for ${instance.model.id} (pid ${instance.engine.pid}) exited unexpectedly with code ${code}; it will be started again on the next request. Last output:\n${instance.engine.lastLines}`,
    );
    this.forget(instance);
  }
}

function shuttingDown(): ApiError {
  return ApiError.of(E.shuttingDown, "The server is shutting down");
}

function clientGone(): ApiError {
  return ApiError.of(E.clientClosed, "The client closed the request while it waited for the model");
}
