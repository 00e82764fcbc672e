// A minimal GGUF v3 writer for the tiny test models: metadata plus F32/F16 tensors.
import { closeSync, openSync, writeSync, renameSync } from "node:fs";
import { GGUF_MAGIC, GgufType, type GgufArray, type GgufValue } from "../../models/gguf.ts";

export const GGML_TYPE_F32 = 0;
export const GGML_TYPE_F16 = 1;
const ALIGNMENT = 32;

export interface TensorSpec {
  name: string;
  /** ne[0] first: the contiguous dimension, as llama.cpp lists shapes. */
  dims: number[];
  type: typeof GGML_TYPE_F32 | typeof GGML_TYPE_F16;
  data: Float32Array;
}

class ByteSink {
  private chunks: Buffer[] = [];
  length = 0;

  push(b: Buffer): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  u32(v: number) {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  u64(v: number | bigint) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  string(s: string) {
    const bytes = Buffer.from(s, "utf8");
    this.u64(bytes.length);
    this.push(bytes);
  }
  pad(to: number) {
    const rem = this.length % to;
    if (rem) this.push(Buffer.alloc(to - rem));
  }
  scalar(type: GgufType, v: GgufValue) {
    const b = Buffer.alloc(8);
    switch (type) {
      case GgufType.STRING: return this.string(v as string);
      case GgufType.UINT8: b.writeUInt8(Number(v)); return this.push(b.subarray(0, 1));
      case GgufType.INT8: b.writeInt8(Number(v)); return this.push(b.subarray(0, 1));
      case GgufType.UINT16: b.writeUInt16LE(Number(v)); return this.push(b.subarray(0, 2));
      case GgufType.INT16: b.writeInt16LE(Number(v)); return this.push(b.subarray(0, 2));
      case GgufType.UINT32: b.writeUInt32LE(Number(v)); return this.push(b.subarray(0, 4));
      case GgufType.INT32: b.writeInt32LE(Number(v)); return this.push(b.subarray(0, 4));
      case GgufType.FLOAT32: b.writeFloatLE(Number(v)); return this.push(b.subarray(0, 4));
      case GgufType.BOOL: b.writeUInt8(v ? 1 : 0); return this.push(b.subarray(0, 1));
      case GgufType.UINT64: b.writeBigUInt64LE(BigInt(v as number)); return this.push(b);
      case GgufType.INT64: b.writeBigInt64LE(BigInt(v as number)); return this.push(b);
      case GgufType.FLOAT64: b.writeDoubleLE(Number(v)); return this.push(b);
      case GgufType.ARRAY: {
        const arr = v as GgufArray;
        this.u32(arr.type);
        this.u64(arr.values.length);
        for (const item of arr.values) this.scalar(arr.type, item);
        return;
      }
    }
  }
  concat(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }
}

/** IEEE half from a float, mantissa truncated: test weights are small random values, so neither
 * rounding nor denormals matter. */
function toHalf(f: number): number {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, f);
  const x = view.getUint32(0);
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return sign;
  if (exp >= 31) return sign | 0x7c00;
  return sign | (exp << 10) | ((x >>> 13) & 0x3ff);
}

function tensorBytes(t: TensorSpec): Buffer {
  if (t.type === GGML_TYPE_F32) return Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const out = Buffer.alloc(t.data.length * 2);
  for (let i = 0; i < t.data.length; i++) out.writeUInt16LE(toHalf(t.data[i]!), i * 2);
  return out;
}

/** Writes the file to a temp name, then renames it, so a half-written model is never picked up. */
export function writeGguf(path: string, kv: [string, GgufType, GgufValue][], tensors: TensorSpec[]): void {
  const head = new ByteSink();
  head.u32(GGUF_MAGIC);
  head.u32(3);
  head.u64(tensors.length);
  head.u64(kv.length);
  for (const [key, type, value] of kv) {
    head.string(key);
    head.u32(type);
    head.scalar(type, value);
  }
  const blobs = tensors.map(tensorBytes);
  let offset = 0;
  tensors.forEach((t, i) => {
    head.string(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(t.type);
    head.u64(offset);
    offset += Math.ceil(blobs[i]!.length / ALIGNMENT) * ALIGNMENT;
  });
  head.pad(ALIGNMENT);
  const temp = `${path}.partial`;
  const fd = openSync(temp, "w");
  try {
    writeSync(fd, head.concat());
    for (const blob of blobs) {
      writeSync(fd, blob);
      const rem = blob.length % ALIGNMENT;
      if (rem) writeSync(fd, Buffer.alloc(ALIGNMENT - rem));
    }
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}
