// npm start's launcher (cli/start.js) runs the bundle only while it is current: built by this Bun,
// for this checkout, after the last change to every file it was built from, with its files there.
import { expect, test } from "bun:test";
import { mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bundleDir, checkBundle } from "../../cli/start.js";
import { tempDir } from "../helpers/temp.ts";

const BUN = "bun-revision-1";
const HOUR_AGO = new Date(Date.now() - 3_600_000);

/** A checkout with two sources written an hour ago, and a bundle built from them just now. */
function built(manifest: Record<string, unknown> = {}) {
  const root = tempDir();
  const dir = join(root, ".cache", "start");
  mkdirSync(join(root, "cli"), { recursive: true });
  mkdirSync(dir, { recursive: true });
  for (const file of ["cli/main.ts", "package.json"]) {
    writeFileSync(join(root, file), "// source");
    utimesSync(join(root, file), HOUR_AGO, HOUR_AGO);
  }
  for (const file of ["main-abc.js", "main-abc.js.jsc"]) writeFileSync(join(dir, file), "");
  const full = { root, bun: BUN, builtAt: Date.now(), bundle: "main-abc.js", files: ["main-abc.js", "main-abc.js.jsc"], inputs: ["cli/main.ts", "package.json"], ...manifest };
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(full));
  return { root, dir };
}

test("a bundle built after its last input changed runs", () => {
  const { root, dir } = built();
  expect(checkBundle(dir, root, BUN)).toEqual({ stale: null, bundle: join(dir, "main-abc.js") });
});

test("an input changed since the build makes the bundle stale, and names the file", () => {
  const { root, dir } = built();
  const now = new Date(Date.now() + 1000);
  utimesSync(join(root, "package.json"), now, now);
  expect(checkBundle(dir, root, BUN)).toEqual({ stale: "package.json changed" });
});

test("an input that is gone makes the bundle stale", () => {
  const { root, dir } = built();
  rmSync(join(root, "cli", "main.ts"));
  expect(checkBundle(dir, root, BUN)).toEqual({ stale: "cli/main.ts is gone" });
});

test("a bundle whose bytecode file is gone is stale", () => {
  const { root, dir } = built();
  rmSync(join(dir, "main-abc.js.jsc"));
  expect(checkBundle(dir, root, BUN)).toEqual({ stale: "its main-abc.js.jsc is gone" });
});

test("a bundle another Bun built is stale: its bytecode is that Bun's", () => {
  const { root, dir } = built();
  expect(checkBundle(dir, root, "bun-revision-2")).toEqual({ stale: "another Bun built it" });
});

test("a bundle built for another checkout is stale: its paths are that checkout's", () => {
  const { root, dir } = built({ root: "/elsewhere" });
  expect(checkBundle(dir, root, BUN)).toEqual({ stale: "it was built for /elsewhere" });
});

test("no manifest, or one that is not JSON, means there is no bundle yet", () => {
  const root = tempDir();
  expect(checkBundle(join(root, "none"), root, BUN)).toEqual({ stale: "there is none yet" });
  const { dir } = built();
  writeFileSync(join(dir, "manifest.json"), "{");
  expect(checkBundle(dir, root, BUN)).toEqual({ stale: "there is none yet" });
});

test("the bundle lives in .cache/start unless LEMONADE_START_DIR says elsewhere", () => {
  expect(bundleDir({}, "/src/lemonade")).toBe("/src/lemonade/.cache/start");
  expect(bundleDir({ LEMONADE_START_DIR: "/tmp/b" }, "/src/lemonade")).toBe("/tmp/b");
});
