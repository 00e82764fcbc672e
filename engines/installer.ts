// Installs and removes backends: a pinned prebuilt release first (engines/release-install.ts),
// else — for the CPU backends, when the release path cannot serve them here — the source build
// each recipe declares. Concurrent installs of one backend share a single download or build.
import { rmSync } from "node:fs";
import { dirname } from "node:path";
import type { Recipe, BuildRecipe } from "./engine.ts";
import { findRecipe } from "./recipes.ts";
import { installedRelease, installPlan, installRelease, ReleaseInstallError, ReleaseUnavailable, backendVersions, releaseAsset, rocmAssetFamily, type InstallPlan } from "./release-install.ts";
import { backendSupportsArch, hardwareProblem, rocmIsa } from "./release-backends.ts";
import { devices as probeDevices, type Devices } from "../lib/devices.ts";
import { buildFromSource, cachedBinary, uninstallEngine, type Progress } from "./source-build.ts";

export interface ReleaseSettings {
  /** https://github.com, or LEMONADE_GITHUB_ENDPOINT. */
  endpoint: string;
  /** The releases API that publishes asset digests: LEMONADE_GITHUB_API_ENDPOINT, else beside `endpoint`. */
  apiEndpoint?: string;
  /** config.json `no_fetch_executables`. */
  noFetch: () => boolean;
  log: (line: string) => void;
}

export class InstallError extends Error {}

/** The install was cancelled before it ended; nothing of it is kept. */
export class InstallCancelled extends Error {}

/** A backend install under way, as its last progress report left it. */
export interface InstallProgress {
  recipe: string;
  backend: string;
  phase: string;
  percent: number;
}

export class EngineInstaller {
  private readonly running = new Map<string, { promise: Promise<string>; listeners: Set<Progress>; progress: InstallProgress; abort: AbortController }>();

  constructor(
    private readonly recipes: readonly Recipe[],
    private readonly cacheDir: string,
    /** Where engine sources are fetched from (NPM_CONFIG_REGISTRY, as npm reads it). */
    private readonly registry?: string,
    private readonly releases: ReleaseSettings = { endpoint: "https://github.com", noFetch: () => false, log: () => {} },
    private readonly devices: () => Devices = probeDevices,
  ) {}

  private hasRelease(recipe: string, backend: string): boolean {
    return backendVersions(this.cacheDir).releases?.[recipe]?.backends?.[backend] !== undefined;
  }

  /** The source build of a backend, when it has one. */
  private buildFor(recipe: string, backend: string): BuildRecipe | undefined {
    return findRecipe(this.recipes, recipe)?.builds?.[backend];
  }

  /** Refuses a pair that is neither released nor built here. */
  private known(recipe: string, backend: string): void {
    if (this.buildFor(recipe, backend) || this.hasRelease(recipe, backend)) return;
    const known = this.recipes.flatMap((r) => Object.keys(r.builds ?? {}).map((b) => `${r.name}:${b}`));
    for (const [r, rel] of Object.entries(backendVersions(this.cacheDir).releases ?? {})) for (const b of Object.keys(rel.backends)) known.push(`${r}:${b}`);
    throw new InstallError(`${recipe}:${backend} cannot be installed on this system (installable: ${[...new Set(known)].join(", ")})`);
  }

  private installedBinary(recipe: string, backend: string): string | null {
    const build = this.buildFor(recipe, backend);
    return installedRelease(this.cacheDir, recipe, backend) ?? (build ? cachedBinary(this.cacheDir, build.engine) : null);
  }

  isInstalled(recipe: string, backend: string): boolean {
    this.known(recipe, backend);
    return this.installedBinary(recipe, backend) !== null;
  }

  /** Refuses, before anything starts, a backend this machine cannot have: its GPU is missing (unless
   * `force`), or it has no source build and no release for this platform. */
  check(recipe: string, backend: string, force = false): void {
    this.known(recipe, backend);
    if (this.installedBinary(recipe, backend)) return;
    const problem = hardwareProblem(backend, this.devices());
    if (problem && !force) throw new InstallError(`${recipe}:${backend} cannot run here: ${problem} (force: true tries anyway)`);
    if (this.buildFor(recipe, backend)) return;
    try {
      releaseAsset(backendVersions(this.cacheDir), recipe, backend, this.devices().platform, rocmIsa(this.devices()));
    } catch (err) {
      throw new InstallError(`${recipe}:${backend} cannot be installed: ${(err as Error).message}`);
    }
  }

  /** What installing a backend would download, for this machine's GPU or the ROCm ISA `arch`
 * names (resolved to its published family), and whether the backend runs on that GPU; throws
 * when the backend has no release to fetch. */
  dryRun(recipe: string, backend: string, arch: string): InstallPlan & { supported: boolean } {
    const versions = backendVersions(this.cacheDir);
    const plan = installPlan(versions, recipe, backend, this.devices().platform, arch || rocmIsa(this.devices()), this.releases.endpoint);
    return { ...plan, supported: arch === "" || backendSupportsArch(backend, rocmAssetFamily(versions, arch)) };
  }

  /** The pinned release, else the source build (a CPU backend whose release cannot be had here). */
  private async fetchOrBuild(recipe: string, backend: string, progress: Progress, signal: AbortSignal): Promise<string> {
    const build = this.buildFor(recipe, backend);
    if (this.hasRelease(recipe, backend)) {
      try {
        return await installRelease(recipe, backend, { cacheDir: this.cacheDir, endpoint: this.releases.endpoint, apiEndpoint: this.releases.apiEndpoint, noFetch: this.releases.noFetch(), gpuIsa: rocmIsa(this.devices()), onProgress: progress, log: this.releases.log, signal });
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        // A failed install (checksum, archive, download) is the install's failure, not an unknown backend.
        if (err instanceof ReleaseInstallError) throw err;
        if (!(err instanceof ReleaseUnavailable) || !build) throw new Error(`${recipe}:${backend} cannot be installed: ${(err as Error).message}`);
        this.releases.log(`The ${recipe}:${backend} release cannot be installed (${(err as Error).message}); building it from source instead`);
      }
    }
    if (!build) throw new InstallError(`${recipe}:${backend} has no source build here`);
    if (this.releases.noFetch()) throw new ReleaseInstallError(`no_fetch_executables is set in config.json: ${recipe}:${backend} is not fetched or built`);
    return buildFromSource(this.cacheDir, build, progress, this.registry, signal);
  }

  /** Installs the backend unless it is already installed; returns the binary's path. */
  install(recipe: string, backend: string, progress: Progress = () => {}, force = false): Promise<string> {
    try {
      this.check(recipe, backend, force);
    } catch (err) {
      return Promise.reject(err);
    }
    const key = `${recipe}:${backend}`;
    const cached = this.installedBinary(recipe, backend);
    if (cached) {
      progress("complete", 100);
      return Promise.resolve(cached);
    }
    let job = this.running.get(key);
    if (!job) {
      const listeners = new Set<Progress>();
      const progress: InstallProgress = { recipe, backend, phase: "starting", percent: 0 };
      const abort = new AbortController();
      const promise = this.fetchOrBuild(
        recipe,
        backend,
        (phase, pct, file) => {
          Object.assign(progress, { phase, percent: pct });
          listeners.forEach((l) => l(phase, pct, file));
        },
        abort.signal,
      );
      job = { promise, listeners, progress, abort };
      this.running.set(key, job);
      const done = () => this.running.delete(key);
      promise.then(done, done);
    }
    job.listeners.add(progress);
    const listeners = job.listeners;
    return job.promise.finally(() => listeners.delete(progress));
  }

  /** The installs under way (whoever asked for them: /v1/install, or a load that needs its engine). */
  installs(): InstallProgress[] {
    return [...this.running.values()].map((j) => ({ ...j.progress }));
  }

  /** Cancels the install of a backend under way (every caller waiting on it gets InstallCancelled);
   * false when none is. A release download cannot be paused, only stopped: its partial file goes. */
  cancel(recipe: string, backend: string): boolean {
    const job = this.running.get(`${recipe}:${backend}`);
    if (!job) return false;
    job.abort.abort(new InstallCancelled(`The install of ${recipe}:${backend} was cancelled`));
    return true;
  }

  /** Removes the backend's binaries (its release and its source build); false when none was installed. */
  uninstall(recipe: string, backend: string): boolean {
    this.known(recipe, backend);
    const release = installedRelease(this.cacheDir, recipe, backend);
    if (release) rmSync(dirname(dirname(release)), { recursive: true, force: true });
    const build = this.buildFor(recipe, backend);
    const built = build ? uninstallEngine(this.cacheDir, build.engine) : false;
    return built || release !== null;
  }
}
