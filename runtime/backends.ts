// Backends as the lifecycle API sees them: their states, install (shared builds) and uninstall
// (which first unloads the models running on the backend).
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { EngineEnv, Recipe, RecipeStatus } from "../engines/engine.ts";
import { InstallCancelled, InstallError, type EngineInstaller, type InstallProgress } from "../engines/installer.ts";
import { findRecipe, recipeStatuses } from "../engines/recipes.ts";
import type { Progress } from "../engines/source-build.ts";
import type { Scheduler } from "./scheduler.ts";

/** A release download's file and bytes, as an install reports it (protocols read it from here). */
export type { FileProgress } from "../engines/release-install.ts";

/** Maps installer failures onto the documented codes. */
async function installing<T>(work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof InstallError) throw ApiError.of(E.unsupportedBackend, err.message);
    if (err instanceof InstallCancelled) throw ApiError.of(E.installCancelled, err.message);
    if (err instanceof ApiError) throw err;
    throw ApiError.of(E.installFailed, `Install failed: ${(err as Error).message}`);
  }
}

export class Backends {
  constructor(
    private readonly recipes: readonly Recipe[],
    private readonly installer: EngineInstaller,
    private readonly scheduler: Scheduler<CatalogModel>,
    private readonly env: EngineEnv,
    private readonly log: (message: string) => void,
  ) {}

  /** The backend installs under way, with their phase and percent. */
  installs(): InstallProgress[] {
    return this.installer.installs();
  }

  /** Cancels an install under way; 404 when there is none of that pair. */
  cancelInstall(recipe: string, backend: string): void {
    if (!this.stopInstall(recipe, backend)) throw ApiError.of(E.installNotRunning, `No install of ${recipe}:${backend} is under way`);
  }

  /** Cancels an install under way; false when none was (it may have just ended). */
  stopInstall(recipe: string, backend: string): boolean {
    if (!this.installer.cancel(recipe, backend)) return false;
    this.log(`Cancelled the install of ${recipe}:${backend}`);
    return true;
  }

  /** Every recipe's backends, read fresh from disk and PATH. */
  statuses(): Record<string, RecipeStatus> {
    return recipeStatuses(this.recipes, this.env);
  }

  /** Refuses an unknown recipe:backend pair with a 400; true when it is installed. */
  isInstalled(recipe: string, backend: string): Promise<boolean> {
    return installing(() => this.installer.isInstalled(recipe, backend));
  }

  /** Refuses with a 400, before a stream starts, what cannot be installed here. */
  checkInstallable(recipe: string, backend: string, force = false): Promise<void> {
    return installing(() => this.installer.check(recipe, backend, force));
  }

  install(recipe: string, backend: string, progress?: Progress, force = false): Promise<void> {
    return installing(async () => {
      this.log(`Installing ${recipe}:${backend}`);
      const binary = await this.installer.install(recipe, backend, progress, force);
      this.log(`Installed ${recipe}:${backend} at ${binary}`);
    });
  }

  /** What an install would fetch (`/v1/install/dry-run`); 500 when the backend has no release. */
  dryRun(recipe: string, backend: string, arch: string) {
    try {
      return this.installer.dryRun(recipe, backend, arch);
    } catch (err) {
      throw ApiError.of(E.dryRunFailed, (err as Error).message);
    }
  }

  /** Unloads the models on the backend, then removes it; false when it was not installed. */
  async uninstall(recipe: string, backend: string): Promise<boolean> {
    if (!(await this.isInstalled(recipe, backend))) return false;
    const option = findRecipe(this.recipes, recipe)?.backendOption;
    const unloaded = await this.scheduler.unloadWhere(
      (s) => s.model.recipe === recipe && (s.engine.backend ?? (option !== undefined ? s.spec.options[option] : undefined)) === backend,
    );
    if (unloaded.length) this.log(`Unloaded ${unloaded.join(", ")} before removing ${recipe}:${backend}`);
    await installing(() => this.installer.uninstall(recipe, backend));
    this.log(`Uninstalled ${recipe}:${backend}`);
    return true;
  }
}
