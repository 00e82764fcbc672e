// The job engine (docs/dev/job-system.md): client-posted step lists run in the background by one
// worker, one job at a time, with pause (after the current step), interrupt (cancel it now),
// resume and delete, kept in `jobs.json` so that a restart or a crash loses nothing.
//
// A job with an exclusive op holds the gate (runtime/job-gate.ts) while it runs, and keeps custody
// of the models around it: it owns the residencies its own `load` steps created (the scheduler's
// instance, not the name), and snapshots the models that were resident before it. An interrupt or a
// delete unloads only what it owns and puts the snapshot's pin states back; a resume loads again
// what its completed load/unload steps say should be resident, adopting a same-named model that
// someone else loaded meanwhile. A job that ends completed or failed leaves its models loaded.
import { ApiError } from "../lib/api-error.ts";
import { systemClock, type Clock } from "../lib/clock.ts";
import { resolvePath, resolveRefs, evalCondition } from "../lib/job-expr.ts";
import { doneSteps, nextAfterSuccess, nextInList, parseSteps, validateSteps, type Step } from "../lib/job-graph.ts";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import type { JsonValue } from "../lib/json.ts";
import { E } from "../spec/errors.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { ExclusiveGate } from "./job-gate.ts";
import type { Scheduler, Instance } from "./scheduler.ts";
import type { JobSummary } from "../spec/jobs.ts";

type JsonObject = { [key: string]: JsonValue };

/** One named server operation a step runs. */
export interface JobOp {
  /** It touches models, so the job holds the gate while it runs. */
  exclusive: boolean;
  /** Runs with the step's resolved params; `signal` aborts it (an interrupt). */
  run(params: JsonObject, signal: AbortSignal): Promise<JsonValue>;
}

export type JobStatus = "queued" | "running" | "paused" | "interrupted" | "completed" | "failed";

export interface Job {
  id: string;
  name: string;
  status: JobStatus;
  /** Deleted while active: hidden, and erased once the worker has cleaned up after it. */
  deleted?: boolean;
  inputs: JsonObject;
  context: JsonObject;
  steps: Step[];
  /** The current or next step's id; "" once the last step is done. */
  cursor: string;
  created_at: string;
  started_at?: string;
  finished_at?: string;
  error?: string;
}

/** The most jobs kept; the oldest finished one makes room for a new one. */
export const MAX_JOBS = 50;

/** The op whose completed steps make a model resident, and the one that releases them. */
const LOAD_OP = "load";
const UNLOAD_OP = "unload";

const terminal = (s: JobStatus) => s === "completed" || s === "failed";

interface Control {
  pause: boolean;
  interrupt: boolean;
  abort: AbortController;
}

/** What a job knows of the models around it, while the server runs. */
interface Custody {
  /** Model id -> the residency its own load created. */
  owned: Map<string, Instance<CatalogModel>>;
  /** The models resident when it first took the gate, with their pin state. */
  before: { id: string; pinned: boolean; instance: Instance<CatalogModel> }[] | null;
}

export interface JobEngineDeps {
  /** Where the jobs are kept (`jobs.json` in the cache directory). */
  file: string;
  ops: Record<string, JobOp>;
  scheduler: Scheduler<CatalogModel>;
  gate: ExclusiveGate;
  /** The catalog id a model name stands for (aliases, public names); undefined when none. */
  modelId(name: string): string | undefined;
  /** How log lines name the model with catalog id `id`: the id the API lists it by. */
  publicId(id: string): string;
  log: { info(m: string): void; warn(m: string): void };
  clock?: Clock;
  /** How often the gate's drain looks whether in-flight work has finished (ms). */
  drainPollMs?: number;
}

export class JobEngine {
  private readonly jobs = new Map<string, Job>();
  /** Newest first, as the list shows them. */
  private order: string[] = [];
  private queue: string[] = [];
  private readonly controls = new Map<string, Control>();
  private readonly custody = new Map<string, Custody>();
  private wake = Promise.withResolvers<void>();
  private active: string | null = null;
  private stopping = false;
  private counter = 0;
  private readonly worker: Promise<void>;
  private readonly clock: Clock;

  constructor(private readonly deps: JobEngineDeps) {
    this.clock = deps.clock ?? systemClock;
    this.restore();
    this.worker = this.work();
  }

  get opNames(): Set<string> {
    return new Set(Object.keys(this.deps.ops));
  }

  /** Validates and queues a job; its id. */
  create(name: string, rawSteps: unknown, inputs: JsonObject): string {
    const steps = parseSteps(rawSteps);
    if (typeof steps === "string") throw ApiError.of(E.invalidJob, steps);
    const invalid = validateSteps(steps, this.opNames);
    if (invalid) throw ApiError.of(E.invalidJob, invalid);
    const live = this.order.map((id) => this.jobs.get(id)!).filter((j) => !j.deleted);
    if (live.length >= MAX_JOBS && !live.some((j) => terminal(j.status))) {
      throw ApiError.of(E.jobLimit, `The job limit (${MAX_JOBS}) is reached and every job is still active or resumable; delete one first`);
    }
    const stamp = new Date(this.clock.now()).toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
    const id = `job-${stamp}-${String(++this.counter).padStart(6, "0")}`;
    const job: Job = { id, name, status: "queued", inputs, context: { inputs }, steps, cursor: steps[0]!.id, created_at: this.now() };
    this.jobs.set(id, job);
    this.order.unshift(id);
    // Room for it: the oldest finished jobs go.
    for (let i = this.order.length - 1; i >= 0 && this.order.length > MAX_JOBS; i--) {
      const old = this.jobs.get(this.order[i]!)!;
      if (terminal(old.status)) this.erase(old.id);
    }
    this.enqueue(id);
    this.deps.log.info(`Created job ${id} '${name}' (${steps.length} steps)`);
    return id;
  }

  /** Every job's summary, newest first. */
  list(): JobSummary[] {
    return this.order.map((id) => this.jobs.get(id)!).filter((j) => !j.deleted).map(summary);
  }

  /** The full record; 404 for no job, or a deleted one. */
  get(id: string): Job {
    const job = this.jobs.get(id);
    if (!job || job.deleted) throw ApiError.of(E.jobNotFound, `No job ${id}`);
    return job;
  }

  /** Stops after the current step; a queued job is paused at once. */
  pause(id: string): void {
    const job = this.get(id);
    if (job.status === "queued") {
      this.queue = this.queue.filter((q) => q !== id);
      this.settle(job, "paused");
    } else if (job.status === "running") this.control(id).pause = true;
    else throw ApiError.of(E.jobNotActive, `Job ${id} is ${job.status}, not running or queued`);
  }

  /** Cancels the current step now; a queued job is interrupted at once. */
  interrupt(id: string): void {
    const job = this.get(id);
    if (job.status === "queued") {
      this.queue = this.queue.filter((q) => q !== id);
      this.settle(job, "interrupted");
    } else if (job.status === "running") this.cancel(id);
    else throw ApiError.of(E.jobNotActive, `Job ${id} is ${job.status}, not running or queued`);
  }

  /** Queues a paused or interrupted job again, at its cursor. */
  resume(id: string): void {
    const job = this.get(id);
    if (job.status !== "paused" && job.status !== "interrupted") throw ApiError.of(E.jobNotResumable, `Job ${id} is ${job.status}, not paused or interrupted`);
    this.controls.set(id, fresh());
    delete job.error;
    job.status = "queued";
    this.enqueue(id);
  }

  /** Removes a job. An active, paused or interrupted one is tombstoned first (durable at once), and
   * the worker erases it after unloading the models it owns. */
  delete(id: string): void {
    const job = this.get(id);
    if (id === this.active || job.status === "paused" || job.status === "interrupted") {
      job.deleted = true;
      if (id === this.active) this.cancel(id);
      else this.enqueue(id);
      this.persist();
      return;
    }
    this.erase(id);
    this.persist();
  }

  /** Interrupts the running job (it stays resumable after the next start) and ends the worker. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.active) this.cancel(this.active);
    this.wake.resolve();
    await this.worker;
  }

  private now(): string {
    return new Date(this.clock.now()).toISOString();
  }

  private control(id: string): Control {
    let c = this.controls.get(id);
    if (!c) this.controls.set(id, (c = fresh()));
    return c;
  }

  private cancel(id: string): void {
    const c = this.control(id);
    c.interrupt = true;
    c.abort.abort();
  }

  private settle(job: Job, status: JobStatus, error?: string): void {
    job.status = status;
    if (error !== undefined) job.error = error;
    if (terminal(status)) job.finished_at ??= this.now();
    this.persist();
  }

  private enqueue(id: string): void {
    if (!this.queue.includes(id)) this.queue.push(id);
    this.persist();
    this.wake.resolve();
  }

  private erase(id: string): void {
    this.jobs.delete(id);
    this.controls.delete(id);
    this.custody.delete(id);
    this.order = this.order.filter((o) => o !== id);
    this.queue = this.queue.filter((q) => q !== id);
  }

  private persist(): void {
    writeJsonFileAtomic(this.deps.file, { version: 1, jobs: this.order.map((id) => this.jobs.get(id)!) });
  }

  /** Reads the jobs a previous run left: a tombstoned one is gone; one left running or queued
   * is interrupted at its cursor, to be resumed. */
  private restore(): void {
    const doc = readJsonFile<{ jobs?: Job[] }>(this.deps.file, {});
    let changed = false;
    for (const job of doc.jobs ?? []) {
      this.counter = Math.max(this.counter, Number(/-(\d+)$/.exec(job.id)?.[1] ?? 0));
      if (job.deleted) {
        changed = true;
        continue;
      }
      if (job.status === "running" || job.status === "queued") {
        for (const s of job.steps) if (s.status === "running") s.status = "pending";
        job.status = "interrupted";
        job.error = "The server restarted while the job was active";
        changed = true;
      }
      this.jobs.set(job.id, job);
      this.order.push(job.id);
    }
    if (changed) this.persist();
    if (this.order.length) this.deps.log.info(`Restored ${this.order.length} job(s) from ${this.deps.file}`);
  }

  private async work(): Promise<void> {
    for (;;) {
      while (!this.queue.length && !this.stopping) {
        await this.wake.promise;
        this.wake = Promise.withResolvers<void>();
      }
      if (this.stopping) return;
      const id = this.queue.shift()!;
      const job = this.jobs.get(id);
      if (!job) continue;
      if (job.deleted) {
        // Deleted while paused or interrupted: what it owns goes, then the job.
        await this.deps.gate.as(id, () => this.reconcile(id));
        this.erase(id);
        this.persist();
        this.deps.log.info(`Deleted job ${id} after unloading the models it owned`);
        continue;
      }
      if (job.status !== "queued") continue;
      await this.runJob(job);
    }
  }

  private async runJob(job: Job): Promise<void> {
    const id = job.id;
    const control = this.control(id);
    this.active = id;
    job.status = "running";
    job.started_at ??= this.now();
    this.persist();
    const exclusive = job.steps.some((s) => this.deps.ops[s.op]?.exclusive);
    let held = false;
    try {
      if (exclusive) held = await this.takeGate(id, control);
      if (exclusive && !held) this.settle(job, "interrupted");
      else await this.deps.gate.as(id, async () => {
        if (held) await this.restoreModels(job);
        await this.execute(job, control);
      });
      const ended = job.status as JobStatus;
      if (ended === "interrupted" && !this.stopping) await this.deps.gate.as(id, () => this.reconcile(id));
      if (terminal(ended)) this.custody.delete(id);
    } finally {
      if (held) this.deps.gate.open();
      this.active = null;
    }
    if (job.deleted) {
      this.erase(id);
      this.persist();
      this.deps.log.info(`Deleted job ${id} after its cleanup`);
    }
  }

  /** Closes the gate, then waits for loads and requests already under way (an interrupt gives
   * up); snapshots the resident models the first time. */
  private async takeGate(id: string, control: Control): Promise<boolean> {
    const { gate, scheduler } = this.deps;
    gate.close(id);
    while (scheduler.busy && !control.abort.signal.aborted) {
      await new Promise<void>((resolve) => {
        const cancel = this.clock.after(this.deps.drainPollMs ?? 20, resolve);
        control.abort.signal.addEventListener("abort", () => (cancel(), resolve()), { once: true });
      });
    }
    if (control.abort.signal.aborted) {
      gate.open();
      return false;
    }
    const custody = this.custodyOf(id);
    custody.before ??= scheduler.list().map((s) => ({ id: s.model.id, pinned: s.pinned, instance: s }));
    return true;
  }

  private custodyOf(id: string): Custody {
    let c = this.custody.get(id);
    if (!c) this.custody.set(id, (c = { owned: new Map(), before: null }));
    return c;
  }

  private instanceOf(id: string): Instance<CatalogModel> | undefined {
    return this.deps.scheduler.list().find((s) => s.model.id === id);
  }

  /** What the job's completed load and unload steps leave resident: model id -> the load's params.
   * Read from the record, so it holds after a restart too; the graph only jumps forward, so list
   * order is the order they ran. */
  private manifest(job: Job): Map<string, JsonObject> {
    const resident = new Map<string, JsonObject>();
    const ran = job.steps.filter((s) => s.status === "completed" && (s.op === LOAD_OP || s.op === UNLOAD_OP));
    for (const step of ran) {
      try {
        const params = resolveRefs(step.params, job.context) as JsonObject;
        const id = typeof params.model === "string" ? this.deps.modelId(params.model) : undefined;
        if (step.op === LOAD_OP && id) resident.set(id, params);
        else if (step.op === UNLOAD_OP) {
          if (typeof params.model === "string") resident.delete(id ?? params.model);
          else resident.clear();
        }
      } catch (err) {
        this.deps.log.warn(`Job ${job.id}: step '${step.id}' left out of the models to restore: ${(err as Error).message}`);
      }
    }
    return resident;
  }

  /** Before a resumed job runs: loads again what its steps made resident and is gone now; a
   * same-named model loaded by someone else meanwhile is adopted as it is and is no longer the job's. */
  private async restoreModels(job: Job): Promise<void> {
    const custody = this.custodyOf(job.id);
    const load = this.deps.ops[LOAD_OP];
    for (const [id, params] of this.manifest(job)) {
      const instance = this.instanceOf(id);
      if (instance) {
        if (custody.owned.get(id) !== instance) custody.owned.delete(id);
        continue;
      }
      if (!load) continue;
      try {
        await load.run(params, new AbortController().signal);
        this.own(job.id, id);
        this.deps.log.info(`Job ${job.id}: loaded ${this.deps.publicId(id)} again for the resume`);
      } catch (err) {
        // The step that needs it fails in its own way (its on_fail decides).
        this.deps.log.warn(`Job ${job.id}: could not load ${this.deps.publicId(id)} again: ${(err as Error).message}`);
      }
    }
  }

  /** Records the residency a job's load made as the job's, unless it was resident before the job. */
  private own(jobId: string, modelId: string): void {
    const instance = this.instanceOf(modelId);
    if (!instance) return;
    const custody = this.custodyOf(jobId);
    if (custody.before?.some((b) => b.instance === instance)) return;
    custody.owned.set(modelId, instance);
  }

  /** After an interrupt or a delete: unloads the residencies the job still owns, and puts back the
   * pin state of the models that were resident before it (those still resident). */
  private async reconcile(id: string): Promise<void> {
    const custody = this.custody.get(id);
    if (!custody) return;
    for (const [modelId, instance] of custody.owned) {
      if (this.instanceOf(modelId) !== instance) continue;
      await this.deps.scheduler.unload(modelId);
      this.deps.log.info(`Job ${id}: unloaded ${this.deps.publicId(modelId)}, which it had loaded`);
    }
    custody.owned.clear();
    for (const b of custody.before ?? []) {
      const instance = this.instanceOf(b.id);
      if (instance && instance.pinned !== b.pinned) this.deps.scheduler.setPinned(b.id, b.pinned);
    }
  }

  /** Runs steps from the cursor until the job ends, pauses, or is interrupted. */
  private async execute(job: Job, control: Control): Promise<void> {
    for (;;) {
      if (control.interrupt) {
        const current = job.steps.find((s) => s.id === job.cursor);
        if (current) current.status = "pending";
        return this.settle(job, "interrupted", this.stopping ? "The server stopped while the job was active" : undefined);
      }
      if (control.pause) return this.settle(job, "paused");
      if (!job.cursor) {
        for (const s of job.steps) if (s.status === "pending") s.status = "skipped";
        this.deps.log.info(`Job ${job.id} completed`);
        return this.settle(job, "completed");
      }
      const step = job.steps.find((s) => s.id === job.cursor);
      if (!step) return this.settle(job, "failed", `The cursor names no step ('${job.cursor}')`);
      const op = this.deps.ops[step.op];
      let params: JsonObject;
      try {
        if (step.when && !evalCondition(step.when, job.context)) {
          step.status = "skipped";
          job.cursor = nextInList(job.steps, step.id);
          this.persist();
          continue;
        }
        if (!op) throw new Error(`unknown op '${step.op}'`);
        params = resolveRefs(step.params, job.context) as JsonObject;
      } catch (err) {
        return this.fail(job, step, (err as Error).message);
      }
      step.status = "running";
      delete step.error;
      this.persist();
      const started = this.clock.now();
      let output: JsonValue = null;
      let failure: string | null = null;
      try {
        output = await op.run(params, control.abort.signal);
      } catch (err) {
        failure = (err as Error).message;
      }
      step.duration_ms = this.clock.now() - started;
      if (control.interrupt) continue;
      if (failure === null) {
        try {
          this.completed(job, step, params, output);
        } catch (err) {
          return this.fail(job, step, (err as Error).message);
        }
      } else {
        step.status = "failed";
        step.error = failure;
        if (!step.on_fail) return this.fail(job, step, failure);
        step.failure_handled = true;
        job.cursor = step.on_fail === "continue" ? nextInList(job.steps, step.id) : step.on_fail;
        this.deps.log.warn(`Job ${job.id}: step '${step.id}' failed (${failure}); going on at ${job.cursor || "the end"}`);
      }
      this.persist();
    }
  }

  /** A step's output into the context (and its extracts), its model custody, and where next. */
  private completed(job: Job, step: Step, params: JsonObject, output: JsonValue): void {
    step.output = output;
    job.context[step.id] = output;
    for (const [key, path] of Object.entries(step.extract ?? {})) job.context[key] = resolvePath(path, output);
    const next = nextAfterSuccess(job.steps, step, job.context);
    if (step.op === LOAD_OP && output && typeof output === "object" && !Array.isArray(output) && typeof output.model === "string") this.own(job.id, output.model);
    if (step.op === UNLOAD_OP) {
      const owned = this.custodyOf(job.id).owned;
      if (typeof params.model === "string") owned.delete(this.deps.modelId(params.model) ?? params.model);
      else owned.clear();
    }
    step.status = "completed";
    job.cursor = next;
  }

  private fail(job: Job, step: Step, message: string): void {
    step.status = "failed";
    step.error = message;
    this.deps.log.warn(`Job ${job.id} failed at step '${step.id}': ${message}`);
    this.settle(job, "failed", message);
  }
}

function fresh(): Control {
  return { pause: false, interrupt: false, abort: new AbortController() };
}

/** A job as the list shows it: progress counts steps that need no more work. */
function summary(job: Job): JobSummary {
  return {
    id: job.id,
    name: job.name,
    status: job.status,
    created_at: job.created_at,
    progress: { cursor: job.cursor, completed: doneSteps(job.steps), step_count: job.steps.length },
    ...(job.finished_at ? { finished_at: job.finished_at } : {}),
    ...(job.error ? { error: job.error } : {}),
  };
}
