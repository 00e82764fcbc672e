// The scheduler's effects for the synchronous unit tier: an in-memory engine whose starts, stops,
// health and exits the test drives by hand, and a clock that moves only when the test says. No
// process, no port, no timer: each ordering is the one the test chooses.
import type { RunningEngine } from "../../engines/engine.ts";
import { FakeClock } from "./fake-clock.ts";
import { Scheduler, type SchedulableModel, type SchedulerDeps, type SchedulerEffects } from "../../runtime/scheduler.ts";

/** One engine of the in-memory engine: healthy while it runs, it stops when asked (at once, unless
 * the test holds its stops), and exits on its own when the test crashes it. */
export class MemoryEngine implements RunningEngine {
  readonly url: string;
  readonly argv: string[];
  readonly slots = 4;
  isStopping = false;
  lastLines = "";
  private readonly exit = Promise.withResolvers<number>();
  readonly exited = this.exit.promise;

  constructor(
    readonly model: string,
    readonly pid: number,
    private readonly engines: MemoryEngines,
  ) {
    this.url = `http://memory.invalid/${model}/${pid}`;
    this.argv = ["memory-engine", model];
  }

  async health(): Promise<boolean> {
    return !this.isStopping;
  }

  stop(): Promise<void> {
    if (!this.isStopping) {
      this.isStopping = true;
      this.engines.stopsAsked.push(this.model);
      if (this.engines.holdStops) this.engines.heldStops.push(this);
      else this.exit.resolve(0);
    }
    return this.exited.then(() => {});
  }

  /** Ends a stop the test held. */
  finishStop(): void {
    this.exit.resolve(0);
  }

  /** The engine exits on its own, as a crash would. */
  crash(code = 139): void {
    this.lastLines = "segmentation fault";
    this.exit.resolve(code);
  }
}

/** A start the scheduler asked for, waiting for the test to let it finish. */
export interface PendingStart {
  model: string;
  /** The engine comes up healthy. */
  ready(): MemoryEngine;
  /** The start fails (the engine did not pass its health check) with this error. */
  fail(err: Error): void;
}

export class MemoryEngines {
  /** Starts asked for and not yet finished, oldest first. */
  readonly pending: PendingStart[] = [];
  /** Every start asked for, by model, in order. */
  readonly startsAsked: string[] = [];
  /** Every stop asked for, by model, in order. */
  readonly stopsAsked: string[] = [];
  /** Engines up (a stopped or crashed one leaves). */
  readonly running = new Map<string, MemoryEngine>();
  /** While true, stops wait for `finishStop`. */
  holdStops = false;
  readonly heldStops: MemoryEngine[] = [];
  /** Starts finish by themselves, for tests about what comes after a load. */
  autoStart = false;
  private pid = 1000;

  start = (model: SchedulableModel): Promise<RunningEngine> => {
    this.startsAsked.push(model.id);
    const { promise, resolve, reject } = Promise.withResolvers<RunningEngine>();
    const pending: PendingStart = {
      model: model.id,
      ready: () => {
        this.settle(pending);
        const engine = new MemoryEngine(model.id, ++this.pid, this);
        this.running.set(model.id, engine);
        void engine.exited.then(() => {
          if (this.running.get(model.id) === engine) this.running.delete(model.id);
        });
        resolve(engine);
        return engine;
      },
      fail: (err) => {
        this.settle(pending);
        reject(err);
      },
    };
    this.pending.push(pending);
    if (this.autoStart) pending.ready();
    return promise;
  };

  /** The start waiting for this model. */
  starting(model: string): PendingStart {
    const found = this.pending.find((p) => p.model === model);
    if (!found) throw new Error(`no start is waiting for ${model} (waiting: ${this.pending.map((p) => p.model).join(", ") || "none"})`);
    return found;
  }

  private settle(p: PendingStart): void {
    this.pending.splice(this.pending.indexOf(p), 1);
  }
}

/** A scheduler on the in-memory engine and a fake clock; `overrides` replace its dependencies,
 * `effects` add to its effects (a `save` before an eviction's stop). */
export function memoryScheduler(max = 1, overrides: Partial<SchedulerDeps<SchedulableModel>> = {}, effects: Partial<SchedulerEffects<SchedulableModel>> = {}) {
  const engines = new MemoryEngines();
  const clock = new FakeClock();
  const logs: string[] = [];
  const scheduler = new Scheduler<SchedulableModel>({
    effects: { prepare: async () => {}, start: engines.start, clock, ...effects },
    check: () => {},
    resolve: () => ({ options: {}, ctxSize: 4096 }),
    maxLoaded: () => max,
    log: { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) },
    ...overrides,
  });
  return { scheduler, engines, clock, logs };
}
