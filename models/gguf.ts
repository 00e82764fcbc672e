// Reads the metadata of a GGUF file (the header and key/value section; tensor data is never read).
// Used for what a model's files say about it (architecture, context length, pooling) and by the
// test-model generator to copy a real tokenizer out of llama.cpp's vocab-only GGUFs.
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

export const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian

export enum GgufType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

export type GgufScalar = number | bigint | boolean | string;
export type GgufValue = GgufScalar | GgufArray;
/** Arrays keep their element type so a copied key writes back exactly as it was read. */
export interface GgufArray {
  type: GgufType;
  values: GgufValue[];
}

export interface GgufTensorInfo {
  name: string;
  dims: bigint[];
  type: number;
  offset: bigint;
}

export interface GgufMetadata {
  version: number;
  /** Each value with its type, in file order. */
  kv: Map<string, { type: GgufType; value: GgufValue }>;
  tensors: GgufTensorInfo[];
  /** The byte length of the vocabulary's longest token (`tokenizer.ggml.tokens`), read even when
   * the arrays are skipped: no text of N bytes tokenises to fewer than N / this tokens. */
  longestTokenBytes?: number;
}

/** The key of a GGUF's vocabulary. */
const VOCABULARY = "tokenizer.ggml.tokens";

class OutOfData extends Error {}

/** The most of a file read as its header: real ones (a 256k-token vocabulary included) are a
 * few tens of MB; a file claiming more is refused rather than read. */
export const MAX_HEADER_BYTES = 256 * 1024 * 1024;

const SCALAR_SIZES: Partial<Record<GgufType, number>> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/** A cursor over the file, reading it in chunks into a window that only keeps what is not yet
 * consumed: the header of a multi-GB model is read once, never past the end of the file or the
 * header limit, whatever lengths the file claims. */
class Cursor {
  private buf = Buffer.alloc(0);
  /** File offset of buf[0]. */
  private base = 0;
  private pos = 0;
  private readonly limit: number;

  constructor(
    private readonly fd: number,
    size: number,
  ) {
    this.limit = Math.min(size, MAX_HEADER_BYTES);
  }

  /** Bytes left to read before the end of the file (or the header limit). */
  get remaining(): number {
    return this.limit - (this.base + this.pos);
  }

  private outOfData(): OutOfData {
    return new OutOfData(this.limit < MAX_HEADER_BYTES ? "file ends inside the GGUF header" : `GGUF header larger than ${MAX_HEADER_BYTES} bytes`);
  }

  private ensure(n: number): void {
    if (n > this.remaining) throw this.outOfData();
    if (this.buf.length - this.pos >= n) return;
    // One new window, read into directly after the bytes kept: neither zero-filled nor copied twice.
    const keep = this.buf.length - this.pos;
    const end = this.base + this.buf.length;
    const next = Buffer.allocUnsafe(keep + Math.min(Math.max(1 << 20, n - keep), this.limit - end));
    this.buf.copy(next, 0, this.pos);
    const read = readSync(this.fd, next, keep, next.length - keep, end);
    this.base += this.pos;
    this.pos = 0;
    this.buf = next.subarray(0, keep + read);
    if (this.buf.length < n) throw this.outOfData();
  }

  /** Moves past n bytes without keeping them. */
  skip(n: number): void {
    if (n > this.remaining) throw this.outOfData();
    if (this.buf.length - this.pos >= n) {
      this.pos += n;
      return;
    }
    this.base += this.pos + n;
    this.pos = 0;
    this.buf = Buffer.alloc(0);
  }

  u32(): number {
    this.ensure(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  u64(): bigint {
    this.ensure(8);
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }

  string(): string {
    const len = Number(this.u64());
    this.ensure(len);
    const s = this.buf.toString("utf8", this.pos, this.pos + len);
    this.pos += len;
    return s;
  }

  scalar(type: GgufType): GgufScalar {
    if (type === GgufType.STRING) return this.string();
    const size = SCALAR_SIZES[type];
    if (size === undefined) throw new Error(`unknown GGUF value type ${type}`);
    this.ensure(size);
    const b = this.buf;
    const p = this.pos;
    this.pos += size;
    switch (type) {
      case GgufType.UINT8: return b.readUInt8(p);
      case GgufType.INT8: return b.readInt8(p);
      case GgufType.UINT16: return b.readUInt16LE(p);
      case GgufType.INT16: return b.readInt16LE(p);
      case GgufType.UINT32: return b.readUInt32LE(p);
      case GgufType.INT32: return b.readInt32LE(p);
      case GgufType.FLOAT32: return b.readFloatLE(p);
      case GgufType.BOOL: return b.readUInt8(p) !== 0;
      case GgufType.UINT64: return b.readBigUInt64LE(p);
      case GgufType.INT64: return b.readBigInt64LE(p);
      default: return b.readDoubleLE(p);
    }
  }

  /** A value; with `keepArrays` false an array is moved past and read as empty (a vocabulary is
   * hundreds of thousands of strings no listing needs). */
  value(type: GgufType, keepArrays = true): GgufValue {
    if (type !== GgufType.ARRAY) return this.scalar(type);
    const elemType = this.u32() as GgufType;
    const count = Number(this.u64());
    // Every element takes at least a byte: a count beyond what is left is a lie.
    if (count > this.remaining) throw new OutOfData(`an array claims ${count} elements, more than the file holds`);
    if (!keepArrays) {
      this.skipValues(elemType, count);
      return { type: elemType, values: [] };
    }
    const values: GgufValue[] = new Array(count);
    for (let i = 0; i < count; i++) values[i] = this.value(elemType);
    return { type: elemType, values };
  }

  /** The longest string of an array of strings, moved past; undefined for another array. */
  longestString(): number | undefined {
    const elemType = this.u32() as GgufType;
    const count = Number(this.u64());
    if (count > this.remaining) throw new OutOfData(`an array claims ${count} elements, more than the file holds`);
    if (elemType !== GgufType.STRING) {
      this.skipValues(elemType, count);
      return undefined;
    }
    return this.skipStrings(count);
  }

  /** Moves past `count` strings and answers the longest one's byte length. A vocabulary and its
   * merges are some 300,000 strings, walked on every first listing of a GGUF: the strings whose
   * length and bytes are in the window are walked without a call or a BigInt per string, the rest
   * (one at each window's edge) through the cursor (bench catalog, 51 GGUFs of a 152k-token
   * vocabulary: the first listing after start 1.35-1.43 s -> 0.83-0.84 s). */
  private skipStrings(count: number): number {
    let longest = 0;
    let i = 0;
    while (i < count) {
      const b = this.buf;
      const last = b.length - 8;
      let p = this.pos;
      while (i < count && p <= last) {
        const len = b.readUInt32LE(p) + b.readUInt32LE(p + 4) * 0x1_0000_0000;
        if (len > last - p) break;
        if (len > longest) longest = len;
        p += 8 + len;
        i++;
      }
      this.pos = p;
      if (i === count) break;
      const len = Number(this.u64());
      if (len > longest) longest = len;
      this.skip(len);
      i++;
    }
    return longest;
  }

  private skipValues(type: GgufType, count: number): void {
    const size = SCALAR_SIZES[type];
    if (size !== undefined) return this.skip(size * count);
    if (type === GgufType.STRING) {
      this.skipStrings(count);
      return;
    }
    for (let i = 0; i < count; i++) {
      if (type === GgufType.ARRAY) this.value(type, false);
      else throw new Error(`unknown GGUF value type ${type}`);
    }
  }
}

export interface ReadOptions {
  /** Keep array values (a tokenizer's vocabulary); false reads them as empty. Default true. */
  arrays?: boolean;
  /** Read the tensor list. Default true. */
  tensors?: boolean;
}

/** Reads a regular file's GGUF header (anything else, a FIFO or a device, is refused unopened:
 * reading one would block). */
export function readGgufMetadata(path: string, opts: ReadOptions = {}): GgufMetadata {
  // Non-blocking open, then a check of what was opened: a FIFO put in the file's place is not waited on.
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`${path} is not a regular file`);
    const c = new Cursor(fd, st.size);
    if (c.u32() !== GGUF_MAGIC) throw new Error(`${path} is not a GGUF file`);
    const version = c.u32();
    if (version < 2) throw new Error(`${path}: GGUF version ${version} is not supported`);
    const tensorCount = Number(c.u64());
    const kvCount = Number(c.u64());
    const kv = new Map<string, { type: GgufType; value: GgufValue }>();
    let longestTokenBytes: number | undefined;
    for (let i = 0; i < kvCount; i++) {
      const key = c.string();
      const type = c.u32() as GgufType;
      if (key === VOCABULARY && type === GgufType.ARRAY && opts.arrays === false) {
        longestTokenBytes = c.longestString();
        kv.set(key, { type, value: { type: GgufType.STRING, values: [] } });
        continue;
      }
      const value = c.value(type, opts.arrays !== false);
      if (key === VOCABULARY && typeof value === "object") {
        longestTokenBytes = 0;
        for (const t of value.values) if (typeof t === "string") longestTokenBytes = Math.max(longestTokenBytes, Buffer.byteLength(t));
      }
      kv.set(key, { type, value });
    }
    const tensors: GgufTensorInfo[] = [];
    for (let i = 0; opts.tensors !== false && i < tensorCount; i++) {
      const name = c.string();
      const nDims = c.u32();
      const dims: bigint[] = [];
      for (let d = 0; d < nDims; d++) dims.push(c.u64());
      tensors.push({ name, dims, type: c.u32(), offset: c.u64() });
    }
    return { version, kv, tensors, ...(longestTokenBytes ? { longestTokenBytes } : {}) };
  } catch (err) {
    if (err instanceof OutOfData) throw new Error(`${path}: ${err.message}`);
    throw err;
  } finally {
    closeSync(fd);
  }
}

/** A scalar metadata value as a JS value, or undefined when absent. */
export function ggufScalar(meta: GgufMetadata, key: string): number | string | boolean | undefined {
  const v = meta.kv.get(key)?.value;
  if (v === undefined || typeof v === "object") return undefined;
  return typeof v === "bigint" ? Number(v) : v;
}
