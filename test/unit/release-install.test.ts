// The release path against a loopback stand-in for GitHub serving real archives (a shell-script
// engine that answers --version), with the checksums pinned in a test copy of the versions file;
// and the CPU fallback to a real (tiny) source build from a loopback npm registry, and its cancel.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as tar from "tar";
import { EngineInstaller, InstallCancelled, InstallError } from "../../engines/installer.ts";
import type { Recipe } from "../../engines/engine.ts";
import { tempDir } from "../helpers/server.ts";

const REPO = "test-org/fake.cpp";
const TAG = "b42";
const ASSET = "fake-b42-bin-ubuntu-x64.tar.gz";
const ZIP_ASSET = "fake-b42-bin-win-x64.zip";

/** A stand-in for github.com: release assets by path, Range requests, a switch to drop a transfer;
 * with `digests`, also its releases API (`/repos/{repo}/releases/tags/{tag}`, each asset's
 * `digest`, or none where the value is null). */
function startGitHub(files: Record<string, Uint8Array>, digests?: Record<string, string | null>) {
  const state = { ranges: [] as string[], dropAt: 0, requests: 0, api: 0 };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const { pathname } = new URL(req.url);
      if (digests && pathname === `/repos/${REPO}/releases/tags/${TAG}`) {
        state.api++;
        return Response.json({ tag_name: TAG, assets: Object.entries(digests).map(([name, digest]) => ({ name, ...(digest ? { digest } : { digest: null }) })) });
      }
      state.requests++;
      const m = /^\/(.+)\/releases\/download\/([^/]+)\/([^/]+)$/.exec(new URL(req.url).pathname);
      const data = m && m[1] === REPO && m[2] === TAG ? files[m[3]!] : undefined;
      if (!data) return new Response("Not Found", { status: 404 });
      const range = req.headers.get("range");
      state.ranges.push(range ?? "");
      const start = range ? Number(/bytes=(\d+)-/.exec(range)![1]) : 0;
      const body = data.subarray(start);
      const drop = state.dropAt;
      state.dropAt = 0;
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          if (drop) {
            controller.enqueue(body.subarray(0, drop));
            await Bun.sleep(50);
            controller.error(new Error("dropped"));
            return;
          }
          controller.enqueue(body);
          controller.close();
        },
      });
      return new Response(stream, {
        status: range ? 206 : 200,
        headers: { "content-length": String(body.length), ...(range ? { "content-range": `bytes ${start}-${data.length - 1}/${data.length}` } : {}) },
      });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, state, stop: () => server.stop(true) };
}

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** A release archive in llama.cpp's layout (`build/bin/<binary>`), the binary a script. */
async function packTarGz(entries: Record<string, string>, binaryExitCode = 0): Promise<Uint8Array> {
  const dir = tempDir("lemonade-pack-");
  for (const [path, text] of Object.entries(entries)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text.replace("EXIT", String(binaryExitCode)));
    chmodSync(join(dir, path), 0o755);
  }
  const out = join(dir, "out.tar.gz");
  await tar.c({ gzip: true, file: out, cwd: dir, preservePaths: true, portable: true }, Object.keys(entries));
  return new Uint8Array(readFileSync(out));
}

const SCRIPT = "#!/bin/sh\necho fake-server 42\nexit EXIT\n";

/** A recipe with a release and a tiny source build (CMake writes the binary at configure time). */
const fakeRecipe: Recipe = {
  name: "fakecpp",
  displayName: "fake.cpp",
  status: () => ({ backends: {} }),
  checkOptions() {},
  builds: {
    cpu: {
      engine: { recipe: "fakecpp", binary: "fake-server", version: "src-1", description: "fake.cpp" },
      npmPackage: "fake-engine@1.0.0",
      async extract(pkg, dest, run) {
        await run(["cp", "-r", pkg, dest], join(pkg, ".."));
      },
      cmakeFlags: [],
      targets: ["all"],
    },
  },
};

function cacheWithPins(pins: Record<string, string>, extra: Record<string, unknown> = {}): string {
  const cacheDir = tempDir();
  const releases = {
    fakecpp: {
      binary: "fake-server",
      backends: { cpu: { repo: REPO, assets: { "linux-x64": ASSET.replace(TAG, "{tag}"), "win32-x64": ZIP_ASSET.replace(TAG, "{tag}") } } },
    },
  };
  writeFileSync(join(cacheDir, "backend_versions.json"), JSON.stringify({ fakecpp: { cpu: TAG }, releases, checksums: { github: { [REPO]: { [TAG]: pins } } } }));
  if (Object.keys(extra).length) writeFileSync(join(cacheDir, "config.json"), JSON.stringify(extra));
  return cacheDir;
}

let good: Uint8Array;
let github: ReturnType<typeof startGitHub>;

beforeAll(async () => {
  good = await packTarGz({ "build/bin/fake-server": SCRIPT, "build/bin/libfake.so": "not really a library" });
});
afterAll(() => github?.stop());

const installerFor = (cacheDir: string, endpoint: string, lines: string[] = [], opts: { noFetch?: boolean; registry?: string } = {}) =>
  new EngineInstaller([fakeRecipe], cacheDir, opts.registry ?? "http://127.0.0.1:9", { endpoint, noFetch: () => opts.noFetch === true, log: (l) => lines.push(l) });

describe("installing a pinned release", () => {
  test("downloads, checks the sha256, unpacks into bin/<recipe>/<backend>/<tag>/ and reports progress", async () => {
    github = startGitHub({ [ASSET]: good });
    const cacheDir = cacheWithPins({ [ASSET]: `sha256:${sha(good)}` });
    const phases: string[] = [];
    const lines: string[] = [];
    const installer = installerFor(cacheDir, github.url, lines);
    // Two at once share one download.
    const [a, b] = await Promise.all([installer.install("fakecpp", "cpu", (p) => phases.push(p)), installer.install("fakecpp", "cpu")]);
    expect(a).toBe(join(cacheDir, "bin", "fakecpp", "cpu", TAG, "fake-server"));
    expect(b).toBe(a);
    expect(github.state.requests).toBe(1);
    expect(existsSync(join(cacheDir, "bin", "fakecpp", "cpu", TAG, "libfake.so"))).toBe(true);
    expect(phases).toContain("download");
    expect(phases.at(-1)).toBe("install");
    expect(installer.isInstalled("fakecpp", "cpu")).toBe(true);
    expect(lines.some((l) => l.includes(`Installed fakecpp:cpu ${TAG}`))).toBe(true);
    // Nothing is left half-way: no partial download, no staging folder.
    expect(readdirSync(join(cacheDir, "downloads"))).toEqual([]);
    expect(readdirSync(join(cacheDir, "bin", "fakecpp", "cpu"))).toEqual([TAG]);
    expect(installer.uninstall("fakecpp", "cpu")).toBe(true);
    expect(existsSync(join(cacheDir, "bin", "fakecpp", "cpu"))).toBe(false);
  });

  test("an install under way is listed with its last phase and percent, and leaves the list when it ends", async () => {
    const cacheDir = cacheWithPins({ [ASSET]: `sha256:${sha(good)}` });
    const installer = installerFor(cacheDir, github.url);
    const seen: { phase: string; listed: ReturnType<typeof installer.installs> }[] = [];
    await installer.install("fakecpp", "cpu", (phase) => seen.push({ phase, listed: installer.installs() }));
    expect(seen.length).toBeGreaterThan(0);
    for (const { phase, listed } of seen) expect(listed).toEqual([{ recipe: "fakecpp", backend: "cpu", phase, percent: expect.any(Number) }]);
    expect(installer.installs()).toEqual([]);
  });

  test("a wrong sha256 fails the install and leaves nothing installed", async () => {
    const cacheDir = cacheWithPins({ [ASSET]: `sha256:${"0".repeat(64)}` });
    const installer = installerFor(cacheDir, github.url);
    await expect(installer.install("fakecpp", "cpu")).rejects.toThrow(/does not match its pinned sha256/);
    expect(existsSync(join(cacheDir, "bin"))).toBe(false);
    expect(readdirSync(join(cacheDir, "downloads"))).toEqual([]);
  });

  test("a connection dropped mid-archive is resumed with a Range request", async () => {
    const cacheDir = cacheWithPins({ [ASSET]: `sha256:${sha(good)}` });
    github.state.ranges = [];
    github.state.dropAt = Math.floor(good.length / 2);
    const lines: string[] = [];
    const path = await installerFor(cacheDir, github.url, lines).install("fakecpp", "cpu");
    expect(existsSync(path)).toBe(true);
    expect(github.state.ranges).toEqual(["", `bytes=${Math.floor(good.length / 2)}-`]);
    expect(lines.some((l) => l.includes("broke off; resuming"))).toBe(true);
  });

  test("an archive entry that climbs out of its folder is refused, and nothing lands outside", async () => {
    const evilDir = tempDir("lemonade-evil-");
    mkdirSync(join(evilDir, "inner"));
    writeFileSync(join(evilDir, "escaped.txt"), "gotcha");
    const out = join(evilDir, "evil.tar.gz");
    await tar.c({ gzip: true, file: out, cwd: join(evilDir, "inner"), preservePaths: true }, ["../escaped.txt"]);
    const evil = new Uint8Array(readFileSync(out));
    github.stop();
    github = startGitHub({ [ASSET]: evil });
    const cacheDir = cacheWithPins({ [ASSET]: `sha256:${sha(evil)}` });
    await expect(installerFor(cacheDir, github.url).install("fakecpp", "cpu")).rejects.toThrow(/outside its folder/);
    expect(existsSync(join(cacheDir, "bin", "fakecpp", "escaped.txt"))).toBe(false);
    expect(existsSync(join(cacheDir, "bin", "fakecpp", "cpu", TAG))).toBe(false);
    github.stop();
    github = startGitHub({ [ASSET]: good });
  });

  test("a binary that does not run (--version fails) is not installed", async () => {
    const broken = await packTarGz({ "build/bin/fake-server": SCRIPT }, 3);
    github.stop();
    github = startGitHub({ [ASSET]: broken });
    const cacheDir = cacheWithPins({ [ASSET]: `sha256:${sha(broken)}` });
    await expect(installerFor(cacheDir, github.url).install("fakecpp", "cpu")).rejects.toThrow(/does not run here/);
    expect(existsSync(join(cacheDir, "bin", "fakecpp", "cpu", TAG))).toBe(false);
    github.stop();
    github = startGitHub({ [ASSET]: good });
  });

  test("no_fetch_executables refuses the download, and the source build too", async () => {
    const cacheDir = cacheWithPins({ [ASSET]: `sha256:${sha(good)}` });
    const before = github.state.requests;
    const err = await installerFor(cacheDir, github.url, [], { noFetch: true }).install("fakecpp", "cpu").catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(InstallError);
    expect(err.message).toContain("no_fetch_executables");
    expect(github.state.requests).toBe(before);
  });
});

describe("when the release path cannot serve the CPU backend", () => {
  test("a source build cancelled mid-step: the step's process is killed, every waiter told, nothing kept", async () => {
    const pkgDir = tempDir("lemonade-fake-pkg-");
    mkdirSync(join(pkgDir, "package"));
    writeFileSync(join(pkgDir, "package", "CMakeLists.txt"), "");
    await tar.c({ gzip: true, file: join(pkgDir, "fake.tgz"), cwd: pkgDir }, ["package"]);
    const tgz = readFileSync(join(pkgDir, "fake.tgz"));
    const registry = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(tgz) });
    // A build whose unpacking step takes far longer than the test.
    let stepStarted!: () => void;
    const started = new Promise<void>((resolve) => (stepStarted = resolve));
    const slow: Recipe = {
      ...fakeRecipe,
      builds: {
        cpu: {
          ...fakeRecipe.builds!.cpu!,
          async extract(pkg, _dest, run) {
            stepStarted();
            await run(["sleep", "300"], pkg);
          },
        },
      },
    };
    try {
      const cacheDir = cacheWithPins({ [ASSET]: `sha256:${sha(good)}` });
      const installer = new EngineInstaller([slow], cacheDir, `http://127.0.0.1:${registry.port}`, { endpoint: "http://127.0.0.1:9", noFetch: () => false, log: () => {} });
      // Two callers share the one build; both are told.
      const outcomes = Promise.allSettled([installer.install("fakecpp", "cpu"), installer.install("fakecpp", "cpu")]);
      await started;
      expect(installer.installs()).toHaveLength(1);
      expect(installer.cancel("fakecpp", "cpu")).toBe(true);
      for (const outcome of await outcomes) expect(outcome.status === "rejected" && outcome.reason instanceof InstallCancelled).toBe(true);
      expect(installer.installs()).toEqual([]);
      expect(readdirSync(join(cacheDir, "build"))).toEqual([]);
      expect(existsSync(join(cacheDir, "bin", "fakecpp"))).toBe(false);
      // Nothing is under way now.
      expect(installer.cancel("fakecpp", "cpu")).toBe(false);
    } finally {
      registry.stop(true);
    }
  });

  test("an unreachable endpoint falls back to the source build, saying so", async () => {
    // A loopback npm registry with the fake engine's source: a CMake project that writes the binary.
    const pkgDir = tempDir("lemonade-fake-pkg-");
    mkdirSync(join(pkgDir, "package"));
    writeFileSync(
      join(pkgDir, "package", "CMakeLists.txt"),
      'cmake_minimum_required(VERSION 3.10)\nproject(fake NONE)\nfile(WRITE ${CMAKE_BINARY_DIR}/bin/fake-server "#!/bin/sh\\necho fake\\n")\nadd_custom_target(noop ALL)\n',
    );
    await tar.c({ gzip: true, file: join(pkgDir, "fake.tgz"), cwd: pkgDir }, ["package"]);
    const tgz = readFileSync(join(pkgDir, "fake.tgz"));
    const registry = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (new URL(req.url).pathname === "/fake-engine/-/fake-engine-1.0.0.tgz" ? new Response(tgz) : new Response("no", { status: 404 })) });
    try {
      const cacheDir = cacheWithPins({ [ASSET]: `sha256:${sha(good)}` });
      const lines: string[] = [];
      const path = await installerFor(cacheDir, "http://127.0.0.1:9", lines, { registry: `http://127.0.0.1:${registry.port}` }).install("fakecpp", "cpu");
      expect(path).toBe(join(cacheDir, "bin", "fakecpp", "src-1", "fake-server"));
      expect(existsSync(path)).toBe(true);
      expect(lines.some((l) => /The fakecpp:cpu release cannot be installed \(cannot reach http:\/\/127\.0\.0\.1:9.*\); building it from source instead/.test(l))).toBe(true);
    } finally {
      registry.stop(true);
    }
  });

  test("no checksum pinned for the platform's asset: the reason is in the error of a backend without a source build", async () => {
    const cacheDir = cacheWithPins({});
    const noBuild: Recipe = { ...fakeRecipe, builds: {} };
    const installer = new EngineInstaller([noBuild], cacheDir, "http://127.0.0.1:9", { endpoint: github.url, noFetch: () => false, log: () => {} });
    await expect(installer.install("fakecpp", "cpu")).rejects.toThrow(/has no pinned sha256/);
  });
});

describe("an unpinned asset, checked against the digest GitHub's releases API publishes", () => {
  test("the published digest verifies the download end to end", async () => {
    const gh = startGitHub({ [ASSET]: good }, { [ASSET]: `sha256:${sha(good)}` });
    try {
      const cacheDir = cacheWithPins({});
      const lines: string[] = [];
      const path = await installerFor(cacheDir, gh.url, lines).install("fakecpp", "cpu");
      expect(path).toBe(join(cacheDir, "bin", "fakecpp", "cpu", TAG, "fake-server"));
      expect(gh.state.api).toBe(1);
      expect(lines).toContain(`${ASSET} matches the sha256 digest GitHub publishes for it`);
    } finally {
      gh.stop();
    }
  });

  test("a tampered asset (its bytes not the published digest's) is refused and nothing is installed", async () => {
    const gh = startGitHub({ [ASSET]: await packTarGz({ "build/bin/fake-server": SCRIPT.replace("42", "666") }) }, { [ASSET]: `sha256:${sha(good)}` });
    try {
      const cacheDir = cacheWithPins({});
      await expect(installerFor(cacheDir, gh.url).install("fakecpp", "cpu")).rejects.toThrow(/does not match the sha256 digest GitHub publishes for it/);
      expect(existsSync(join(cacheDir, "bin", "fakecpp", "cpu", TAG))).toBe(false);
      expect(readdirSync(join(cacheDir, "downloads"))).toEqual([]);
    } finally {
      gh.stop();
    }
  });

  test("no pin and no published digest: refused before any download, naming how to pin", async () => {
    const gh = startGitHub({ [ASSET]: good }, { [ASSET]: null });
    try {
      const cacheDir = cacheWithPins({});
      const noBuild: Recipe = { ...fakeRecipe, builds: {} };
      const installer = new EngineInstaller([noBuild], cacheDir, "http://127.0.0.1:9", { endpoint: gh.url, noFetch: () => false, log: () => {} });
      const err = await installer.install("fakecpp", "cpu").catch((e: Error) => e);
      expect((err as Error).message).toContain("GitHub publishes no sha256 digest for it");
      expect((err as Error).message).toContain(`pin it in ${join(cacheDir, "backend_versions.json")}: {"checksums": {"github": {"${REPO}": {"${TAG}": {"${ASSET}": "sha256:`);
      expect(gh.state.api).toBe(1);
      expect(gh.state.requests).toBe(0);
    } finally {
      gh.stop();
    }
  });

  test("LEMONADE_GITHUB_API_ENDPOINT: the API may live apart from the downloads", async () => {
    const api = startGitHub({}, { [ASSET]: `sha256:${sha(good)}` });
    const downloads = startGitHub({ [ASSET]: good });
    try {
      const cacheDir = cacheWithPins({});
      const installer = new EngineInstaller([fakeRecipe], cacheDir, "http://127.0.0.1:9", { endpoint: downloads.url, apiEndpoint: api.url, noFetch: () => false, log: () => {} });
      expect(await installer.install("fakecpp", "cpu")).toBe(join(cacheDir, "bin", "fakecpp", "cpu", TAG, "fake-server"));
      expect([api.state.api, downloads.state.requests]).toEqual([1, 1]);
    } finally {
      api.stop();
      downloads.stop();
    }
  });
});
