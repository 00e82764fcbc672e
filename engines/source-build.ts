// Builds a native engine from the source an npm package ships (DESIGN.md: llama.cpp from
// node-llama-cpp, whisper.cpp from nodejs-whisper) and installs its binaries into
// `<cache>/bin/<recipe>/<version>/`. The build happens in a scratch folder and is moved into place
// only when complete, so an interrupted build never leaves a binary that looks installed.
import { cpSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { basename, dirname, join } from "node:path";
import { bestGpuBackend, GPU_BACKENDS, gpuBackendStatuses, locateGpuRelease, pinnedReleaseUrl, releaseUrl } from "./release-backends.ts";
import { backendVersions, installedRelease, type Progress } from "./release-install.ts";
import { readLines } from "../lib/lines.ts";
import {
  configuredBinary,
  configuredBinaryStatus,
  EngineConfigError,
  NotInstalledError,
  onPath,
  recipeStatus,
  systemBinaryStatus,
  type BackendStatus,
  type BuildRecipe,
  type BuildRunner,
  type EngineEnv,
  type RecipeStatus,
  type SourceBuiltEngine,
} from "./engine.ts";

export type { Progress };

/** Where a source-built engine's binaries live: `<cache>/bin/<recipe>/<version>/`. */
export function engineDir(cacheDir: string, engine: SourceBuiltEngine, version = engine.version): string {
  return join(cacheDir, "bin", engine.recipe, version);
}

export function cachedBinary(cacheDir: string, engine: SourceBuiltEngine): string | null {
  const path = join(engineDir(cacheDir, engine), engine.binary);
  return existsSync(path) ? path : null;
}

/** The engine's other binaries found beside it, as a backend's message (`lemonade backends` shows it). */
function extrasIn(dir: string, engine: SourceBuiltEngine): string {
  return (engine.extras ?? []).filter((e) => existsSync(join(dir, e.binary))).map((e) => `with ${e.binary} (${e.use})`).join(", ");
}

/** A source-built backend: installed once its build is in the cache, else installable. */
export function sourceBuiltStatus(cacheDir: string, engine: SourceBuiltEngine, backend: string): BackendStatus {
  const release = installedRelease(cacheDir, engine.recipe, backend);
  if (release) {
    const tag = basename(dirname(release));
    const repo = backendVersions(cacheDir).releases?.[engine.recipe]?.backends?.[backend]?.repo;
    return { devices: ["cpu"], state: "installed", message: extrasIn(dirname(release), engine), action: "", version: `release ${tag}`, ...(repo ? { release_url: releaseUrl(repo, tag) } : {}) };
  }
  // A build from source stands in for the pinned release, whose page is reported still.
  const page = pinnedReleaseUrl(cacheDir, engine.recipe, backend);
  if (cachedBinary(cacheDir, engine)) {
    return { devices: ["cpu"], state: "installed", message: extrasIn(engineDir(cacheDir, engine), engine), action: "", version: engine.version, ...page };
  }
  return {
    devices: ["cpu"],
    state: "installable",
    message: `${engine.description} is not built yet; installing builds it from source (a few minutes)`,
    action: `lemonade backends install ${engine.recipe}:${backend}`,
    version: engine.version,
    ...page,
  };
}

/** The backends of a recipe built from source here: `cpu`, the build in the cache, and `system`,
 * the same binary found on PATH. */
export function sourceBuiltRecipeStatus(engine: SourceBuiltEngine, env: EngineEnv): RecipeStatus {
  const configured = Object.entries(env.binaries?.[engine.recipe] ?? {}).map(([backend, path]) => [backend, configuredBinaryStatus(path)] as const);
  return recipeStatus({
    cpu: sourceBuiltStatus(env.cacheDir, engine, "cpu"),
    system: systemBinaryStatus(engine.binary, env),
    ...gpuBackendStatuses(engine.recipe, env),
    ...Object.fromEntries(configured),
  });
}

/** `auto`: a binary config.json names, else the build in the cache, else the one on PATH, else
 * `cpu` (which builds it). */
export function autoBackend(engine: SourceBuiltEngine, env: EngineEnv): string {
  const configured = Object.keys(env.binaries?.[engine.recipe] ?? {})[0];
  if (configured) return configured;
  // A GPU this machine has beats the CPU: CUDA, ROCm, Vulkan, Metal, installed or installable.
  const gpu = bestGpuBackend(engine.recipe, env);
  if (gpu) return gpu;
  if (installedRelease(env.cacheDir, engine.recipe, "cpu") || cachedBinary(env.cacheDir, engine)) return "cpu";
  return onPath(engine.binary, env) ? "system" : "cpu";
}

/** The binary for one of those backends (`auto` picks one). */
export function locateSourceBuilt(engine: SourceBuiltEngine, backend: string, env: EngineEnv): string {
  const { recipe, binary, description } = engine;
  if (backend === "auto") backend = autoBackend(engine, env);
  // A `<recipe>.<backend>_bin` in config.json wins: the user's own build for that backend.
  const own = configuredBinary(env, recipe, backend);
  if (own) return own;
  if (backend === "system") {
    const found = onPath(binary, env);
    if (!found) throw new EngineConfigError(`${recipe} backend 'system' needs ${binary} on PATH`);
    return found;
  }
  if ((GPU_BACKENDS as readonly string[]).includes(backend)) return locateGpuRelease(recipe, backend, env);
  if (backend !== "cpu") throw new EngineConfigError(`${recipe} backend '${backend}' is not available on this system (use cpu or system)`);
  const cached = installedRelease(env.cacheDir, recipe, "cpu") ?? cachedBinary(env.cacheDir, engine);
  if (!cached) {
    throw new NotInstalledError(`${description} is not installed: run \`lemonade backends install ${recipe}:cpu\` (or POST /v1/install)`);
  }
  return cached;
}

/** Where an engine's source tree is kept after the build (its vocab files, templates and samples
 * are what the test-model generator reads). */
export function sourceDir(cacheDir: string, engine: SourceBuiltEngine): string {
  return join(cacheDir, "src", engine.recipe, engine.version);
}

export const DEFAULT_NPM_REGISTRY = "https://registry.npmjs.org";

/** The package's tarball straight from the npm registry (no npm needed, so the single-file
 * build can install engines too). */
async function fetchPackage(spec: string, registryUrl: string, signal?: AbortSignal): Promise<ArrayBuffer> {
  const at = spec.lastIndexOf("@");
  const [name, version] = [spec.slice(0, at), spec.slice(at + 1)];
  const registry = registryUrl.replace(/\/+$/, "");
  const url = `${registry}/${name}/-/${name.split("/").pop()}-${version}.tgz`;
  const res = await fetch(url, { signal });
  if (!res.ok) throw new Error(`downloading ${spec} from ${url} failed: HTTP ${res.status}`);
  return res.arrayBuffer();
}

/** Build steps running now. Each is its own process group (cmake starts make, make starts the
 * compilers), so that the whole tree stops with the server: SIGTERM during an install ends it. */
const building = new Set<number>();
process.on("exit", () => {
  for (const pgid of building) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
});

/** Runs one build step; an abort of `signal` kills its whole process group and the step throws
 * the abort's reason. */
const runCommand = async (argv: string[], cwd: string, onLine?: (line: string) => void, signal?: AbortSignal): Promise<void> => {
  signal?.throwIfAborted();
  const child = Bun.spawn(argv, { cwd, stdout: "pipe", stderr: "pipe", detached: true });
  building.add(child.pid);
  const stop = () => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  };
  signal?.addEventListener("abort", stop, { once: true });
  void child.exited.then(() => {
    building.delete(child.pid);
    signal?.removeEventListener("abort", stop);
  });
  const tail: string[] = [];
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const line of readLines(stream)) {
      tail.push(line);
      if (tail.length > 30) tail.shift();
      onLine?.(line);
    }
  };
  await Promise.all([pump(child.stdout), pump(child.stderr)]);
  const code = await child.exited;
  signal?.throwIfAborted();
  if (code !== 0) throw new Error(`${argv.join(" ")} exited with ${code}:\n${tail.join("\n")}`);
};

/** Builds and installs the engine; returns the installed binary's path. */
export async function buildFromSource(
  cacheDir: string,
  recipe: BuildRecipe,
  progress: Progress = () => {},
  registry = DEFAULT_NPM_REGISTRY,
  /** Aborted to cancel the build: the step running is killed and the scratch folder removed. */
  signal?: AbortSignal,
): Promise<string> {
  const { engine } = recipe;
  const run: BuildRunner = (argv, cwd, onLine) => runCommand(argv, cwd, onLine, signal);
  const finalDir = engineDir(cacheDir, engine);
  const scratch = join(cacheDir, "build", `${engine.recipe}-${engine.version}-${process.pid}-${Date.now()}`);
  mkdirSync(scratch, { recursive: true });
  try {
    progress("download", 0);
    const tarball = join(scratch, "package.tgz");
    await Bun.write(tarball, await fetchPackage(recipe.npmPackage, registry, signal));
    await run(["tar", "xzf", tarball], scratch);
    const src = join(scratch, "src");
    progress("extract", 5);
    await recipe.extract(join(scratch, "package"), src, run);
    progress("configure", 10);
    await run(["cmake", "-B", "build", "-DCMAKE_BUILD_TYPE=Release", ...recipe.cmakeFlags], src);
    const jobs = String(Math.max(1, availableParallelism()));
    await run(["cmake", "--build", "build", "--target", ...recipe.targets, "-j", jobs], src, (line) => {
      const m = /^\[\s*(\d+)%\]/.exec(line);
      if (m) progress("build", 10 + Math.round(Number(m[1]) * 0.85));
    });
    signal?.throwIfAborted();
    progress("install", 96);
    const staged = join(scratch, "install");
    cpSync(join(src, "build", "bin"), staged, { recursive: true });
    writeFileSync(join(staged, "VERSION"), engine.version + "\n");
    rmSync(join(src, "build"), { recursive: true, force: true });
    for (const [from, to] of [
      [staged, finalDir],
      [src, sourceDir(cacheDir, engine)],
    ] as const) {
      rmSync(to, { recursive: true, force: true });
      mkdirSync(join(to, ".."), { recursive: true });
      renameSync(from, to);
    }
    progress("complete", 100);
    return join(finalDir, engine.binary);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export function uninstallEngine(cacheDir: string, engine: SourceBuiltEngine): boolean {
  const dir = engineDir(cacheDir, engine);
  if (!existsSync(dir)) return false;
  rmSync(dir, { recursive: true, force: true });
  return true;
}
