// The context and admission arithmetic (models/memory-fit.ts).
import { expect, test } from "bun:test";
import { autoCtxSize, footprintBytes, kvBytesPerToken, type ModelShape } from "../../models/memory-fit.ts";

const GiB = 1024 ** 3;
// Qwen3-8B-like: 36 layers, 8 KV heads of 128 → 147,456 bytes of KV cache per token.
const qwen8b: ModelShape = { weightsBytes: 5 * GiB, layers: 36, kvHeads: 8, headDim: 128, trained: 40960, embedding: false };

test("KV cache per token from the GGUF's shape, and a conservative guess without it", () => {
  expect(kvBytesPerToken(qwen8b)).toBe(2 * 36 * 8 * 128 * 2);
  expect(kvBytesPerToken({ weightsBytes: 4e9, embedding: false })).toBe(4e5);
  expect(kvBytesPerToken({ weightsBytes: 1e6, embedding: false })).toBe(64 * 1024);
});

test("ctx -1: the largest context that fits after the weights, capped by the trained window", () => {
  // Plenty of memory: the trained window.
  expect(autoCtxSize(qwen8b, 64 * GiB)).toBe(40960);
  // 8 GB free: weights + overhead take ~5.6 GB, the rest holds (8 GB - footprint) / 147 KB tokens.
  const free = 8 * GiB;
  const expected = Math.floor((free - footprintBytes(qwen8b, 0)) / 147_456 / 256) * 256;
  expect(autoCtxSize(qwen8b, free)).toBe(expected);
  expect(expected).toBeGreaterThan(4096);
  expect(expected).toBeLessThan(40960);
  expect(footprintBytes(qwen8b, expected)).toBeLessThanOrEqual(free);
  // Too little memory: never below 4096 (the load is then refused, not shrunk to nothing).
  expect(autoCtxSize(qwen8b, 5.7 * GiB)).toBe(4096);
});

test("the floor is 8192 for embedding models, and the trained window when that is smaller", () => {
  const embed: ModelShape = { weightsBytes: 0.6 * GiB, layers: 28, kvHeads: 8, headDim: 128, trained: 32768, embedding: true };
  expect(autoCtxSize(embed, 0.7 * GiB)).toBe(8192);
  const small: ModelShape = { ...qwen8b, trained: 2048 };
  expect(autoCtxSize(small, 1 * GiB)).toBe(2048);
});

test("a footprint is weights, KV cache for the context, and overhead", () => {
  const f = footprintBytes(qwen8b, 8192);
  expect(f).toBeGreaterThan(5 * GiB + 8192 * 147_456);
  expect(f).toBeLessThan(5 * GiB + 8192 * 147_456 + 1 * GiB);
});
