// Finds a checkpoint's files in the standard Hugging Face hub cache:
// `<hub>/models--org--name/snapshots/<revision>/<file>`, revision from `refs/main`.
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { basename, join, relative } from "node:path";
import { building, memoInBuild } from "../lib/build-scope.ts";

export interface CheckpointRef {
  repo: string;
  /** A file path in the repo (`x.gguf`), a quantization to match (`Q4_0`), or null for "the one GGUF". */
  variant: string | null;
}

/** `org/name:variant` -> parts. */
export function parseCheckpoint(checkpoint: string): CheckpointRef {
  const i = checkpoint.indexOf(":");
  return i < 0 ? { repo: checkpoint, variant: null } : { repo: checkpoint.slice(0, i), variant: checkpoint.slice(i + 1) || null };
}

/** A ModelScope model page: `https://modelscope.cn/models/org/repo[:variant]`. */
const MODELSCOPE_URL = /^(?:https?:\/\/)?(?:www\.)?modelscope\.cn\/models\/([^/\s]+\/[^/:\s]+)(:[^?#/]+)?\/?(?:[?#].*)?$/;
const HF_URL = /^(?:https?:\/\/)?(?:www\.)?(?:huggingface\.co|hf\.co)\//;

/** The registry a checkpoint given as a URL names (the URL selects it), or null for a repo id. */
export function checkpointRegistry(checkpoint: string): "huggingface" | "modelscope" | null {
  if (MODELSCOPE_URL.test(checkpoint.trim())) return "modelscope";
  return HF_URL.test(checkpoint.trim()) ? "huggingface" : null;
}

/** A checkpoint given as a Hugging Face URL (`https://huggingface.co/org/repo`, `hf.co/org/repo:Q4_K_M`,
 * `.../blob/main/file.gguf`) as `org/repo[:variant]`; anything else as it is. */
export function normalizeCheckpoint(checkpoint: string): string {
  const ms = MODELSCOPE_URL.exec(checkpoint.trim());
  if (ms) return `${ms[1]}${ms[2] ?? ""}`;
  const m = /^(?:https?:\/\/)?(?:www\.)?(?:huggingface\.co|hf\.co)\/([^/\s]+\/[^/:\s]+)(?:\/(?:blob|resolve|tree)\/[^/]+\/([^?#]+))?(:[^?#]+)?\/?(?:[?#].*)?$/.exec(checkpoint.trim());
  if (!m) return checkpoint;
  const [, repo, file, variant] = m;
  return file ? `${repo}:${decodeURIComponent(file)}` : `${repo}${variant ?? ""}`;
}

const REPO = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Why a hub checkpoint (`org/name[:file or quantization]`) cannot be used, or null when it can:
 * every part of it becomes a path in the cache, so it must stay inside it. */
export function checkpointProblem(checkpoint: string): string | null {
  if (/[\x00-\x1f\x7f]/.test(checkpoint)) return "it contains a control character";
  const { repo, variant } = parseCheckpoint(checkpoint);
  if (!REPO.test(repo) || repo.includes("..")) return `'${repo.slice(0, 100)}' is not a Hugging Face repository id (org/name)`;
  if (variant !== null && !isRelativeInside(variant)) return `'${variant.slice(0, 100)}' is not a file path inside the repository`;
  return null;
}

/** A relative path with no `..` part, no backslash and no drive: it stays inside the folder it is joined to. */
export function isRelativeInside(path: string): boolean {
  if (path === "" || path.startsWith("/") || path.includes("\\") || /^[A-Za-z]:/.test(path) || /[\x00-\x1f]/.test(path)) return false;
  return path.split("/").every((part) => part !== ".." && part !== "." && part !== "");
}

export function repoCacheDir(hubDir: string, repo: string): string {
  return join(hubDir, `models--${repo.replace(/\//g, "--")}`);
}

/** The repositories a hub cache holds (their `models--` folders), listed once per build: a
 * listing asks for every catalog model, and most are not there. */
const hubFolders = Symbol("hubFolders");

function notCached(hubDir: string, base: string): boolean {
  if (!building()) return false;
  const folders = memoInBuild(hubFolders, hubDir, () => {
    try {
      return new Set(readdirSync(hubDir));
    } catch (err) {
      // A folder that cannot be listed (but may be searched) is looked into repository by repository.
      return (err as NodeJS.ErrnoException).code === "ENOENT" ? new Set<string>() : null;
    }
  });
  return folders !== null && !folders.has(basename(base));
}

/** The snapshot folder of the repo's current revision, or null when nothing is cached. */
export function snapshotDir(hubDir: string, repo: string): string | null {
  const base = repoCacheDir(hubDir, repo);
  if (notCached(hubDir, base)) return null;
  const refFile = join(base, "refs", "main");
  if (existsSync(refFile)) {
    const dir = join(base, "snapshots", readFileSync(refFile, "utf8").trim());
    if (existsSync(dir)) return dir;
  }
  try {
    const revs = readdirSync(join(base, "snapshots"));
    return revs.length ? join(base, "snapshots", revs.sort()[0]!) : null;
  } catch {
    return null;
  }
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

const isModelGguf = (f: string) => f.toLowerCase().endsWith(".gguf") && !/(^|\/)mmproj/i.test(f);

/** Picks the file a variant names among a repo's files: an exact path, else the GGUF whose name or
 * folder carries the quantization (first shard when split), else the repo's only model GGUF. */
export function pickVariantFile(files: string[], variant: string | null): string | null {
  if (variant && files.includes(variant)) return variant;
  const ggufs = files.filter(isModelGguf);
  if (!variant || variant === "*") return ggufs.length >= 1 ? (ggufs.find((f) => /-00001-of-/.test(f)) ?? ggufs[0]!) : null;
  const v = variant.toLowerCase();
  const matches = ggufs.filter((f) => {
    const lower = f.toLowerCase();
    return lower.startsWith(`${v}/`) || new RegExp(`[-_.]${v.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}([-.]|$)`).test(lower.replace(/\.gguf$/, ""));
  });
  return matches.find((f) => /-00001-of-/.test(f)) ?? matches[0] ?? null;
}

/** The absolute path of a checkpoint's file in the cache, when it is there in full. */
export function findCachedFile(hubDir: string, checkpoint: string, file?: string): string | null {
  const { repo, variant } = parseCheckpoint(checkpoint);
  const current = snapshotDir(hubDir, repo);
  if (!current) return null;
  // The current revision first; then older ones: a variant downloaded before refs/main moved on
  // (another variant of the repo pulled later) is still there, and still counts.
  let others: string[] = [];
  try {
    others = readdirSync(join(repoCacheDir(hubDir, repo), "snapshots"))
      .map((rev) => join(repoCacheDir(hubDir, repo), "snapshots", rev))
      .filter((dir) => dir !== current);
  } catch {
    // No snapshots folder beside the current one.
  }
  for (const snap of [current, ...others]) {
    const name = file ?? pickVariantFile(listFiles(snap), variant);
    if (!name) continue;
    const path = join(snap, name);
    try {
      if (statSync(path).isFile()) return path;
    } catch {
      // Not in this revision.
    }
  }
  return null;
}
