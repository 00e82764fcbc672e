// Real engines and tiny models for the tests. The llama.cpp build is CI's job (.ci/run runs
// scripts/build-engines.ts); a missing build fails the tests with the command that fixes it.
import { join } from "node:path";
import { lstatSync, mkdirSync, symlinkSync } from "node:fs";
import { defaultCacheDir } from "../../config/config.ts";
import { LLAMACPP } from "../../engines/llamacpp.ts";
import { WHISPERCPP } from "../../engines/whispercpp.ts";
import { cachedBinary } from "../../engines/source-build.ts";
import { sourceDir } from "../../engines/source-build.ts";
import { CLASSIFIERS, makeClassifierModels, makeTestModels, TEST_MODELS } from "../../scripts/make-test-models.ts";

const sharedCache = defaultCacheDir();

export function llamaServerBinary(): string {
  const bin = cachedBinary(sharedCache, LLAMACPP);
  if (!bin) throw new Error(`llama-server is not built in ${sharedCache}: run \`npx bun scripts/build-engines.ts llamacpp\``);
  return bin;
}

/** The folder of generated tiny models (written on first use). */
export function testModelsDir(): string {
  llamaServerBinary();
  return makeTestModels(join(import.meta.dir, "..", "..", ".cache", "test-models"));
}

export const MODELS = TEST_MODELS;

/** The folder of one generated ONNX classifier (all written on first use). */
export function classifierDir(name: keyof typeof CLASSIFIERS): string {
  return join(makeClassifierModels(join(import.meta.dir, "..", "..", ".cache", "test-models", "classifiers")), name);
}

/** Makes a fresh cache dir see the shared engine builds, as an installed server would. The link
 * itself is checked (lstat), not its target: before any engine is built it points at nothing,
 * and linking again would fail with EEXIST. */
export function linkEngines(cacheDir: string): void {
  mkdirSync(cacheDir, { recursive: true });
  const link = join(cacheDir, "bin");
  if (!lstatSync(link, { throwIfNoEntry: false })) symlinkSync(join(sharedCache, "bin"), link);
}

/** whisper.cpp's sample recording (JFK's "ask not" line), from the source its build keeps. */
export function jfkSample(): string {
  if (!cachedBinary(sharedCache, WHISPERCPP)) {
    throw new Error(`whisper-server is not built in ${sharedCache}: run \`npx bun scripts/build-engines.ts whispercpp\``);
  }
  return join(sourceDir(sharedCache, WHISPERCPP), "samples", "jfk.mp3");
}
