// readGgufMetadata's walk over arrays of strings (a vocabulary, its merges), which a listing does
// without keeping them: it must land on the same next key, and find the same longest token, as the
// read that keeps every string, wherever the strings fall against the cursor's 1 MB windows.
import { afterAll, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GgufType, readGgufMetadata } from "../../models/gguf.ts";
import { tempDir } from "../helpers/server.ts";

const dir = tempDir("lemonade-gguf-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A GGUF header (no tensors) from its keys: strings, 32-bit integers and arrays of strings. */
function gguf(kv: [string, string | number | string[]][]): Buffer {
  const parts: Buffer[] = [];
  const u32 = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    parts.push(b);
  };
  const u64 = (v: number | bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    parts.push(b);
  };
  const str = (s: string) => {
    const bytes = Buffer.from(s);
    u64(bytes.length);
    parts.push(bytes);
  };
  parts.push(Buffer.from("GGUF"));
  u32(3);
  u64(0);
  u64(kv.length);
  for (const [key, value] of kv) {
    str(key);
    if (typeof value === "number") {
      u32(GgufType.UINT32);
      u32(value);
    } else if (typeof value === "string") {
      u32(GgufType.STRING);
      str(value);
    } else {
      u32(GgufType.ARRAY);
      u32(GgufType.STRING);
      u64(value.length);
      for (const s of value) str(s);
    }
  }
  return Buffer.concat(parts);
}

/** Strings of 1 to 40 bytes in a fixed pseudo-random order, so lengths and window edges vary. */
function words(count: number, seed: number): string[] {
  let x = seed;
  return Array.from({ length: count }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return "t".repeat(1 + Math.floor((x / 2 ** 31) * 40));
  });
}

test("arrays of strings walked or kept, the keys after them and the longest token read the same", () => {
  const tokens = words(200_000, 1);
  // Longer than a window: walked through the cursor, not within one window.
  tokens[123_456] = "x".repeat(1_500_000);
  const path = join(dir, "vocab.gguf");
  writeFileSync(
    path,
    gguf([
      ["general.architecture", "llama"],
      ["tokenizer.ggml.tokens", tokens],
      ["tokenizer.ggml.merges", words(100_000, 7)],
      ["llama.context_length", 32768],
      ["tokenizer.chat_template", "{{ messages }}"],
    ]),
  );
  const walked = readGgufMetadata(path, { arrays: false, tensors: false });
  const kept = readGgufMetadata(path, { arrays: true, tensors: false });
  expect(walked.longestTokenBytes).toBe(1_500_000);
  expect(kept.longestTokenBytes).toBe(1_500_000);
  expect(walked.kv.get("llama.context_length")?.value).toBe(32768);
  expect(walked.kv.get("tokenizer.chat_template")?.value).toBe("{{ messages }}");
  expect([...walked.kv.keys()]).toEqual([...kept.kv.keys()]);
  expect((kept.kv.get("tokenizer.ggml.merges")?.value as { values: string[] }).values).toHaveLength(100_000);
  expect((walked.kv.get("tokenizer.ggml.merges")?.value as { values: string[] }).values).toHaveLength(0);
});

test("a string in a skipped array that claims more bytes than the file holds is refused", () => {
  const good = gguf([["tokenizer.ggml.tokens", ["a", "bb", "ccc"]]]);
  // The last string's length, 3, rewritten as 2^40.
  const at = good.length - 3 - 8;
  good.writeBigUInt64LE(1n << 40n, at);
  const path = join(dir, "liar.gguf");
  writeFileSync(path, good);
  expect(() => readGgufMetadata(path, { arrays: false })).toThrow(/file ends inside the GGUF header/);
  expect(() => readGgufMetadata(path, { arrays: true })).toThrow(/file ends inside the GGUF header/);
});
