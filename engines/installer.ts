// Installs and removes the backends that can be built on this machine (each recipe declares its
// source builds). Concurrent installs of one backend share a single build.
import type { Recipe, BuildRecipe } from "./engine.ts";
import { findRecipe } from "./recipes.ts";
import { buildFromSource, cachedBinary, uninstallEngine, type Progress } from "./source-build.ts";

export class InstallError extends Error {}

export class EngineInstaller {
  private readonly running = new Map<string, { promise: Promise<string>; listeners: Set<Progress> }>();

  constructor(
    private readonly recipes: readonly Recipe[],
    private readonly cacheDir: string,
    /** Where engine sources are fetched from (NPM_CONFIG_REGISTRY, as npm reads it). */
    private readonly registry?: string,
  ) {}

  private buildFor(recipe: string, backend: string): BuildRecipe {
    const found = findRecipe(this.recipes, recipe)?.builds?.[backend];
    if (!found) {
      const known = this.recipes.flatMap((r) => Object.keys(r.builds ?? {}).map((b) => `${r.name}:${b}`)).join(", ");
      throw new InstallError(`${recipe}:${backend} cannot be installed on this system (installable: ${known})`);
    }
    return found;
  }

  isInstalled(recipe: string, backend: string): boolean {
    return cachedBinary(this.cacheDir, this.buildFor(recipe, backend).engine) !== null;
  }

  /** Builds the backend unless this version is already installed; returns the binary's path. */
  install(recipe: string, backend: string, progress: Progress = () => {}): Promise<string> {
    const build = this.buildFor(recipe, backend);
    const key = `${recipe}:${backend}`;
    const cached = cachedBinary(this.cacheDir, build.engine);
    if (cached) {
      progress("complete", 100);
      return Promise.resolve(cached);
    }
    let job = this.running.get(key);
    if (!job) {
      const listeners = new Set<Progress>();
      const promise = buildFromSource(this.cacheDir, build, (phase, pct) => listeners.forEach((l) => l(phase, pct)), this.registry);
      job = { promise, listeners };
      this.running.set(key, job);
      const done = () => this.running.delete(key);
      promise.then(done, done);
    }
    job.listeners.add(progress);
    const listeners = job.listeners;
    return job.promise.finally(() => listeners.delete(progress));
  }

  /** Removes the backend's binaries; false when it was not installed. */
  uninstall(recipe: string, backend: string): boolean {
    return uninstallEngine(this.cacheDir, this.buildFor(recipe, backend).engine);
  }
}
