// The headers the catalog read, kept across restarts (models/gguf-header-cache.ts): a header comes
// back as it was read (64-bit integers, arrays read empty, the longest token; long strings left
// out) for the same file (path, size, mtime, inode) only, a damaged cache file is read as none,
// and a restarted server (the first wrote its headers as it stopped) labels an unchanged GGUF
// without reading its header again.
import { afterAll, expect, test } from "bun:test";
import { closeSync, openSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { GgufType, readGgufMetadata } from "../../models/gguf.ts";
import { GgufHeaderCache } from "../../models/gguf-header-cache.ts";
import { writeGguf } from "../../scripts/test-models/gguf-writer.ts";
import { startTestServer, tempDir } from "../helpers/server.ts";

const dir = tempDir("lemonade-gguf-headers-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function model(path: string, arch: string): void {
  writeGguf(
    path,
    [
      ["general.architecture", GgufType.STRING, arch],
      ["general.size", GgufType.UINT64, 2n ** 60n + 3n],
      ["general.offset", GgufType.INT64, -(2n ** 40n)],
      ["general.quantized", GgufType.BOOL, true],
      ["general.scale", GgufType.FLOAT32, 0.5],
      ["tokenizer.chat_template", GgufType.STRING, "{{ x }}".repeat(100)],
      ["tokenizer.ggml.tokens", GgufType.ARRAY, { type: GgufType.STRING, values: ["a", "longest token", "b"] }],
      ["tokenizer.ggml.scores", GgufType.ARRAY, { type: GgufType.FLOAT32, values: [1, 2, 3] }],
      [`${arch}.context_length`, GgufType.UINT32, 8192],
    ],
    [],
  );
}

test("a header comes back as it was read, for the same file only", () => {
  const path = join(dir, "round.gguf");
  model(path, "qwen2");
  const read = readGgufMetadata(path, { arrays: false, tensors: false });
  const file = join(dir, "headers-a.json");
  const first = new GgufHeaderCache(file);
  first.put(path, statSync(path), read);
  first.save();
  const again = new GgufHeaderCache(file).get(path, statSync(path));
  // All of it but a string too long to keep (a chat template), which nothing asks a header for.
  const kept = { ...read, kv: new Map([...read.kv].filter(([key]) => key !== "tokenizer.chat_template")) };
  expect(read.kv.has("tokenizer.chat_template")).toBe(true);
  expect(again).toEqual(kept);
  expect(again!.kv.get("general.size")!.value).toBe(2n ** 60n + 3n);
  expect(again!.longestTokenBytes).toBe("longest token".length);
  // Another mtime, or another size, is not served; nor is the entry under another path.
  const st = statSync(path);
  utimesSync(path, st.atime, new Date(st.mtimeMs + 5000));
  expect(new GgufHeaderCache(file).get(path, statSync(path))).toBeUndefined();
  expect(new GgufHeaderCache(file).get(path, { size: st.size + 1, mtimeMs: st.mtimeMs, ino: st.ino } as typeof st)).toBeUndefined();
  expect(new GgufHeaderCache(file).get(join(dir, "elsewhere.gguf"), st)).toBeUndefined();
  expect(new GgufHeaderCache(file).get(path, st)).toEqual(kept);
});

test("a damaged or foreign cache file is read as none and written again whole", () => {
  const path = join(dir, "damaged.gguf");
  model(path, "llama");
  const file = join(dir, "headers-b.json");
  const st = statSync(path);
  const entry = (changes: object) => JSON.stringify({ format: 1, entries: { [path]: { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, version: 3, kv: [["general.architecture", GgufType.STRING, "llama"]], ...changes } } });
  // Torn, another format, the wrong shape, a value of another type than its own, a longest token that is no length.
  const bad = ['{"format": 1, "entries": {', '{"format": 99, "entries": {}}', entry({ kv: "no" }), entry({ kv: [["general.architecture", GgufType.STRING, 7]] }), entry({ kv: [["general.size", GgufType.UINT64, 12]] }), entry({ longestTokenBytes: -1 })];
  // The same entry, well formed, is served: the refusals above are for what they hold.
  writeFileSync(file, entry({}));
  expect(new GgufHeaderCache(file).get(path, st)?.kv.get("general.architecture")?.value).toBe("llama");
  for (const text of bad) {
    writeFileSync(file, text);
    const cache = new GgufHeaderCache(file);
    expect(cache.get(path, statSync(path))).toBeUndefined();
    cache.put(path, statSync(path), readGgufMetadata(path, { arrays: false, tensors: false }));
    cache.save();
    expect(new GgufHeaderCache(file).get(path, statSync(path))?.kv.get("general.architecture")?.value).toBe("llama");
  }
  // A file that is gone is dropped at the next write.
  const other = join(dir, "other.gguf");
  model(other, "llama");
  rmSync(path);
  const cache = new GgufHeaderCache(file);
  cache.put(other, statSync(other), readGgufMetadata(other, { arrays: false, tensors: false }));
  cache.save();
  expect(Object.keys(JSON.parse(readFileSync(file, "utf8")).entries)).toEqual([other]);
});

test("a restarted server labels an unchanged GGUF from the kept header, and reads it again once it changed", async () => {
  const extra = tempDir("lemonade-gguf-headers-extra-");
  const cacheDir = tempDir("lemonade-gguf-headers-cache-");
  const path = join(extra, "Probe.gguf");
  model(path, "qwen2");
  // Whole seconds, so that the times set back below are the very same.
  const mtime = 1_700_000_000;
  utimesSync(path, mtime, mtime);
  const labels = async () => {
    const server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra }, cacheDir, { engines: false });
    try {
      const found = (await (await fetch(`${server.url}/v1/models`)).json()).data.find((m: { id: string }) => m.id === "Probe");
      return found.labels as string[];
    } finally {
      await server.close(true);
    }
  };
  try {
    expect(await labels()).toContain("chat");
    // The header now says BERT (which embeds), but the file keeps its size, inode and mtime: the
    // restarted server does not read it, so it still lists the model as it was read.
    const bytes = readFileSync(path);
    const at = bytes.indexOf("qwen2");
    const fd = openSync(path, "r+");
    writeSync(fd, Buffer.from("bert2"), 0, 5, at);
    closeSync(fd);
    utimesSync(path, mtime, mtime);
    expect(await labels()).toContain("chat");
    // A newer mtime: read again, and labelled from what it says now.
    utimesSync(path, mtime, mtime + 5);
    expect(await labels()).toContain("embeddings");
  } finally {
    rmSync(extra, { recursive: true, force: true });
    rmSync(cacheDir, { recursive: true, force: true });
  }
});
