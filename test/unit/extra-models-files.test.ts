// What sits in the extra-models folder cannot hang or crash the server: FIFOs named *.gguf are
// never opened, and a GGUF header that claims more than the file holds is refused unread.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readGgufMetadata } from "../../models/gguf.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const extra = tempDir("lemonade-extra-");
let server: TestServer;

/** A GGUF header whose one key claims to be 2^40 bytes long (or whose array claims 2^40 items). */
function lyingGguf(kind: "string" | "array"): Buffer {
  const b = Buffer.alloc(64);
  let p = b.write("GGUF", 0);
  p = b.writeUInt32LE(3, p);
  p = b.writeBigUInt64LE(0n, p);
  p = b.writeBigUInt64LE(1n, p);
  if (kind === "string") return b.subarray(0, b.writeBigUInt64LE(1n << 40n, p));
  p = b.writeBigUInt64LE(1n, p);
  p += b.write("k", p);
  p = b.writeUInt32LE(9, p); // ARRAY
  p = b.writeUInt32LE(4, p); // of UINT32
  return b.subarray(0, b.writeBigUInt64LE(1n << 40n, p));
}

beforeAll(async () => {
  mkdirSync(join(extra, "sub"));
  for (const fifo of [join(extra, "pipe.gguf"), join(extra, "sub", "pipe.gguf")]) expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  writeFileSync(join(extra, "liar-string.gguf"), lyingGguf("string"));
  writeFileSync(join(extra, "liar-array.gguf"), lyingGguf("array"));
  copyFileSync(join(import.meta.dir, "..", "..", "scripts", "fake-engine", "llama-server"), join(extra, "not-gguf.gguf"));
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra }, undefined, { engines: false });
});
afterAll(() => server.close());

test("FIFOs are skipped, lying headers refused, and the listing answers (a FIFO read would block it)", async () => {
  const res = await fetch(`${server.url}/v1/models`, { signal: AbortSignal.timeout(5000) });
  expect(res.status).toBe(200);
  const ids = (await res.json()).data.map((m: { id: string }) => m.id);
  // Listed by their bare names, which nothing else holds.
  expect(ids).not.toContain("pipe");
  expect(ids).not.toContain("sub");
  expect(ids).toEqual(expect.arrayContaining(["liar-string", "liar-array"]));
  expect((await fetch(`${server.url}/live`)).status).toBe(200);
});

test("readGgufMetadata refuses a FIFO without blocking and a header longer than the file", () => {
  expect(() => readGgufMetadata(join(extra, "pipe.gguf"))).toThrow(/not a regular file/);
  expect(() => readGgufMetadata(join(extra, "liar-string.gguf"))).toThrow(/file ends inside the GGUF header/);
  expect(() => readGgufMetadata(join(extra, "liar-array.gguf"))).toThrow(/more than the file holds/);
});
