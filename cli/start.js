// @bun @bun-cjs
(function (exports, require, module, __filename, __dirname) {
// `npm start`: the server run from its bundle (scripts/build.ts --start: one minified file, so
// start-up neither resolves, reads nor transpiles some 480 modules) when the bundle is
// current, that is, built by this Bun for this checkout after the last change to any file it was
// built from. Otherwise the bundle is built first, in a process of its own (the bundler's memory
// is not the server's); where that build fails, the sources run instead and report the error as
// `bun cli/main.ts` would. The check reads one file and stats each input (bench start: about 1 ms).
// This file is CommonJS in the form Bun's bundler writes (the pragma above), which Bun runs
// without its transpiler: a TypeScript launcher would page in the transpiler's code, about 1 MB of
// the server's RSS, and the bundle needs none of it.
"use strict";
const { readFileSync, statSync } = require("node:fs");
const { join, resolve } = require("node:path");

const ROOT = resolve(__dirname, "..");

/** Where the bundle lives: LEMONADE_START_DIR, else .cache/start in the checkout. */
function bundleDir(env, root) {
  return env.LEMONADE_START_DIR ? resolve(env.LEMONADE_START_DIR) : join(root, ".cache", "start");
}

/** Why the bundle in `dir` must not run for the checkout at `root` under the Bun `bunRevision`
 * (a phrase for the log), or null with the bundle's path when it may. */
function checkBundle(dir, root, bunRevision) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  } catch {
    return { stale: "there is none yet" };
  }
  if (manifest.root !== root) return { stale: `it was built for ${manifest.root}` };
  if (manifest.bun !== bunRevision) return { stale: "another Bun built it" };
  for (const file of manifest.files) {
    try {
      statSync(join(dir, file));
    } catch {
      return { stale: `its ${file} is gone` };
    }
  }
  for (const file of manifest.inputs) {
    let changed;
    try {
      changed = statSync(join(root, file)).mtimeMs;
    } catch {
      return { stale: `${file} is gone` };
    }
    if (changed >= manifest.builtAt) return { stale: `${file} changed` };
  }
  return { stale: null, bundle: join(dir, manifest.bundle) };
}

module.exports = { bundleDir, checkBundle };

if (require.main === module) {
  const dir = bundleDir(process.env, ROOT);
  let check = checkBundle(dir, ROOT, Bun.revision);
  if (check.stale) {
    process.stderr.write(`Building npm start's bundle, since ${check.stale} (scripts/build.ts --start)\n`);
    const build = Bun.spawnSync([process.execPath, join(ROOT, "scripts", "build.ts"), "--start", dir], { cwd: ROOT, stdout: "ignore", stderr: "inherit" });
    if (build.exitCode === 0) check = checkBundle(dir, ROOT, Bun.revision);
  }
  if (check.stale) {
    process.stderr.write("Running the sources instead of the bundle\n");
    require(join(ROOT, "cli", "main.ts"));
  } else require(check.bundle);
}
})
