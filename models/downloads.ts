// Model downloads: one worker per model, whatever asks for it (a waiting /v1/pull, an SSE
// stream, or a server-owned job that outlives its request). Workers report progress to every
// listener; server-owned jobs keep a snapshot clients can poll and control. A backend install
// started with `subscribe: false` is such a job too (`backend:<recipe>:<backend>`), as Lemonade
// lists it beside the model downloads.
import type { CatalogModel } from "./catalog.ts";
import {
  bytesOnDisk,
  checkpointFiles,
  downloadFile,
  freeBytes,
  noSpace,
  removePartials,
  repoManifest,
  type HubOptions,
  type Registry,
  type RepoFile,
  type RepoManifest,
  writeProvenance,
} from "./hf-download.ts";
import { parseCheckpoint } from "./hf-cache.ts";

export interface Progress {
  file: string;
  file_index: number;
  total_files: number;
  bytes_downloaded: number;
  bytes_total: number;
  /** Bytes of every file in the download. */
  total_download_size: number;
  /** Bytes of this file already on disk when its download began (a resumed partial). */
  bytes_previously_downloaded: number;
  percent: number;
}

export type JobStatus = "downloading" | "paused" | "cancelled" | "completed" | "error";

export interface JobSnapshot {
  id: string;
  type: "model" | "backend";
  /** The model, or a backend's `<recipe>:<backend>`. */
  model_name: string;
  /** A model job's model by its canonical id (`builtin.NAME`, ...), whatever `model_name` names later. */
  canonical_id?: string;
  status: JobStatus;
  running: boolean;
  file: string;
  file_index: number;
  total_files: number;
  bytes_downloaded: number;
  bytes_total: number;
  total_download_size: number;
  bytes_previously_downloaded: number;
  completed_files_bytes: number;
  cumulative_bytes_downloaded: number;
  overall_bytes_downloaded: number;
  percent: number;
  complete: boolean;
  error?: string;
}

type Listener = (p: Progress) => void;

/** A download a client paused or cancelled: every caller sharing it stops with this, and the
 * streams Lemonade answers end without an error for it. */
export class DownloadStopped extends Error {
  constructor(readonly reason: "paused" | "cancelled") {
    super(`download ${reason}`);
  }
}

interface Worker {
  promise: Promise<void>;
  abort: AbortController;
  listeners: Set<Listener>;
  /** Why the worker was stopped, when a client stopped it. */
  stopReason?: "paused" | "cancelled";
  plan?: Plan;
}

/** A job whose work is not a model download (a backend install): what it is doing, and how it
 * is stopped. */
interface Task {
  done: Promise<void>;
  stop: () => void;
}

/** Each file to fetch, with the folder of the registry it lands in. */
type Plan = { manifest: RepoManifest; file: RepoFile; dir: string }[];

export class DownloadManager {
  private readonly workers = new Map<string, Worker>();
  private readonly jobs = new Map<string, JobSnapshot>();
  /** Each job's model by its catalog id: a job is named as its pull named the model. */
  private readonly jobModels = new Map<string, string>();
  /** Each model's last download plan, so that cancelling a stopped job still finds its partials. */
  private readonly plans = new Map<string, Plan>();
  private readonly tasks = new Map<string, Task>();

  constructor(
    /** Each registry's hub and the folder its files live in. */
    private readonly hubs: Record<Registry, HubOptions & { dir: string }>,
  ) {}

  /** Downloads every checkpoint of a model, sharing a running download of the same model. */
  pull(model: CatalogModel, onProgress?: Listener): Promise<void> {
    let worker = this.workers.get(model.id);
    if (!worker) {
      const abort = new AbortController();
      const listeners = new Set<Listener>();
      const w: Worker = { abort, listeners, promise: Promise.resolve() };
      w.promise = this.run(model, w)
        .catch((err) => {
          throw w.stopReason ? new DownloadStopped(w.stopReason) : err;
        })
        .finally(() => {
          if (this.workers.get(model.id) === w) this.workers.delete(model.id);
        });
      this.workers.set(model.id, w);
      worker = w;
    }
    if (onProgress) worker.listeners.add(onProgress);
    const listeners = worker.listeners;
    return worker.promise.finally(() => onProgress && listeners.delete(onProgress));
  }

  private async run(model: CatalogModel, worker: Worker): Promise<void> {
    const signal = worker.abort.signal;
    const manifests = new Map<string, RepoManifest>();
    const hub = this.hubs[model.registry ?? "huggingface"];
    const plan: Plan = [];
    for (const checkpoint of Object.values(model.checkpoints)) {
      const { repo } = parseCheckpoint(checkpoint);
      let manifest = manifests.get(repo);
      if (!manifest) {
        manifest = await repoManifest(hub, repo, "main", signal);
        manifests.set(repo, manifest);
      }
      for (const file of checkpointFiles(manifest, checkpoint)) plan.push({ manifest, file, dir: hub.dir });
    }
    worker.plan = plan;
    this.plans.set(model.id, plan);
    const total = plan.reduce((n, p) => n + p.file.size, 0);
    // The sizes are known before a byte is written: refuse what the disk cannot hold.
    const needed = plan.reduce((n, { manifest, file }) => n + Math.max(0, file.size - bytesOnDisk(hub.dir, manifest, file)), 0);
    const free = freeBytes(hub.dir);
    if (needed > free) throw noSpace(model.id, needed, free);
    let completed = 0;
    for (const [i, { manifest, file }] of plan.entries()) {
      const previously = bytesOnDisk(hub.dir, manifest, file);
      const report = (bytes: number) => {
        const p: Progress = {
          file: file.path,
          file_index: i + 1,
          total_files: plan.length,
          bytes_downloaded: bytes,
          bytes_total: file.size,
          total_download_size: total,
          bytes_previously_downloaded: previously,
          percent: total ? Math.floor(((completed + bytes) / total) * 100) : 100,
        };
        for (const l of worker.listeners) l(p);
      };
      await downloadFile(hub, hub.dir, manifest, file, (fp) => report(fp.bytesDownloaded), signal);
      completed += file.size;
    }
    const mainRepo = model.checkpoints.main ? parseCheckpoint(model.checkpoints.main).repo : undefined;
    const selection = [model.recipe, ...Object.keys(model.checkpoints).sort().map((role) => `${role}=${model.checkpoints[role]}`)].join("\n");
    for (const manifest of manifests.values()) {
      writeProvenance(hub.dir, model.registry ?? "huggingface", manifest, manifest.repo === mainRepo ? { id: model.id, selection } : undefined);
    }
  }

  /** Starts (or resumes) a server-owned job and returns its first snapshot. The job (its id and
   * `model_name`) is named by `name`, the name its pull gave, as Lemonade names it; `canonicalId`
   * says which model that is. */
  startJob(
    model: CatalogModel,
    name: string,
    canonicalId: string,
    run: (onProgress: (p: Progress) => void) => Promise<void> = (p) => this.pull(model, p),
  ): JobSnapshot {
    const id = `model:${name}`;
    const existing = this.jobs.get(id);
    if (existing?.running) return existing;
    const job = newJob(id, "model", name, canonicalId);
    this.jobs.set(id, job);
    this.jobModels.set(id, model.id);
    const onProgress = (p: Progress) => {
      const worker = this.workers.get(model.id);
      const plan = worker?.plan ?? [];
      const before = plan.slice(0, p.file_index - 1).reduce((n, e) => n + e.file.size, 0);
      update(job, { ...p, completed_files_bytes: before });
    };
    settle(job, run(onProgress));
    return job;
  }

  /** Starts a server-owned job for work that is not a model download (a backend install, id
   * `backend:<recipe>:<backend>`), answered as it stands while one of that id runs. `run` reports
   * what it has to report of its progress; `stop` ends it, leaving nothing half-done. */
  startTask(id: string, type: "backend", name: string, run: (onProgress: (p: Partial<Progress>) => void) => Promise<void>, stop: () => void): JobSnapshot {
    const existing = this.jobs.get(id);
    if (existing?.running) return existing;
    const job = newJob(id, type, name);
    this.jobs.set(id, job);
    this.jobModels.delete(id);
    const task: Task = { stop, done: run((p) => update(job, p)) };
    this.tasks.set(id, task);
    settle(job, task.done);
    return job;
  }

  list(): JobSnapshot[] {
    return [...this.jobs.values()];
  }

  get(id: string): JobSnapshot | undefined {
    return this.jobs.get(id);
  }

  /** pause: stop, keeping partial files to resume; cancel: stop and delete them; remove: forget.
   * A backend install cannot pause: stopped either way, it keeps nothing, and installing again
   * starts over. A job that completed stays completed, as Lemonade keeps it. */
  async control(id: string, action: "pause" | "cancel" | "remove"): Promise<JobSnapshot | null> {
    const job = this.jobs.get(id);
    if (!job) return null;
    const reason = action === "pause" ? "paused" : "cancelled";
    const task = this.tasks.get(id);
    const modelId = this.jobModels.get(id);
    if (task) {
      if (job.running) {
        task.stop();
        await task.done.catch(() => {});
      }
    } else if (modelId !== undefined) {
      const worker = this.workers.get(modelId);
      if (action === "remove" && !worker) {
        this.forget(id);
        return null;
      }
      if (worker) {
        worker.stopReason = reason;
        worker.abort.abort(new DownloadStopped(reason));
        await worker.promise.catch(() => {});
      }
      // Cancel deletes the partial files, whether the job was still running or had stopped.
      const plan = worker?.plan ?? this.plans.get(modelId);
      if (reason === "cancelled" && plan) {
        for (const { manifest, file, dir } of plan) removePartials(dir, manifest, [file]);
      }
    }
    if (job.status !== "completed") job.status = reason;
    job.running = false;
    if (action === "remove") {
      this.forget(id);
      return null;
    }
    return job;
  }

  private forget(id: string): void {
    this.jobs.delete(id);
    this.jobModels.delete(id);
    this.tasks.delete(id);
  }
}

/** A job's first snapshot: nothing downloaded yet. */
function newJob(id: string, type: JobSnapshot["type"], name: string, canonicalId?: string): JobSnapshot {
  return {
    id,
    type,
    model_name: name,
    ...(canonicalId !== undefined ? { canonical_id: canonicalId } : {}),
    status: "downloading",
    running: true,
    file: "",
    file_index: 0,
    total_files: 0,
    bytes_downloaded: 0,
    bytes_total: 0,
    total_download_size: 0,
    bytes_previously_downloaded: 0,
    completed_files_bytes: 0,
    cumulative_bytes_downloaded: 0,
    overall_bytes_downloaded: 0,
    percent: 0,
    complete: false,
  };
}

/** Takes a progress report into the snapshot; the bytes across the job follow from it. */
function update(job: JobSnapshot, p: Partial<Progress> & { completed_files_bytes?: number }): void {
  Object.assign(job, p);
  job.cumulative_bytes_downloaded = job.overall_bytes_downloaded = job.completed_files_bytes + job.bytes_downloaded;
}

/** The snapshot once the work ends: completed, stopped by a client (DownloadStopped) or failed. */
function settle(job: JobSnapshot, done: Promise<void>): void {
  done.then(
    () => {
      Object.assign(job, { status: "completed", running: false, complete: true, percent: 100 });
      if (job.total_download_size > 0) job.cumulative_bytes_downloaded = job.overall_bytes_downloaded = job.total_download_size;
    },
    (err: Error) => {
      job.running = false;
      if (err instanceof DownloadStopped) job.status = err.reason;
      else Object.assign(job, { status: "error", error: err.message });
    },
  );
}
