// What the catalog read from each local GGUF's header (its scalars, the longest token's length),
// kept across restarts in the cache directory's gguf_headers.json: the first listing after a
// start labels every local GGUF from its header, and a header must be walked to its end to reach
// the keys after its vocabulary (about 16 ms for a 152k-token one, all of it blocking the event
// loop). An entry serves only the file it was read from, unchanged: same path, size, mtime and
// inode. The file is a cache: one that is missing, unreadable or of another shape is ignored and
// written again, and it never holds the vocabulary itself.
import { existsSync, readFileSync, type Stats } from "node:fs";
import { dirname } from "node:path";
import { writeJsonFileAtomic } from "../lib/json-file.ts";
import { GgufType, type GgufMetadata, type GgufValue } from "./gguf.ts";

/** The file's shape; another one is ignored. Raised whenever what readGgufMetadata returns for a
 * header changes (models/gguf.ts), so that nothing read the old way is served. */
const FORMAT = 1;

/** Strings longer than this (a chat template, a licence) are not kept: nothing the catalog asks of
 * a header is one (the architecture and the shape's numbers), and 51 models' templates would be a
 * quarter of a MB to read and hold. */
const MAX_KEPT_STRING = 256;

/** How long after the last new entry the file is written: one listing reads many headers. */
const SAVE_DELAY_MS = 2000;

/** One key as stored: its type and value; a 64-bit integer as its decimal text, an array (read
 * empty, as the catalog reads them) as its element type. */
type StoredKv = [key: string, type: GgufType, value: string | number | boolean];

interface Entry {
  size: number;
  mtimeMs: number;
  ino: number;
  version: number;
  kv: StoredKv[];
  longestTokenBytes?: number;
}

const isWide = (type: GgufType) => type === GgufType.UINT64 || type === GgufType.INT64;

/** The stored form, or undefined for a header that cannot be stored as the catalog reads it (an
 * array with values, a number JSON cannot hold). */
function encode(meta: GgufMetadata, st: Stats): Entry | undefined {
  const kv: StoredKv[] = [];
  for (const [key, { type, value }] of meta.kv) {
    if (typeof value === "object") {
      if (value.values.length) return undefined;
      kv.push([key, type, value.type]);
    } else if (typeof value === "number" && !Number.isFinite(value)) return undefined;
    else if (typeof value === "string" && value.length > MAX_KEPT_STRING) continue;
    else kv.push([key, type, typeof value === "bigint" ? value.toString() : value]);
  }
  return { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, version: meta.version, kv, ...(meta.longestTokenBytes ? { longestTokenBytes: meta.longestTokenBytes } : {}) };
}

function decode(entry: Entry): GgufMetadata {
  const kv = new Map<string, { type: GgufType; value: GgufValue }>();
  for (const [key, type, value] of entry.kv) {
    const decoded: GgufValue = type === GgufType.ARRAY ? { type: value as GgufType, values: [] } : isWide(type) ? BigInt(value as string) : value;
    kv.set(key, { type, value: decoded });
  }
  return { version: entry.version, kv, tensors: [], ...(entry.longestTokenBytes ? { longestTokenBytes: entry.longestTokenBytes } : {}) };
}

/** Whether a stored value is of the kind its type says, as encode writes it. */
function isStoredValue(type: unknown, value: unknown): boolean {
  if (type === GgufType.ARRAY) return typeof value === "number" && Number.isInteger(value) && value in GgufType;
  if (isWide(type as GgufType)) return typeof value === "string" && /^-?\d+$/.test(value);
  if (type === GgufType.BOOL) return typeof value === "boolean";
  if (type === GgufType.STRING) return typeof value === "string";
  return typeof type === "number" && type in GgufType && typeof value === "number" && Number.isFinite(value);
}

function isEntry(raw: unknown): raw is Entry {
  const e = raw as Entry;
  return (
    typeof e === "object" && e !== null &&
    typeof e.size === "number" && typeof e.mtimeMs === "number" && typeof e.ino === "number" && typeof e.version === "number" &&
    // It bounds which prompts are refused as too long (runtime/proxy.ts): only a real length serves.
    (e.longestTokenBytes === undefined || (Number.isSafeInteger(e.longestTokenBytes) && e.longestTokenBytes > 0)) &&
    Array.isArray(e.kv) && e.kv.every((row) => Array.isArray(row) && row.length === 3 && typeof row[0] === "string" && isStoredValue(row[1], row[2]))
  );
}

export class GgufHeaderCache {
  private entries?: Map<string, Entry>;
  private timer?: ReturnType<typeof setTimeout>;

  constructor(
    private readonly file: string,
    private readonly onWarning?: (message: string) => void,
  ) {}

  /** The header read from `path` before, when the file is the one it was read from. */
  get(path: string, st: Stats): GgufMetadata | undefined {
    const entry = this.load().get(path);
    if (!entry || entry.size !== st.size || entry.mtimeMs !== st.mtimeMs || entry.ino !== st.ino) return undefined;
    return decode(entry);
  }

  /** Keeps a header just read; the file is written a moment later, once for a whole listing. */
  put(path: string, st: Stats, meta: GgufMetadata): void {
    const entry = encode(meta, st);
    if (!entry) return;
    this.load().set(path, entry);
    this.timer ??= setTimeout(() => this.save(), SAVE_DELAY_MS);
    this.timer.unref?.();
  }

  /** Writes the entries whose file is still there (no longer served files are dropped), when
   * anything was added since the last write. */
  save(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    // A cache directory removed under the server (or a test's, after it stopped) is not made again for this.
    if (!existsSync(dirname(this.file))) return;
    const entries = this.load();
    for (const path of entries.keys()) if (!existsSync(path)) entries.delete(path);
    try {
      writeJsonFileAtomic(this.file, { format: FORMAT, entries: Object.fromEntries(entries) }, { compact: true, quiet: true });
    } catch (err) {
      this.onWarning?.(`Cannot write ${this.file}: ${(err as Error).message}`);
    }
  }

  private load(): Map<string, Entry> {
    if (this.entries) return this.entries;
    this.entries = new Map();
    let raw: { format?: unknown; entries?: Record<string, unknown> };
    try {
      raw = JSON.parse(readFileSync(this.file, "utf8"));
    } catch {
      // None yet, or torn by something other than this server: read the headers again.
      return this.entries;
    }
    if (raw?.format !== FORMAT || typeof raw.entries !== "object" || raw.entries === null) return this.entries;
    for (const [path, entry] of Object.entries(raw.entries)) if (isEntry(entry)) this.entries.set(path, entry);
    return this.entries;
  }
}
