// readGgufMetadata's walk over arrays of strings (a vocabulary, its merges), which a listing does
// without keeping them: it must land on the same next key, and find the same longest token, as the
// read that keeps every string, wherever the strings fall against the cursor's 1 MB windows.
import { afterAll, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GgufType, readGgufMetadata } from "../../models/gguf.ts";
import { writeGguf } from "../../scripts/test-models/gguf-writer.ts";
import { tempDir } from "../helpers/server.ts";

const dir = tempDir("lemonade-gguf-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
  const strings = (values: string[]) => ({ type: GgufType.STRING, values });
  writeGguf(
    path,
    [
      ["general.architecture", GgufType.STRING, "llama"],
      ["tokenizer.ggml.tokens", GgufType.ARRAY, strings(tokens)],
      ["tokenizer.ggml.merges", GgufType.ARRAY, strings(words(100_000, 7))],
      ["llama.context_length", GgufType.UINT32, 32768],
      ["tokenizer.chat_template", GgufType.STRING, "{{ messages }}"],
    ],
    [],
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
  const path = join(dir, "liar.gguf");
  writeGguf(path, [["tokenizer.ggml.tokens", GgufType.ARRAY, { type: GgufType.STRING, values: ["a", "bb", "ccc"] }]], []);
  // The last string's length, 3, rewritten as 2^40.
  const bytes = readFileSync(path);
  bytes.writeBigUInt64LE(1n << 40n, bytes.indexOf("ccc") - 8);
  writeFileSync(path, bytes);
  expect(() => readGgufMetadata(path, { arrays: false })).toThrow(/file ends inside the GGUF header/);
  expect(() => readGgufMetadata(path, { arrays: true })).toThrow(/file ends inside the GGUF header/);
});
