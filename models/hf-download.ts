// Downloads checkpoint files from a Hugging Face hub (HF_ENDPOINT) into the standard cache layout:
// `models--org--name/blobs/<sha256>`, `snapshots/<commit>/<file>` (a relative link to the blob),
// `refs/main`. A file is written as `<blob>.incomplete`, resumed with a Range request after an
// interruption, and only renamed into place once its size and sha256 match what the hub says,
// so nothing partial or corrupt ever passes for downloaded.
import { createReadStream, readFileSync, existsSync, mkdirSync, openSync, closeSync, writeSync, fsyncSync, renameSync, rmSync, statSync, statfsSync, symlinkSync, readlinkSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import { changed } from "../lib/generation.ts";
import { readJsonFile, writeJsonFileAtomic } from "../lib/json-file.ts";
import { asJson, isJson, type Json } from "../lib/json.ts";
import { isRelativeInside, parseCheckpoint, pickVariantFile, repoCacheDir } from "./hf-cache.ts";
import { byCodeUnits } from "../lib/order.ts";

/** The registries models are downloaded from: the Hugging Face hub, or ModelScope. */
export type Registry = "huggingface" | "modelscope";

export interface HubOptions {
  endpoint: string;
  token?: string;
  /** Absent: Hugging Face. ModelScope speaks its own API (`/api/v1/models/...`). */
  kind?: Registry;
  /** Where this registry's files live on disk (the HF cache layout, one root per registry). */
  dir?: string;
}

/** A client's `source`: `huggingface`/`hf` (the default) or `modelscope`/`ms`. */
export function registryOf(source: unknown): Registry {
  if (source === undefined || source === null || source === "huggingface" || source === "hf") return "huggingface";
  if (source === "modelscope" || source === "ms") return "modelscope";
  throw ApiError.of(E.invalidArgument, `Unsupported model source '${String(source).slice(0, 100)}' (use huggingface or modelscope)`, "source");
}

export interface RepoFile {
  path: string;
  size: number;
  /** Present for LFS files: the content's sha256, checked before the file counts as downloaded. */
  sha256?: string;
}

export interface RepoManifest {
  repo: string;
  sha: string;
  files: RepoFile[];
}

export class HubError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The branch ModelScope repositories are read from. */
const MS_REVISION = "master";

/** ModelScope's file list (`GET /api/v1/models/{id}/repo/files?Revision=master&Recursive=True`):
 * `Data.Files[]` with `Path`, `Type` ("tree" for folders), `Size`, `Sha256`, `Revision` (the commit). */
async function modelscopeManifest(hub: HubOptions, repo: string, signal?: AbortSignal): Promise<RepoManifest> {
  const url = `${hub.endpoint}/api/v1/models/${repo}/repo/files?Revision=${MS_REVISION}&Recursive=True`;
  const res = await fetch(url, { headers: headers(hub), signal }).catch((err) => {
    if (signal?.aborted) throw err;
    throw new HubError(`${repo}: cannot reach ModelScope at ${hub.endpoint} (${networkReason(err)})`);
  });
  if (!res.ok) throw new HubError(`${repo}: ModelScope answered ${res.status} for its file list`, res.status);
  const body = (await res.json()) as { Code?: number; Message?: string; Data?: { Files?: { Path: string; Type?: string; Size?: number; Sha256?: string; Revision?: string }[] } };
  if (body.Code !== undefined && body.Code !== 200) throw new HubError(`${repo}: ModelScope says ${String(body.Message ?? body.Code).slice(0, 200)}`, 404);
  const files = (body.Data?.Files ?? []).filter((f) => f.Type !== "tree");
  // The commit the files are at; a snapshot folder needs a 40-hex name, so anything else is hashed.
  const revision = files.find((f) => f.Revision)?.Revision ?? "";
  const sha = /^[0-9a-f]{40}$/.test(revision) ? revision : new Bun.CryptoHasher("sha1").update(files.map((f) => `${f.Path}:${f.Sha256 ?? ""}`).join("\n")).digest("hex");
  return checkManifest({ repo, sha, files: files.map((f) => ({ path: f.Path, size: f.Size ?? 0, sha256: f.Sha256?.toLowerCase() })) });
}

/** Where one file of a manifest is downloaded from. */
function fileUrl(hub: HubOptions, manifest: RepoManifest, path: string): string {
  if (hub.kind === "modelscope") {
    return `${hub.endpoint}/api/v1/models/${manifest.repo}/repo?Revision=${MS_REVISION}&FilePath=${encodeURIComponent(path)}`;
  }
  return `${hub.endpoint}/${manifest.repo}/resolve/${manifest.sha}/${path.split("/").map(encodeURIComponent).join("/")}`;
}

function headers(hub: HubOptions, extra: Record<string, string> = {}): Record<string, string> {
  return hub.token ? { authorization: `Bearer ${hub.token}`, ...extra } : extra;
}

/** The repo's current commit and its files with sizes and hashes. */
export async function repoManifest(hub: HubOptions, repo: string, revision = "main", signal?: AbortSignal): Promise<RepoManifest> {
  if (hub.kind === "modelscope") return modelscopeManifest(hub, repo, signal);
  const url = `${hub.endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}?blobs=true`;
  const res = await fetch(url, { headers: headers(hub), signal }).catch((err) => {
    if (signal?.aborted) throw err;
    throw new HubError(`${repo}: cannot reach the hub at ${hub.endpoint} (${networkReason(err)})`);
  });
  if (!res.ok) throw new HubError(`${repo}: the hub answered ${res.status} for its file list`, res.status);
  const info = (await res.json()) as { sha: string; siblings?: { rfilename: string; size?: number; lfs?: { sha256?: string; size?: number } }[] };
  return checkManifest({
    repo,
    sha: info.sha,
    files: (info.siblings ?? []).map((s) => ({ path: s.rfilename, size: s.lfs?.size ?? s.size ?? 0, sha256: s.lfs?.sha256 })),
  });
}

/** One small file of a repository, as text (read, not cached: a collection's manifest to inspect). */
export async function readRepoFile(hub: HubOptions, manifest: RepoManifest, path: string, signal?: AbortSignal): Promise<string> {
  const res = await fetch(fileUrl(hub, manifest, path), { headers: headers(hub), signal }).catch((err) => {
    if (signal?.aborted) throw err;
    throw new HubError(`${manifest.repo}: cannot reach the hub at ${hub.endpoint} (${networkReason(err)})`);
  });
  if (!res.ok) throw new HubError(`Failed to read '${path}' from repository ${manifest.repo} (HTTP ${res.status})`, res.status);
  return res.text();
}

/** Every name the hub sent becomes a path in the cache (the commit a folder, a sha a blob, a
 * file name a link): each is checked before anything touches the disk, and a hub that sends one
 * that would leave the cache is refused. */
export function checkManifest(manifest: RepoManifest): RepoManifest {
  const refuse = (what: string) => {
    throw new HubError(`${manifest.repo}: the hub sent an unsafe ${what}; nothing was written`, 502);
  };
  if (typeof manifest.sha !== "string" || !/^[0-9a-f]{40}$/.test(manifest.sha)) refuse(`commit id (${JSON.stringify(String(manifest.sha).slice(0, 60))})`);
  for (const f of manifest.files) {
    if (typeof f.path !== "string" || !isRelativeInside(f.path)) refuse(`file name (${JSON.stringify(String(f.path).slice(0, 100))})`);
    if (f.sha256 !== undefined && !/^[0-9a-f]{64}$/.test(String(f.sha256))) refuse(`sha256 for ${f.path}`);
    if (!Number.isSafeInteger(f.size) || f.size < 0) refuse(`size for ${f.path}`);
  }
  return manifest;
}

/** The files a checkpoint needs from its repo: the variant's file, with every shard of a split. */
export function checkpointFiles(manifest: RepoManifest, checkpoint: string): RepoFile[] {
  const { variant } = parseCheckpoint(checkpoint);
  // A repository named with no variant and holding no GGUF is a model in its own right (kokoro's
  // ONNX and voices with their index.json): all of it is fetched.
  if (!variant && !manifest.files.some((f) => f.path.toLowerCase().endsWith(".gguf"))) return manifest.files;
  const chosen = pickVariantFile(manifest.files.map((f) => f.path), variant);
  if (!chosen) throw new HubError(`${checkpoint}: no matching file in ${manifest.repo}`, 404);
  const shard = /^(.*)-00001-of-(\d{5})\.gguf$/.exec(chosen);
  const paths = shard
    ? manifest.files.map((f) => f.path).filter((p) => p.startsWith(`${shard[1]}-`) && p.endsWith(`-of-${shard[2]}.gguf`))
    : [chosen];
  return manifest.files.filter((f) => paths.includes(f.path));
}

export interface FileProgress {
  file: string;
  bytesDownloaded: number;
  bytesTotal: number;
}

function blobId(manifest: RepoManifest, file: RepoFile): string {
  return file.sha256 ?? new Bun.CryptoHasher("sha256").update(`${manifest.sha}:${file.path}`).digest("hex");
}

export function blobPath(hubDir: string, manifest: RepoManifest, file: RepoFile): string {
  return join(repoCacheDir(hubDir, manifest.repo), "blobs", blobId(manifest, file));
}

export function snapshotFile(hubDir: string, manifest: RepoManifest, file: RepoFile): string {
  return join(repoCacheDir(hubDir, manifest.repo), "snapshots", manifest.sha, file.path);
}

/** Bytes of a file already on disk: the finished blob, else the partial one. */
export function bytesOnDisk(hubDir: string, manifest: RepoManifest, file: RepoFile): number {
  const blob = blobPath(hubDir, manifest, file);
  for (const p of [blob, `${blob}.incomplete`]) {
    try {
      return statSync(p).size;
    } catch {}
  }
  return 0;
}

async function hashFile(path: string, hash: Bun.CryptoHasher): Promise<void> {
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
}

async function blobHash(path: string): Promise<string> {
  const hash = new Bun.CryptoHasher("sha256");
  await hashFile(path, hash);
  return hash.digest("hex");
}

/** Records, beside a repository's cache, which registry and commit it came from and what each
 * model pulled from it selected (`.lemonade_registry.json`, as Lemonade writes it), so that an
 * update check compares against what was actually fetched. */
export function writeProvenance(hubDir: string, registry: Registry, manifest: RepoManifest, model?: { id: string; selection: string }): void {
  const path = join(repoCacheDir(hubDir, manifest.repo), ".lemonade_registry.json");
  const previous = readJsonFile<unknown>(path, {});
  const processed: Json = isJson(previous) ? asJson(previous.processed_models) : {};
  if (model) processed[model.id] = { selection: model.selection, snapshot_id: manifest.sha };
  writeJsonFileAtomic(path, { source: registry, repo_id: manifest.repo, revision: "main", snapshot_id: manifest.sha, processed_models: processed });
}

/** Points `snapshots/<sha>/<file>` at the blob and records the commit in `refs/main`. */
function link(hubDir: string, manifest: RepoManifest, file: RepoFile, blob: string): void {
  const snap = snapshotFile(hubDir, manifest, file);
  const repoDir = repoCacheDir(hubDir, manifest.repo);
  if (relative(repoDir, snap).startsWith("..")) throw new HubError(`${manifest.repo}/${file.path}: the link would leave the cache`);
  mkdirSync(dirname(snap), { recursive: true });
  const target = relative(dirname(snap), blob);
  try {
    if (readlinkSync(snap) === target) return;
    rmSync(snap, { force: true });
  } catch {}
  symlinkSync(target, snap);
  const refs = join(repoCacheDir(hubDir, manifest.repo), "refs");
  mkdirSync(refs, { recursive: true });
  writeFileSync(join(refs, "main"), manifest.sha);
  changed();
}

/** Downloads one file (resuming a partial one), verifies it, and links it into the snapshot. */
export async function downloadFile(
  hub: HubOptions,
  hubDir: string,
  manifest: RepoManifest,
  file: RepoFile,
  onProgress: (p: FileProgress) => void,
  signal?: AbortSignal,
): Promise<void> {
  const blob = blobPath(hubDir, manifest, file);
  mkdirSync(dirname(blob), { recursive: true });
  if (existsSync(blob) && statSync(blob).size === file.size) {
    // A cached blob is trusted only as far as its hash: one damaged on disk is fetched again.
    if (!file.sha256 || (await blobHash(blob)) === file.sha256) {
      link(hubDir, manifest, file, blob);
      onProgress({ file: file.path, bytesDownloaded: file.size, bytesTotal: file.size });
      return;
    }
    rmSync(blob, { force: true });
  }
  const partial = `${blob}.incomplete`;
  let have = existsSync(partial) ? statSync(partial).size : 0;
  if (have > file.size) {
    rmSync(partial);
    have = 0;
  }
  // Bun's own hasher: node:crypto would cost the idle server ~6 MB of resident memory.
  const hash = new Bun.CryptoHasher("sha256");
  const url = fileUrl(hub, manifest, file.path);
  const res = await fetch(url, { headers: headers(hub, have > 0 ? { range: `bytes=${have}-` } : {}), signal }).catch((err) => {
    if (signal?.aborted) throw err;
    throw new HubError(`${manifest.repo}/${file.path}: cannot reach the hub at ${hub.endpoint} (${networkReason(err)})`);
  });
  if (!res.ok || !res.body) throw new HubError(`${manifest.repo}/${file.path}: the hub answered ${res.status}`, res.status);
  // A hub that ignores the Range header sends the whole file again: start over.
  if (have > 0 && res.status !== 206) {
    rmSync(partial, { force: true });
    have = 0;
  }
  if (have > 0) await hashFile(partial, hash);
  const fd = openSync(partial, have > 0 ? "a" : "w");
  let done = have;
  onProgress({ file: file.path, bytesDownloaded: done, bytesTotal: file.size });
  try {
    let lastReport = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      writeSync(fd, chunk);
      hash.update(chunk);
      done += chunk.length;
      if (done - lastReport >= 1 << 20 || done === file.size) {
        lastReport = done;
        onProgress({ file: file.path, bytesDownloaded: done, bytesTotal: file.size });
      }
    }
    fsyncSync(fd);
  } catch (err) {
    if (signal?.aborted) throw err;
    if ((err as NodeJS.ErrnoException).code === "ENOSPC") {
      // A partial file that cannot grow only takes the space another download needs.
      closeSync(fd);
      rmSync(partial, { force: true });
      throw noSpace(`${manifest.repo}/${file.path}`, file.size - have, freeBytes(hubDir));
    }
    throw new HubError(`${manifest.repo}/${file.path}: the connection broke after ${done} of ${file.size} bytes (${networkReason(err)}); the partial file is kept to resume`);
  } finally {
    try {
      closeSync(fd);
    } catch {
      // Closed above, before the partial was removed.
    }
  }
  if (done !== file.size) {
    throw new HubError(`${manifest.repo}/${file.path}: got ${done} of ${file.size} bytes; the partial file is kept to resume`);
  }
  const digest = hash.digest("hex");
  if (file.sha256 && digest !== file.sha256) {
    rmSync(partial, { force: true });
    throw new HubError(`${manifest.repo}/${file.path}: sha256 ${digest} does not match the hub's ${file.sha256}; the file was discarded`);
  }
  renameSync(partial, blob);
  link(hubDir, manifest, file, blob);
}

/** Why a connection failed, in words of our own (the HTTP client's messages are about itself). */
export function networkReason(err: unknown): string {
  const code = (err as { code?: string })?.code ?? "";
  const reasons: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ENOTFOUND: "host not found",
    ETIMEDOUT: "timed out",
    ECONNRESET: "connection reset",
    ConnectionRefused: "connection refused",
  };
  return reasons[code] ?? (code || "no connection");
}

/** Free bytes on the file system that holds `path` (or would: its nearest existing folder). */
export function freeBytes(path: string): number {
  let dir = path;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  const fs = statfsSync(dir);
  return fs.bavail * fs.bsize;
}

/** 507: the disk cannot hold what a download needs. */
export function noSpace(what: string, needed: number, free: number): ApiError {
  return ApiError.of(E.insufficientStorage, `Not enough disk space for ${what}: it needs ${needed} more bytes and ${free} are free`);
}

/** Removes every partial download of the given files (a cancelled job leaves nothing behind). */
export function removePartials(hubDir: string, manifest: RepoManifest, files: RepoFile[]): void {
  for (const f of files) rmSync(`${blobPath(hubDir, manifest, f)}.incomplete`, { force: true });
}

export interface Variant {
  name: string;
  primary_file: string;
  files: string[];
  sharded: boolean;
  size_bytes: number;
}

/** Quantizations most often used, ranked first; the rest sort by name. */
const PREFERRED_QUANTS = ["Q4_K_M", "UD-Q4_K_XL", "Q8_0", "Q4_0"];

/** Groups a repo's GGUF files into variants: a quantization's single file, or a folder of shards. */
export function ggufVariants(manifest: RepoManifest, max = 5): Variant[] {
  const groups = new Map<string, RepoFile[]>();
  for (const f of manifest.files) {
    if (!f.path.toLowerCase().endsWith(".gguf") || /(^|\/)mmproj/i.test(f.path)) continue;
    const folder = f.path.includes("/") ? f.path.slice(0, f.path.lastIndexOf("/")) : null;
    const quant = /[-_.]((?:UD-)?(?:I?Q\d[A-Z0-9_]*|F16|BF16|F32|MXFP4(?:_MOE)?))(?:-\d{5}-of-\d{5})?\.gguf$/i.exec(f.path)?.[1];
    const name = folder ?? quant?.toUpperCase().replace(/^UD-/, "UD-") ?? f.path.replace(/\.gguf$/i, "");
    groups.set(name, [...(groups.get(name) ?? []), f]);
  }
  const rank = (n: string) => {
    const i = PREFERRED_QUANTS.indexOf(n);
    return i < 0 ? PREFERRED_QUANTS.length : i;
  };
  return [...groups.entries()]
    .map(([name, files]) => {
      const paths = files.map((f) => f.path).sort();
      return {
        name,
        primary_file: paths.find((p) => /-00001-of-/.test(p)) ?? paths[0]!,
        files: paths,
        sharded: paths.length > 1 || paths.some((p) => /-\d{5}-of-\d{5}\.gguf$/.test(p)),
        size_bytes: files.reduce((n, f) => n + f.size, 0),
      };
    })
    .sort((a, b) => rank(a.name) - rank(b.name) || byCodeUnits(a.name, b.name))
    .slice(0, max);
}

/** The commit the local cache holds for a repo, from `refs/main`. */
export function cachedRevision(hubDir: string, repo: string): string | null {
  try {
    return readFileSync(join(repoCacheDir(hubDir, repo), "refs", "main"), "utf8").trim();
  } catch {
    return null;
  }
}

export interface SearchResult {
  repository_id: string;
  display_name: string;
  source: Registry;
  repository_type: "model";
  description: string;
  tags: string[];
  task: string;
  downloads: number;
  likes: number;
  has_gguf: boolean;
}

/** Searches the hub's model repositories by text. */
export async function searchRepos(hub: HubOptions, query: string, limit: number, gguf: boolean): Promise<{ total: number; results: SearchResult[] }> {
  if (hub.kind === "modelscope") return searchModelscope(hub, query, limit, gguf);
  const params = new URLSearchParams({ search: query, limit: String(limit), sort: "downloads", direction: "-1" });
  if (gguf) params.set("filter", "gguf");
  const res = await fetch(`${hub.endpoint}/api/models?${params}`, { headers: headers(hub) });
  if (!res.ok) throw new HubError(`The hub answered ${res.status} to the search`, res.status);
  const items = (await res.json()) as { id: string; downloads?: number; likes?: number; tags?: string[]; pipeline_tag?: string }[];
  const results = items.slice(0, limit).map((m) => ({
    repository_id: m.id,
    display_name: m.id.split("/").pop()!,
    source: "huggingface" as const,
    repository_type: "model" as const,
    description: "",
    tags: m.tags ?? [],
    task: m.pipeline_tag ?? "",
    downloads: m.downloads ?? 0,
    likes: m.likes ?? 0,
    has_gguf: (m.tags ?? []).includes("gguf") || /gguf/i.test(m.id),
  }));
  return { total: Number(res.headers.get("x-total-count") ?? items.length), results };
}

/** ModelScope's model search, as its website asks it: `PUT /api/v1/dolphin/models` with
 * `{"PageSize", "PageNumber", "SortBy", "Target", "SingleCriterion", "Name"}`; the models are in
 * `Data.Model.Models` (`Path` the owner, `Name` the repo) and their count in `Data.Model.TotalCount`. */
async function searchModelscope(hub: HubOptions, query: string, limit: number, gguf: boolean): Promise<{ total: number; results: SearchResult[] }> {
  const res = await fetch(`${hub.endpoint}/api/v1/dolphin/models`, {
    method: "PUT",
    headers: headers(hub, { "content-type": "application/json" }),
    body: JSON.stringify({ PageSize: limit, PageNumber: 1, SortBy: "DownloadsCount", Target: "", SingleCriterion: [], Name: gguf ? `${query} gguf` : query }),
  });
  if (!res.ok) throw new HubError(`ModelScope answered ${res.status} to the search`, res.status);
  const body = (await res.json()) as { Data?: { Model?: { Models?: any[]; TotalCount?: number } } };
  const models = body.Data?.Model?.Models ?? [];
  const results = models.slice(0, limit).map((m) => {
    const id = `${m.Path}/${m.Name}`;
    const tags: string[] = Array.isArray(m.Tags) ? m.Tags.filter((t: unknown): t is string => typeof t === "string") : [];
    return {
      repository_id: id,
      display_name: String(m.Name ?? id),
      source: "modelscope" as const,
      repository_type: "model" as const,
      description: String(m.Description ?? m.ChineseName ?? "").slice(0, 500),
      tags,
      task: String(m.Tasks?.[0]?.Name ?? ""),
      downloads: Number(m.Downloads ?? 0),
      likes: Number(m.Stars ?? 0),
      has_gguf: tags.some((t) => /gguf/i.test(t)) || /gguf/i.test(id),
    };
  });
  return { total: Number(body.Data?.Model?.TotalCount ?? results.length), results };
}
