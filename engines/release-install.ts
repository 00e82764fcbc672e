// Prebuilt engines from GitHub releases, as pinned in engines/backend-versions.json: the asset
// for this OS and CPU is downloaded (resumed after a broken connection), its sha256 checked
// before anything is unpacked, every archive entry checked to stay inside its folder, the
// binary tried (`--version`), and only then moved into `<cache>/bin/<recipe>/<backend>/<tag>/`,
// replacing an older version. The base URL is LEMONADE_GITHUB_ENDPOINT (https://github.com).
// The sha256 is the pinned one (backend_versions.json `checksums`), the strongest check; else
// the digest GitHub publishes for the asset in its releases API
// (`GET /repos/{owner}/{repo}/releases/tags/{tag}` -> `assets[].digest`, "sha256:..."), at
// LEMONADE_GITHUB_API_ENDPOINT (https://api.github.com for github.com, else the
// LEMONADE_GITHUB_ENDPOINT itself, a mirror serving both); with neither nothing is installed.
import { chmodSync, createWriteStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, normalize, relative, sep } from "node:path";
import type * as Tar from "tar";
import type Yauzl from "yauzl";
import defaults from "./backend-versions.json" with { type: "json" };
import { readJsonFile } from "../lib/json-file.ts";

/** A file an install is downloading, and how far: what a download job reports for it. */
export interface FileProgress {
  file: string;
  bytes: number;
  total: number;
}

/** An install's progress: its phase and percent, with the file while one is downloading. */
export type Progress = (phase: string, percent: number, file?: FileProgress) => void;

interface ReleaseBackend {
  repo: string;
  assets: Record<string, string>;
}

interface VersionsFile {
  releases: Record<string, { binary: string; backends: Record<string, ReleaseBackend> }>;
  checksums: { github: Record<string, Record<string, Record<string, string>>> };
  /** A GPU's ROCm ISA -> the family its assets are published under (`gfx1100` -> `gfx110X`). */
  rocm_asset_families?: Record<string, string>;
  [recipe: string]: unknown;
}

/** The release path cannot serve this backend here (no asset for the platform, no pinned
 * checksum, the endpoint unreachable): `cpu` falls back to the source build. */
export class ReleaseUnavailable extends Error {}

/** The release path refused or failed for a reason a fallback must not hide (wrong checksum,
 * an archive escaping its folder, downloads forbidden). */
export class ReleaseInstallError extends Error {}

export interface ReleaseAsset {
  recipe: string;
  backend: string;
  repo: string;
  tag: string;
  asset: string;
  /** The pinned sha256, when backend_versions.json has one. */
  pinned?: string;
  binary: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = isObject(v) && isObject(out[k]) ? merge(out[k] as Record<string, unknown>, v) : v;
  return out;
}

/** The project's pins, with the cache directory's `backend_versions.json` merged over them. */
export function backendVersions(cacheDir: string): VersionsFile {
  const local = readJsonFile<Record<string, unknown>>(join(cacheDir, "backend_versions.json"), {});
  return merge(defaults as Record<string, unknown>, isObject(local) ? local : {}) as unknown as VersionsFile;
}

export const platformKey = (platform = process.platform, arch = process.arch) => `${platform}-${arch}`;

/** The family a GPU's ROCm ISA is published under; an ISA the map does not list is its own. */
export function rocmAssetFamily(versions: VersionsFile, isa: string): string {
  return versions.rocm_asset_families?.[isa] ?? isa;
}

/** What a backend's release is for this platform (and, for an asset built per GPU family, for
 * the GPU's ROCm ISA); ReleaseUnavailable says why there is none. */
export function releaseAsset(versions: VersionsFile, recipe: string, backend: string, platform = platformKey(), gpuIsa?: string): ReleaseAsset {
  const release = versions.releases?.[recipe];
  const entry = release?.backends?.[backend];
  const tag = (versions[recipe] as Record<string, string> | undefined)?.[backend];
  if (!release || !entry || !tag) throw new ReleaseUnavailable(`${recipe}:${backend} has no prebuilt release`);
  const template = entry.assets[platform];
  if (!template) throw new ReleaseUnavailable(`${recipe}:${backend} has no release asset for ${platform}`);
  if (template.includes("{family}") && !gpuIsa) throw new ReleaseUnavailable(`${recipe}:${backend} is published per GPU family, and no ROCm GPU (gfx target) is found here`);
  const asset = template
    .replace("{tag}", tag)
    .replace("{short}", tag.split("-").pop()!)
    .replace("{family}", gpuIsa ? rocmAssetFamily(versions, gpuIsa) : "");
  const pinned = /^sha256:([0-9a-f]{64})$/.exec(versions.checksums?.github?.[entry.repo]?.[tag]?.[asset] ?? "")?.[1];
  return { recipe, backend, repo: entry.repo, tag, asset, ...(pinned ? { pinned } : {}), binary: release.binary };
}

/** What installing a backend would fetch, without fetching it (`/v1/install/dry-run`). */
export interface InstallPlan {
  repo: string;
  version: string;
  filename: string;
  url: string;
}

/** The asset an install of the backend downloads on `platform` for a GPU of ROCm ISA `gpuIsa`
 * (its family resolved as the release publishes it), from `endpoint`. */
export function installPlan(versions: VersionsFile, recipe: string, backend: string, platform: string, gpuIsa: string | undefined, endpoint: string): InstallPlan {
  const pin = releaseAsset(versions, recipe, backend, platform, gpuIsa);
  return { repo: pin.repo, version: pin.tag, filename: pin.asset, url: `${endpoint.replace(/\/+$/, "")}/${pin.repo}/releases/download/${pin.tag}/${pin.asset}` };
}

/** The releases API beside a download endpoint: api.github.com for github.com, else the endpoint. */
export const githubApiBase = (endpoint: string) => (/^https:\/\/github\.com\/*$/.test(endpoint) ? "https://api.github.com" : endpoint.replace(/\/+$/, ""));

/** How a user pins an asset's sha256 when neither a pin nor a published digest is there. */
const howToPin = (pin: ReleaseAsset, cacheDir: string) =>
  `pin it in ${join(cacheDir, "backend_versions.json")}: {"checksums": {"github": {"${pin.repo}": {"${pin.tag}": {"${pin.asset}": "sha256:<64 hex digits>"}}}}}`;

/** The sha256 an asset must have and where it comes from: the pin, else GitHub's published digest. */
async function expectedSha256(pin: ReleaseAsset, apiBase: string, cacheDir: string): Promise<{ sha256: string; source: string }> {
  if (pin.pinned) return { sha256: pin.pinned, source: "its pinned sha256" };
  const url = `${apiBase}/repos/${pin.repo}/releases/tags/${encodeURIComponent(pin.tag)}`;
  let release: { assets?: { name?: unknown; digest?: unknown }[] } | undefined;
  let why: string;
  try {
    const res = await fetch(url, { headers: { accept: "application/vnd.github+json" }, signal: AbortSignal.timeout(30_000) });
    if (res.ok) release = await res.json();
    why = `${url} answered HTTP ${res.status}`;
  } catch (err) {
    throw new ReleaseUnavailable(`${pin.asset} (${pin.repo} ${pin.tag}) has no pinned sha256 and GitHub's releases API cannot be reached (${(err as Error).message}); ${howToPin(pin, cacheDir)}`);
  }
  const asset = Array.isArray(release?.assets) ? release.assets.find((a) => a?.name === pin.asset) : undefined;
  const digest = /^sha256:([0-9a-f]{64})$/.exec(typeof asset?.digest === "string" ? asset.digest : "")?.[1];
  if (digest) return { sha256: digest, source: "the sha256 digest GitHub publishes for it" };
  if (release) why = asset ? `GitHub publishes no sha256 digest for it` : `the release lists no such asset`;
  throw new ReleaseUnavailable(`${pin.asset} (${pin.repo} ${pin.tag}) has no pinned sha256 in backend_versions.json and no published digest (${why}); nothing was downloaded: ${howToPin(pin, cacheDir)}`);
}

/** Where a release install of a backend lives: `<cache>/bin/<recipe>/<backend>/<tag>/`. */
export const releaseDir = (cacheDir: string, recipe: string, backend: string, tag: string) => join(cacheDir, "bin", recipe, backend, tag);

/** The installed binary of the backend's pinned release, when it is there. */
export function installedRelease(cacheDir: string, recipe: string, backend: string): string | null {
  const versions = backendVersions(cacheDir);
  const tag = (versions[recipe] as Record<string, string> | undefined)?.[backend];
  const binary = versions.releases?.[recipe]?.binary;
  if (!tag || !binary) return null;
  const path = join(releaseDir(cacheDir, recipe, backend, tag), binary);
  return existsSync(path) ? path : null;
}

/** Downloads `url` into `partial`, resuming what an earlier attempt left. */
async function download(url: string, partial: string, asset: string, onProgress: Progress, signal?: AbortSignal): Promise<void> {
  let have = existsSync(partial) ? statSync(partial).size : 0;
  let res: Response;
  try {
    res = await fetch(url, { headers: have ? { range: `bytes=${have}-` } : {}, redirect: "follow", signal });
  } catch (err) {
    throw new ReleaseUnavailable(`cannot reach ${new URL(url).origin} (${(err as Error).message})`);
  }
  if (res.status === 416) return;
  if (res.status === 404) throw new ReleaseUnavailable(`${url} is not published (HTTP 404)`);
  if (!res.ok) throw new ReleaseUnavailable(`${url} answered HTTP ${res.status}`);
  if (res.status !== 206) have = 0;
  const total = have + Number(res.headers.get("content-length") ?? 0);
  const out = createWriteStream(partial, { flags: have ? "a" : "w" });
  let done = have;
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      if (!out.write(chunk)) await new Promise((r) => out.once("drain", r));
      done += chunk.length;
      if (total) onProgress("download", Math.min(99, Math.floor((done / total) * 100)), { file: asset, bytes: done, total });
    }
  } catch (err) {
    throw new ReleaseUnavailable(`the download of ${url} broke off (${(err as Error).message}); installing again resumes it`);
  } finally {
    await new Promise<void>((r) => out.end(r));
  }
}

async function sha256Of(path: string): Promise<string> {
  const hash = new Bun.CryptoHasher("sha256");
  for await (const chunk of Bun.file(path).stream()) hash.update(chunk);
  return hash.digest("hex");
}

/** An archive entry's path, refused when it would land outside the folder it is unpacked in. */
function confined(name: string): string {
  const clean = normalize(name.replace(/\\/g, "/"));
  if (!clean || isAbsolute(clean) || /^[a-zA-Z]:/.test(clean) || clean === ".." || clean.startsWith(`..${sep}`) || clean.startsWith("../")) {
    throw new ReleaseInstallError(`the archive holds an entry outside its folder (${name.slice(0, 120)}); nothing was installed`);
  }
  return clean;
}

// The archive libraries load only when something is installed: an idle server never needs them.
const tarLib = (): Promise<typeof Tar> => import("tar");
const zipLib = async (): Promise<typeof Yauzl> => (await import("yauzl")).default;

async function extractTarGz(archive: string, dest: string): Promise<void> {
  const tar = await tarLib();
  // Every entry is checked before one is written: a link may not point out either.
  const problems: string[] = [];
  await tar.t({
    file: archive,
    onReadEntry: (entry) => {
      try {
        const path = confined(entry.path);
        if ((entry.type === "SymbolicLink" || entry.type === "Link") && entry.linkpath) {
          const target = entry.type === "Link" ? entry.linkpath : join(dirname(path), entry.linkpath);
          confined(relative(".", normalize(target)));
        }
      } catch (err) {
        problems.push((err as Error).message);
      }
    },
  });
  if (problems.length) throw new ReleaseInstallError(problems[0]!);
  await tar.x({ file: archive, cwd: dest, strict: true, preservePaths: false });
}

async function extractZip(archive: string, dest: string): Promise<void> {
  const yauzl = await zipLib();
  return new Promise((resolve, reject) => {
    yauzl.open(archive, { lazyEntries: true, strictFileNames: true }, (err, zip) => {
      if (err || !zip) return reject(new ReleaseInstallError(`the archive is not a readable zip (${err?.message})`));
      zip.on("error", reject);
      zip.on("end", resolve);
      zip.on("entry", (entry: Yauzl.Entry) => {
        let path: string;
        try {
          path = confined(entry.fileName);
        } catch (e) {
          zip.close();
          return reject(e);
        }
        const target = join(dest, path);
        if (entry.fileName.endsWith("/")) {
          mkdirSync(target, { recursive: true });
          return zip.readEntry();
        }
        mkdirSync(dirname(target), { recursive: true });
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(e);
          const out = createWriteStream(target, { mode: ((entry.externalFileAttributes >>> 16) & 0o777) || 0o644 });
          stream.pipe(out);
          out.on("finish", () => zip.readEntry());
          out.on("error", reject);
        });
      });
      zip.readEntry();
    });
  });
}

/** The folder in the unpacked tree that holds the binary (archives put it in `build/bin/` or a
 * top folder of their own). */
function findBinary(root: string, binary: string): string | null {
  for (const name of readdirSync(root)) {
    const path = join(root, name);
    const st = statSync(path);
    if (st.isFile() && (name === binary || name === `${binary}.exe`)) return path;
    if (st.isDirectory()) {
      const found = findBinary(path, binary);
      if (found) return found;
    }
  }
  return null;
}

export interface ReleaseOptions {
  cacheDir: string;
  /** https://github.com, or LEMONADE_GITHUB_ENDPOINT. */
  endpoint: string;
  /** The releases API: LEMONADE_GITHUB_API_ENDPOINT, else githubApiBase(endpoint). */
  apiEndpoint?: string;
  /** config.json `no_fetch_executables`: downloads are forbidden. */
  noFetch: boolean;
  /** The GPU's ROCm ISA, for assets published per GPU family. */
  gpuIsa?: string;
  onProgress?: Progress;
  log?: (line: string) => void;
  /** Aborted to cancel the install: the download stops and its partial file is deleted. */
  signal?: AbortSignal;
}

/** Installs the pinned release of a backend; returns the binary's path. */
export async function installRelease(recipe: string, backend: string, opts: ReleaseOptions): Promise<string> {
  const { cacheDir } = opts;
  const onProgress = opts.onProgress ?? (() => {});
  const pin = releaseAsset(backendVersions(cacheDir), recipe, backend, platformKey(), opts.gpuIsa);
  const already = installedRelease(cacheDir, recipe, backend);
  if (already) return already;
  if (opts.noFetch) {
    throw new ReleaseInstallError(`no_fetch_executables is set in config.json: ${pin.asset} is not downloaded. Unset it, or point ${recipe}.${backend}_bin at your own ${pin.binary}`);
  }
  const expected = await expectedSha256(pin, (opts.apiEndpoint ?? githubApiBase(opts.endpoint)).replace(/\/+$/, ""), cacheDir);
  const downloads = join(cacheDir, "downloads");
  mkdirSync(downloads, { recursive: true });
  const partial = join(downloads, `${pin.asset}.partial`);
  const url = `${opts.endpoint.replace(/\/+$/, "")}/${pin.repo}/releases/download/${pin.tag}/${pin.asset}`;
  opts.log?.(`Downloading ${pin.asset} from ${pin.repo} ${pin.tag}`);
  onProgress("download", 0);
  // A connection that breaks off is resumed where it stopped, a few times, before giving up.
  for (let attempt = 1; ; attempt++) {
    try {
      await download(url, partial, pin.asset, onProgress, opts.signal);
      break;
    } catch (err) {
      // A cancelled install keeps nothing to resume.
      if (opts.signal?.aborted) {
        rmSync(partial, { force: true });
        throw opts.signal.reason;
      }
      if (attempt >= 3 || !(err instanceof ReleaseUnavailable) || !existsSync(partial) || !/broke off/.test(err.message)) throw err;
      opts.log?.(`The download of ${pin.asset} broke off; resuming (attempt ${attempt + 1})`);
    }
  }
  onProgress("verify", 99);
  const actual = await sha256Of(partial);
  if (opts.signal?.aborted) {
    rmSync(partial, { force: true });
    throw opts.signal.reason;
  }
  if (actual !== expected.sha256) {
    rmSync(partial, { force: true });
    throw new ReleaseInstallError(`${pin.asset} does not match ${expected.source} (expected ${expected.sha256}, got ${actual}); nothing was installed`);
  }
  opts.log?.(`${pin.asset} matches ${expected.source}`);
  const final = releaseDir(cacheDir, recipe, backend, pin.tag);
  const staging = `${final}.staging-${process.pid}-${Date.now()}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    onProgress("extract", 99);
    if (pin.asset.endsWith(".zip")) await extractZip(partial, staging);
    else await extractTarGz(partial, staging);
    const found = findBinary(staging, pin.binary);
    if (!found) throw new ReleaseInstallError(`${pin.asset} holds no ${pin.binary}; nothing was installed`);
    // The binary's folder is the install (its shared libraries sit beside it).
    const binDir = dirname(found);
    chmodSync(found, 0o755);
    const tried = Bun.spawnSync([found, "--version"], { cwd: binDir, stdout: "ignore", stderr: "ignore", timeout: 30_000 });
    if (tried.exitCode !== 0) throw new ReleaseInstallError(`${pin.binary} from ${pin.asset} does not run here (--version exited ${tried.exitCode}); the installed version is kept`);
    // A cancel that came while it was unpacked still leaves nothing: this is the last point before the swap.
    if (opts.signal?.aborted) {
      rmSync(partial, { force: true });
      throw opts.signal.reason;
    }
    // Only a binary that works replaces what was there: older tags go once this one is in place.
    rmSync(final, { recursive: true, force: true });
    mkdirSync(dirname(final), { recursive: true });
    renameSync(binDir, final);
    for (const other of readdirSync(dirname(final))) {
      if (other !== pin.tag && !other.includes(".staging-")) rmSync(join(dirname(final), other), { recursive: true, force: true });
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  rmSync(partial, { force: true });
  onProgress("install", 100);
  opts.log?.(`Installed ${recipe}:${backend} ${pin.tag} from ${pin.asset}`);
  return join(final, pin.binary);
}
