// What the tests need beyond npm packages, made ready before `npm test` (its pretest step):
// Debian's build tools, espeak-ng, ffmpeg, openssl, Chromium, tzdata and the Python onnx package; llama.cpp and
// whisper.cpp built into the cache; the tiny test models. Each step is skipped when its result is already there.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { buildEngines } from "./build-engines.ts";
import { makeClassifierModels, makeTestModels } from "./make-test-models.ts";

const TOOLS: Record<string, string> = {
  git: "git",
  cmake: "cmake",
  make: "build-essential",
  "g++": "build-essential",
  tar: "tar",
  "espeak-ng": "espeak-ng",
  ffmpeg: "ffmpeg",
  // `lemonade worker` makes its TLS certificate with it (test/integration/rpc.test.ts).
  openssl: "openssl",
  // The web app's end-to-end tests drive Debian's Chromium through playwright-core.
  chromium: "chromium",
};

/** Files the tests read, and their Debian packages: the zone files the log's local time is
 * checked against (test/unit/local-time.test.ts). */
const FILES: Record<string, string> = { "/usr/share/zoneinfo/America/New_York": "tzdata" };

/** Python modules the classifier test models are written with, and their Debian packages. */
const PYTHON_MODULES: Record<string, string> = { onnx: "python3-onnx", numpy: "python3-numpy" };

function hasPythonModule(module: string): boolean {
  try {
    return Bun.spawnSync(["/usr/bin/python3", "-c", `import ${module}`], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
  } catch {
    return false; // no /usr/bin/python3 at all
  }
}

function ensureTools(): void {
  const missing = Object.keys(TOOLS).filter((t) => !Bun.which(t));
  const missingModules = Object.keys(PYTHON_MODULES).filter((m) => !hasPythonModule(m));
  const missingFiles = Object.keys(FILES).filter((f) => !existsSync(f));
  if (!missing.length && !missingModules.length && !missingFiles.length) return;
  const packages = [...new Set([...missing.map((t) => TOOLS[t]!), ...missingModules.map((m) => PYTHON_MODULES[m]!), ...missingFiles.map((f) => FILES[f]!)])];
  missing.push(...missingModules.map((m) => `python3 ${m}`), ...missingFiles);
  const canInstall = process.getuid?.() === 0 && Bun.which("apt-get");
  if (!canInstall) {
    console.error(`Missing ${missing.join(", ")}. Install them first: sudo apt-get install -y ${packages.join(" ")}`);
    process.exit(1);
  }
  console.log(`Installing ${packages.join(", ")} from Debian's packages`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  for (const argv of [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", ...packages]]) {
    const r = Bun.spawnSync(argv, { env, stdout: "ignore", stderr: "inherit" });
    if (r.exitCode !== 0) process.exit(r.exitCode ?? 1);
  }
}

ensureTools();
await buildEngines(["llamacpp", "whispercpp"]);
makeTestModels(join(import.meta.dir, "..", ".cache", "test-models"));
makeClassifierModels(join(import.meta.dir, "..", ".cache", "test-models", "classifiers"));
console.log("Test prerequisites are ready.");
