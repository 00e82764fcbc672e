// What the extra models folder holds, as Lemonade names it: a GGUF at the top is a model named by
// its stem; a folder is one model named after it (its shards, or files that are not all named
// quantisations), or, when every file is a named quantisation, one model per quantisation named by
// its file; a split folder's own name still reaches, unlisted, the model of its first file
// alphabetically (`folderAlias`, so scripts written before the split keep working). A draft
// companion (`dflash-*`, `mtp-*`) is no variant, so a folder holding one stays one model. The
// first mmproj of a folder, alphabetically, goes with its models. The folder is
// walked to any depth; symbolic links to files are followed (models often live on another drive),
// links to folders are not (no cycles), and only regular files are read (a FIFO is never opened).
import { readdirSync, statSync } from "node:fs";
import { basename, join } from "node:path";

export interface ExtraModelFiles {
  /** The name after `extra.`. */
  name: string;
  main: string;
  mmproj?: string;
  /** Its main file (or main file's shard series) and its mmproj. */
  sizeBytes: number;
  /** The split folder's name, which requests may still use for this model (never listed). */
  folderAlias?: string;
}

const isGguf = (f: string) => f.toLowerCase().endsWith(".gguf");
const isMmproj = (f: string) => f.toLowerCase().includes("mmproj");
/** A speculative-decoding companion of a model, never a model of its own. */
const isDraftCompanion = (f: string) => /^(dflash-|mtp-)|^dflash\.gguf$/i.test(f);

/** A quantisation token in a file name (Q4_K_M, UD-Q4_K_XL, IQ3_XS, F16, BF16, MXFP4_MOE, ...). */
const QUANT = /(?:^|[-._/])((?:UD[-_])?(?:Q\d+(?:_\d)?(?:_K)?(?:_(?:M|S|L|XL|XXL))?|IQ\d+(?:_(?:M|S|L|XS|XXS|NL))?|F(?:16|32)|BF16|MXFP\d+(?:_MOE)?))(?=[-._/]|\.gguf$|$)/i;
/** One file of a split GGUF: `<base>-00001-of-00003.gguf`. */
const SHARD = /^(.+)[-._]\d{5}-of-\d{5}\.gguf$/i;

interface Found {
  path: string;
  size: number;
}

/** The series a shard's name says it belongs to (its base and shard count), as Lemonade reads
 * one when it sizes a model: any number of digits, index 1 to the count. */
function shardSeries(name: string): string | undefined {
  const m = /[-._](\d+)-of-(\d+)\.gguf$/i.exec(name);
  if (!m) return undefined;
  const [index, total] = [Number(m[1]), Number(m[2])];
  return index >= 1 && index <= total ? `${name.slice(0, m.index)}\0${total}` : undefined;
}

/** A model's size on disk as Lemonade counts it: its main file, or every file of the main file's
 * shard series in that folder, and its mmproj. */
function modelBytes(main: Found, mmproj: Found | undefined, folder: Found[]): number {
  const series = shardSeries(basename(main.path));
  const weights = series ? folder.filter((f) => shardSeries(basename(f.path)) === series) : [main];
  return weights.reduce((n, f) => n + f.size, 0) + (mmproj?.size ?? 0);
}

/** The regular GGUF files (links followed) of each folder under `root`, the root included, by folder path. */
function walk(root: string): Map<string, Found[]> {
  const byDir = new Map<string, Found[]>();
  const visit = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // An unreadable folder adds nothing, as the rest still does.
    }
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) visit(path);
      else if ((e.isFile() || e.isSymbolicLink()) && isGguf(e.name)) {
        let st;
        try {
          st = statSync(path);
        } catch {
          continue; // A dangling link.
        }
        if (!st.isFile()) continue;
        const list = byDir.get(dir) ?? [];
        list.push({ path, size: st.size });
        byDir.set(dir, list);
      }
    }
  };
  visit(root);
  return byDir;
}

const stem = (path: string) => basename(path).replace(/\.gguf$/i, "");

/** The models of one folder (not the root). */
function folderModels(dir: string, found: Found[]): ExtraModelFiles[] {
  const sorted = [...found].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const weights = sorted.filter((f) => !isMmproj(basename(f.path)));
  if (!weights.length) return [];
  const mmproj = sorted.find((f) => isMmproj(basename(f.path)));
  const withMmproj = mmproj ? { mmproj: mmproj.path } : {};
  // Files of one shard series are one variant; every variant must be a named quantisation for
  // the folder to split (anything else would be a guess at which files go together).
  const series = new Map<string, Found[]>();
  for (const f of weights) {
    const name = basename(f.path);
    const key = SHARD.exec(name)?.[1] ?? name;
    series.set(key, [...(series.get(key) ?? []), f]);
  }
  const split = series.size > 1 && weights.every((f) => QUANT.test(basename(f.path)) && !isDraftCompanion(basename(f.path)));
  if (!split) {
    return [{ name: basename(dir), main: weights[0]!.path, ...withMmproj, sizeBytes: modelBytes(weights[0]!, mmproj, sorted) }];
  }
  return [...series.entries()].map(([key, files]) => ({
    name: files.length > 1 ? key : stem(files[0]!.path),
    main: files[0]!.path,
    ...withMmproj,
    sizeBytes: modelBytes(files[0]!, mmproj, sorted),
    ...(files[0] === weights[0] ? { folderAlias: basename(dir) } : {}),
  }));
}

/** Every model in the extra models folder, with distinct names: a name already taken is
 * qualified by its folder (`<folder>-<name>`, then `-2`, `-3`...), so the first keeps its own. */
export function scanExtraModels(root: string): ExtraModelFiles[] {
  const byDir = walk(root);
  const models: ExtraModelFiles[] = [];
  const taken = new Set<string>();
  const add = (m: ExtraModelFiles, folder: string) => {
    let name = m.name;
    if (taken.has(name)) {
      const qualified = `${basename(folder)}-${m.name}`;
      name = qualified;
      for (let n = 2; taken.has(name); n++) name = `${qualified}-${n}`;
    }
    taken.add(name);
    models.push({ ...m, name });
  };
  // Top-level files claim their names first.
  const top = [...(byDir.get(root) ?? [])].sort((a, b) => (a.path < b.path ? -1 : 1));
  for (const f of top) if (!isMmproj(basename(f.path))) add({ name: stem(f.path), main: f.path, sizeBytes: modelBytes(f, undefined, top) }, root);
  const dirs = [...byDir.keys()].filter((d) => d !== root).sort((a, b) => compareSegments(a, b));
  for (const dir of dirs) for (const m of folderModels(dir, byDir.get(dir)!)) add(m, dir);
  return models;
}

/** Paths compared folder by folder, as a path (not a string) sorts. */
function compareSegments(a: string, b: string): number {
  const x = a.split("/");
  const y = b.split("/");
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  return x.length - y.length;
}
