// How much memory a llama.cpp model needs, and the context `ctx_size: -1` gives it: the largest
// that fits the free memory after the weights, from the GGUF's layer count, KV heads and head
// size (a conservative estimate per token when those are missing), capped by the trained
// window, and not below 4096 (8192 for embedding models) unless the window is smaller.
import { ggufScalar, type GgufMetadata } from "./gguf.ts";

export interface ModelShape {
  weightsBytes: number;
  layers?: number;
  kvHeads?: number;
  headDim?: number;
  trained?: number;
  embedding: boolean;
}

/** Compute buffers, the engine itself and its slots, beyond weights and KV cache. */
const BASE_OVERHEAD = 64 * 1024 ** 2;

export function shapeFromGguf(meta: GgufMetadata, weightsBytes: number, embedding: boolean): ModelShape {
  const arch = ggufScalar(meta, "general.architecture");
  const num = (key: string) => {
    const v = arch ? ggufScalar(meta, `${arch}.${key}`) : undefined;
    return typeof v === "number" && v > 0 ? v : undefined;
  };
  const heads = num("attention.head_count");
  const width = num("embedding_length");
  return {
    weightsBytes,
    layers: num("block_count"),
    kvHeads: num("attention.head_count_kv") ?? heads,
    headDim: num("attention.key_length") ?? (heads && width ? width / heads : undefined),
    trained: num("context_length"),
    embedding,
  };
}

/** KV cache bytes per token of context: keys and values, f16, every layer. Without the shape, a
 * conservative guess from the weights' size (a 4 GB model: about 0.4 MB per token). */
export function kvBytesPerToken(s: ModelShape): number {
  if (s.layers && s.kvHeads && s.headDim) return 2 * s.layers * s.kvHeads * s.headDim * 2;
  return Math.max(64 * 1024, s.weightsBytes / 10_000);
}

export function footprintBytes(s: ModelShape, ctx: number): number {
  return s.weightsBytes + ctx * kvBytesPerToken(s) + BASE_OVERHEAD + s.weightsBytes * 0.1;
}

/** The context for `ctx_size: -1` with `freeBytes` of memory to use. */
export function autoCtxSize(s: ModelShape, freeBytes: number): number {
  const trained = s.trained ?? 4096;
  const floor = Math.min(s.embedding ? 8192 : 4096, trained);
  const budget = freeBytes - footprintBytes(s, 0);
  const fits = Math.floor(budget / kvBytesPerToken(s) / 256) * 256;
  return Math.max(floor, Math.min(trained, fits));
}

export const gigabytes = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(2)} GB`;
