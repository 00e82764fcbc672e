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
// - dynamic VRAM management (multi-model guide), for `auto_evict` models that are not pinned: idle
//   past `downsize_idle_timeout` a model is downsized (its KV cache freed, weights kept; the next
//   request uses it as it is), past `evict_idle_timeout` it is evicted, and while GPU memory use is
//   past `auto_evict_threshold_pct` the most disposable idle one is evicted; a request that comes
//   mid-downsize or mid-eviction interrupts it and is served by the engine still there;
// - an engine that exits on its own is logged, forgotten, and started again by the next request.
import { ApiError } from "../lib/api-error.ts";
import type { Clock } from "../lib/clock.ts";
import { changed } from "../lib/generation.ts";
import { E } from "../spec/errors.ts";
import type { LoadSpec } from "../models/recipe-options.ts";
import type { RunningEngine } from "../engines/engine.ts";
import { decideAdmission, idleDegradation, pickVictim, pressureVictim, type Admission, type Incoming, type Resident, type Residency, type Tier } from "./eviction.ts";
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
  /** The pool it counts in: the one its last use asked for (a model a router's classifier runs
   * on is a routing helper; a client's request moves it into the standard pool, in place). */
  residency: Residency;
  /** Whole, being downsized, or downsized (its KV cache freed while idle). */
  tier: Tier;
  /** Its last downsize failed: not tried again until a request uses it. */
  downsizeFailed: boolean;
  /** An idle or pressure eviction under way: until the engine is told to stop, a request takes the
   * model back. */
  autoEvicting: boolean;
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
  /** The engine did not answer (dead or hung; `why` says how): ends the claim, stops the engine
   * at once and forgets it, so that the next request starts it again. Settles once it is gone. */
  fail(why?: string): Promise<void>;
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
  /** Checks what a load needs outside this server (the RPC workers a model is split across)
   * before it queues, so that one slow to answer holds up no other model's load. */
  precheck?(model: M, spec: LoadSpec): Promise<void>;
  /** Last use, load times and the idle check are on this clock. */
  clock: Clock;
  /** Keeps what an evicted engine holds (the KV cache of its recent conversations) before it is
   * stopped; not on a crash or shutdown. Its failure is logged and the stop goes on. */
  save?(instance: Instance<M>): Promise<void>;
  /** Frees what an idle engine holds beyond its weights (llama-server: erases its slots' KV cache);
   * `signal` aborts when a request comes. Without it a downsize changes nothing but the tier. */
  downsize?(instance: Instance<M>, signal: AbortSignal): Promise<void>;
}

/** VRAM-pressure eviction (multi-model guide): sampled only while `enabled()`. */
export interface PressureMonitor {
  /** The server-wide `auto_evict`. */
  enabled(): boolean;
  /** `auto_evict_threshold_pct`: the share of GPU memory in use (0 to 1) at which a model goes. */
  threshold(): number;
  /** The share of GPU memory in use now (the fullest GPU's), or undefined when it cannot be read. */
  sample(): Promise<number | undefined>;
  /** How often it is sampled (ms). */
  everyMs: number;
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
  /** How log lines and error messages name a model: the id the API lists it by (its catalog id when not given). */
  name?(model: M): string;
  /** How often idle models are checked for `downsize_idle_timeout` and `evict_idle_timeout` (ms). */
  idleCheckMs?: number;
  /** GPU memory pressure; none: no pressure eviction. */
  pressure?: PressureMonitor;
  /** The gate an exclusive job holds: loads, unloads and requests wait at it, and idle eviction pauses. */
  gate?: ExclusiveGate;
}

export interface AcquireOptions {
  /** Recipe options for the load, when this request triggers one (e.g. `ctx_size`). */
  options?: Record<string, unknown>;
  /** The client's request: once it aborts, the request leaves the queue. */
  signal?: AbortSignal;
  /** The pool the request holds the model in: `routing_helper` for a collection's routing, else standard. */
  residency?: Residency;
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
  residency: Residency;
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
  /** Models whose engine is starting, by id, with the pool each loads into. */
  private readonly loading = new Map<string, { model: M; residency: Residency }>();
  private waiters: Waiter<M>[] = [];
  /** Stops the idle and pressure checks; set while they run, which is while a model is resident. */
  private stopChecks?: () => void;
  /** Downsizes under way, each with what interrupts it. */
  private readonly downsizing = new Map<Instance<M>, AbortController>();
  /** A pressure sample is being read (one at a time). */
  private sampling = false;
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
  }

  /** Runs the idle and pressure checks while some model is resident and stops them when none is:
   * with nothing to unload or downsize they have nothing to do, and a server that ticks while idle
   * wakes every second and, as the tick's code warms up, grows (bench memory's idle server: 0.6 MB
   * more after 30 s with the ticks, flat without). */
  private checkWhileResident(): void {
    if (this.instances.size > 0 && !this.stopChecks && !this.closed) {
      const stopIdle = this.clock.every(this.deps.idleCheckMs ?? 1000, () => this.degradeIdle());
      const pressure = this.deps.pressure;
      const stopPressure = pressure ? this.clock.every(pressure.everyMs, () => void this.checkPressure(pressure)) : () => {};
      this.stopChecks = () => (stopIdle(), stopPressure());
    } else if (this.instances.size === 0 && this.stopChecks) {
      this.stopChecks();
      this.stopChecks = undefined;
    }
  }

  private named(model: M): string {
    return this.deps.name?.(model) ?? model.id;
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
    const residency = opts.residency ?? "standard";
    const resident = this.instances.get(model.id);
    if (resident && this.takeBack(resident)) {
      this.moveTo(resident, residency);
      return this.leaseOf(resident);
    }
    return this.wait(model, opts.options, false, opts.signal, residency, (instance) => this.leaseOf(instance));
  }

  /** Loads a model explicitly (reloading it when it runs with other options). */
  async load(model: M, req: LoadRequest = {}): Promise<Instance<M>> {
    await this.deps.gate?.pass();
    return this.wait(model, req.options, true, undefined, "standard", (instance) => {
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
    residency: Residency,
    take: (instance: Instance<M>) => T,
  ): Promise<T> {
    let spec: LoadSpec;
    this.preparing++;
    try {
      this.deps.check(model, options);
      await this.deps.effects.prepare(model);
      spec = this.deps.resolve(model, options);
      const running = this.instances.get(model.id);
      if (!running || !sameSpec(running.spec, spec)) await this.deps.effects.precheck?.(model, spec);
    } finally {
      this.preparing--;
    }
    return new Promise<T>((resolve, reject) =>
      this.enqueue({ model, spec, explicit, residency, signal, grant: (instance) => resolve(take(instance)), fail: reject }),
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
    this.stopChecks?.();
    this.stopChecks = undefined;
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
        try {
          this.moveTo(instance, w.residency);
        } catch (err) {
          w.fail(err);
          continue;
        }
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
        this.deps.log.info(`Reloading ${this.named(w.model)} with new options`);
        void this.evict(instance);
        continue;
      }
      if (instance) continue;
      const incoming = { id: w.model.id, type, residency: w.residency, autoEvict: w.spec.options.auto_evict === true, memory: this.deps.memory?.(w.model, w.spec) };
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
        const why = admission.reason === "memory" && mem ? `to free memory for ${this.named(w.model)} (needs ${gb(mem.need)}, ${gb(mem.free)} free)` : `(the ${victim.model.type} idle longest for its load time) to make room for ${this.named(w.model)}`;
        this.deps.log.info(`Evicting ${this.named(victim.model)} ${why}`);
        void this.evict(victim);
        return;
      }
      case "refuse": {
        const err =
          admission.status === 409
            ? pinnedError(w.model.type, admission.pinned)
            : ApiError.of(
                E.insufficientMemory,
                `${this.named(w.model)} needs ${gb(admission.need)} of memory and ${gb(admission.free)} is free${admission.evictable ? "; unload a model, or load with auto_evict on to let one be evicted" : ""}`,
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
      ({ model: m, residency }): Resident => ({ id: m.id, type: m.type, residency, state: "loading", pinned: false, lastUse: now, inflight: 0, idleTimeoutS: Infinity, downsizeTimeoutS: Infinity, autoEvict: false, tier: "full", loadMs: 0, weight: 1 }),
    );
    return [...[...this.instances.values()].map((s) => this.resident(s)), ...starting];
  }

  private resident(s: Instance<M>): Resident {
    const { evict_idle_timeout: timeout, downsize_idle_timeout: downsize, auto_evict: autoEvict, evict_weight_factor: weight } = s.spec.options;
    return {
      id: s.model.id,
      type: s.model.type,
      residency: s.residency,
      state: s.state,
      pinned: s.pinned,
      lastUse: s.lastUse,
      inflight: s.inflight,
      // Idle degradation is off unless auto_evict is on (lemonade.md's default).
      idleTimeoutS: autoEvict === true && typeof timeout === "number" ? timeout : Infinity,
      downsizeTimeoutS: autoEvict === true && typeof downsize === "number" ? downsize : Infinity,
      autoEvict: autoEvict === true,
      tier: s.downsizeFailed ? "downsized" : s.tier,
      loadMs: s.loadMs,
      weight: typeof weight === "number" ? weight : 1,
    };
  }

  private startLoad(w: Waiter<M>): void {
    const { model, spec } = w;
    this.loading.set(model.id, { model, residency: w.residency });
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
          residency: w.residency,
          tier: "full",
          autoEvicting: false,
          downsizeFailed: false,
          gone: Promise.withResolvers<void>(),
        };
        this.instances.set(model.id, instance);
        this.checkWhileResident();
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
    this.restore(instance);
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
          this.deps.log.warn(`The engine for ${this.named(instance.model)} (pid ${instance.engine.pid}) stopped answering; stopping it so that the next request starts it again`);
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
    this.interruptDownsize(instance);
    const save = this.deps.effects.save;
    if (evicted && save && !this.closed) {
      await save(instance).catch((err: Error) => this.deps.log.warn(`Could not save the state of ${this.named(instance.model)} before unloading it: ${err.message}`));
    }
    // A request that came during the save took the model back (takeBack).
    if (instance.state !== "stopping") return;
    instance.autoEvicting = false;
    await instance.engine.stop(graceMs);
    this.forget(instance);
    this.deps.log.info(`Unloaded ${this.named(instance.model)} (pid ${instance.engine.pid})`);
  }

  /** Drops an instance whose engine is gone, and lets the queue move. */
  private forget(instance: Instance<M>): void {
    if (this.instances.get(instance.model.id) === instance) this.instances.delete(instance.model.id);
    this.checkWhileResident();
    changed();
    if (this.mostRecent === instance.model.id) {
      this.mostRecent = this.list().sort((a, b) => b.lastUse - a.lastUse)[0]?.model.id ?? null;
    }
    instance.gone.resolve();
    this.dispatch();
  }

  /** Moves a resident model into the pool a request holds it in, in place (no second process):
   * into the routing-helper pool freely; into the standard pool under its admission, the model
   * idle longest for its load time making room, and 409 when every standard one is pinned. */
  private moveTo(instance: Instance<M>, residency: Residency): void {
    if (instance.residency === residency) return;
    if (residency === "standard") {
      const max = this.deps.maxLoaded();
      const pool = this.residents().filter((r) => r.id !== instance.model.id && r.type === instance.model.type && r.residency === "standard");
      const staying = pool.filter((r) => r.state === "ready" || r.state === "loading");
      if (max >= 0 && staying.length >= max) {
        const victim = pickVictim(pool, this.clock.now());
        if (!victim) throw pinnedError(instance.model.type, pool.map((r) => r.id));
        const evicted = this.instances.get(victim.id)!;
        this.deps.log.info(`Evicting ${this.named(evicted.model)} to make room in the standard pool for ${this.named(instance.model)}`);
        void this.evict(evicted);
      }
    }
    this.deps.log.info(`${this.named(instance.model)} moves from the ${instance.residency} pool to the ${residency} pool`);
    instance.residency = residency;
    changed();
  }

  /** Whether a request may use the instance now: a ready one (a downsize under way is
   * interrupted by the lease), or one an idle or pressure eviction has not yet told to stop. */
  private takeBack(instance: Instance<M>): boolean {
    if (instance.state === "ready") return true;
    if (!instance.autoEvicting || this.closed) return false;
    instance.state = "ready";
    instance.autoEvicting = false;
    this.deps.log.info(`A request for ${this.named(instance.model)} interrupted its eviction; it stays loaded`);
    changed();
    return true;
  }

  /** Before a request: a model downsizing stops downsizing, a downsized one is whole again (the
   * engine allocates its KV cache anew as the request needs it). */
  private restore(instance: Instance<M>): void {
    instance.downsizeFailed = false;
    if (instance.tier === "full") return;
    if (this.interruptDownsize(instance)) this.deps.log.info(`A request for ${this.named(instance.model)} interrupted its downsize`);
    else this.deps.log.info(`Restoring ${this.named(instance.model)} from its downsized state`);
    instance.tier = "full";
    changed();
  }

  /** Aborts the instance's downsize, if one is under way; true if it was. */
  private interruptDownsize(instance: Instance<M>): boolean {
    const controller = this.downsizing.get(instance);
    if (!controller) return false;
    this.downsizing.delete(instance);
    controller.abort();
    return true;
  }

  private downsize(instance: Instance<M>, idleS: number): void {
    const controller = new AbortController();
    this.downsizing.set(instance, controller);
    instance.tier = "downsizing";
    changed();
    this.deps.log.info(`Downsizing ${this.named(instance.model)}: idle for ${idleS} s (downsize_idle_timeout)`);
    const effect = this.deps.effects.downsize;
    void (effect ? effect(instance, controller.signal) : Promise.resolve()).then(
      () => this.downsized(instance, controller, true),
      (err: Error) => {
        if (this.downsizing.get(instance) === controller) this.deps.log.warn(`Could not downsize ${this.named(instance.model)}: ${err.message}; it stays whole`);
        this.downsized(instance, controller, false);
      },
    );
  }

  private downsized(instance: Instance<M>, controller: AbortController, ok: boolean): void {
    // Interrupted: the request that did it has made the model whole.
    if (this.downsizing.get(instance) !== controller) return;
    this.downsizing.delete(instance);
    instance.tier = ok ? "downsized" : "full";
    instance.downsizeFailed = !ok;
    if (ok) this.deps.log.info(`Downsized ${this.named(instance.model)}`);
    changed();
  }

  /** An eviction a request may still interrupt (idle or pressure), unlike one that makes room. */
  private autoEvict(instance: Instance<M>, why: string): void {
    this.deps.log.info(`Unloading ${this.named(instance.model)}: ${why}`);
    instance.autoEvicting = true;
    void this.evict(instance);
  }

  private degradeIdle(): void {
    // An exclusive job's models stay put while it runs.
    if (this.deps.gate?.holder) return;
    const { evict, downsize } = idleDegradation(this.residents(), this.clock.now());
    for (const r of evict) this.autoEvict(this.instances.get(r.id)!, `idle for ${r.idleTimeoutS} s (evict_idle_timeout)`);
    for (const r of downsize) this.downsize(this.instances.get(r.id)!, r.downsizeTimeoutS);
  }

  private async checkPressure(pressure: PressureMonitor): Promise<void> {
    if (this.sampling || !pressure.enabled() || this.deps.gate?.holder) return;
    this.sampling = true;
    // A sampler that fails reads as "unknown": no eviction, and the next sample tries again.
    const used = await pressure.sample().catch(() => undefined);
    this.sampling = false;
    if (used !== undefined) this.relieve(used, pressure.threshold());
  }

  /** The multi-model guide's test hook (`/internal/simulate-vram-pressure`): one pressure check
   * at once with `used` (0-1) as the GPU memory in use, where pressure eviction is on; a negative
   * `used` runs the idle check alone, as Lemonade's hook does. */
  simulatePressure(used: number): void {
    if (used < 0) return this.degradeIdle();
    const pressure = this.deps.pressure;
    if (pressure?.enabled()) this.relieve(used, pressure.threshold());
  }

  private relieve(used: number, threshold: number): void {
    if (used < threshold || this.closed || this.deps.gate?.holder) return;
    const victim = pressureVictim(this.residents(), this.clock.now());
    if (!victim) return;
    const pct = (n: number) => `${Math.round(n * 100)}%`;
    this.autoEvict(this.instances.get(victim.id)!, `GPU memory is ${pct(used)} used, at or past auto_evict_threshold_pct ${pct(threshold)}`);
  }

  private onExit(instance: Instance<M>, code: number): void {
    // A stop the scheduler asked for (stopInstance marks the instance first) is no crash.
    if (instance.state === "stopping" || this.instances.get(instance.model.id) !== instance) return;
    this.deps.log.error(
      `The engine for ${this.named(instance.model)} (pid ${instance.engine.pid}) exited unexpectedly with code ${code}; it will be started again on the next request. Last output:\n${instance.engine.lastLines}`,
    );
    this.forget(instance);
  }
}

function pinnedError(type: string, pinned: string[]): ApiError {
  return ApiError.of(E.slotsPinned, `Every loaded ${type} model is pinned (${pinned.join(", ")}), so none can be unloaded to make room; unload one or raise max_loaded_models`);
}

function shuttingDown(): ApiError {
  return ApiError.of(E.shuttingDown, "The server is shutting down");
}

function clientGone(): ApiError {
  return ApiError.of(E.clientClosed, "The client closed the request while it waited for the model");
}
