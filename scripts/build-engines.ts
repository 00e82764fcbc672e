// Builds the source-built engines into the cache directory unless a build of the same version is
// already there. `npm test` runs it through scripts/test-setup.ts; `lemonade backends install`
// does the same per engine through the server.
//   bun scripts/build-engines.ts [llamacpp] [whispercpp]
import { defaultCacheDir } from "../config/config.ts";
import { llamacpp } from "../engines/llamacpp.ts";
import { whispercpp } from "../engines/whispercpp.ts";
import { buildFromSource, cachedBinary } from "../engines/source-build.ts";

export const BUILDS = { llamacpp: llamacpp.builds!.cpu!, whispercpp: whispercpp.builds!.cpu! };
export type EngineName = keyof typeof BUILDS;

/** Builds each named engine that is not already built, reporting progress in plain lines. */
export async function buildEngines(names: EngineName[], cacheDir = defaultCacheDir()): Promise<void> {
  const registry = process.env.NPM_CONFIG_REGISTRY || process.env.npm_config_registry || undefined;
  for (const name of names) {
    const recipe = BUILDS[name];
    const cached = cachedBinary(cacheDir, recipe.engine);
    if (cached) {
      console.log(`${name}: ${recipe.engine.version} already built at ${cached}`);
      continue;
    }
    const started = Date.now();
    let shown = -1;
    const binary = await buildFromSource(
      cacheDir,
      recipe,
      (phase, percent) => {
        if (Math.floor(percent / 10) !== shown) {
          shown = Math.floor(percent / 10);
          console.log(`${name}: ${phase} ${percent}%`);
        }
      },
      registry,
    );
    console.log(`${name}: built ${binary} in ${Math.round((Date.now() - started) / 1000)} s`);
  }
}

if (import.meta.main) {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((w) => !(w in BUILDS));
  if (unknown.length) {
    console.error(`unknown engine(s): ${unknown.join(", ")} (known: ${Object.keys(BUILDS).join(", ")})`);
    process.exit(2);
  }
  await buildEngines((wanted.length ? wanted : Object.keys(BUILDS)) as EngineName[]);
}
