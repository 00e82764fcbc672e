// Builds the source-built engines into the cache directory unless a build of the same version is
// already there. CI runs this before the tests; `lemonade backends install` does the same per engine.
import { defaultCacheDir } from "../server/config.ts";
import { cachedBinary, LLAMACPP, WHISPERCPP } from "../engines/recipes.ts";
import { buildFromSource, LLAMACPP_BUILD, WHISPERCPP_BUILD } from "../engines/source-build.ts";

const BUILDS = { llamacpp: LLAMACPP_BUILD(LLAMACPP), whispercpp: WHISPERCPP_BUILD(WHISPERCPP) };

const cacheDir = defaultCacheDir();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !(w in BUILDS));
if (unknown.length) {
  console.error(`unknown engine(s): ${unknown.join(", ")} (known: ${Object.keys(BUILDS).join(", ")})`);
  process.exit(2);
}
for (const name of (wanted.length ? wanted : Object.keys(BUILDS)) as (keyof typeof BUILDS)[]) {
  const recipe = BUILDS[name];
  const cached = cachedBinary(cacheDir, recipe.engine);
  if (cached) {
    console.log(`${name}: ${recipe.engine.version} already built at ${cached}`);
    continue;
  }
  const started = Date.now();
  let last = "";
  const binary = await buildFromSource(cacheDir, recipe, (phase, percent) => {
    const line = `${name}: ${phase} ${percent}%`;
    if (line !== last && (percent % 10 === 0 || phase !== "build")) console.log(line);
    last = line;
  });
  console.log(`${name}: built ${binary} in ${Math.round((Date.now() - started) / 1000)} s`);
}
