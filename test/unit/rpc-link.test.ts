// The RPC link's pure parts: worker addresses, the proof of the shared secret (bound to one TLS
// session's keying material), the status checks a load makes of a worker, `lemonade worker`'s
// flags, and the secret kept out of the settings views.
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { parseWorkerAddress, RPC_PROTOCOL, RpcWorkerError, statusProblem, type WorkerStatus } from "../../engines/rpc-address.ts";
import { checkOpening, opening, OPENING_BYTES, proof, REQUEST } from "../../engines/rpc-link.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { llamacpp } from "../../engines/llamacpp.ts";
import { worker, workerSettings } from "../../cli/commands/worker.ts";
import { loadConfig } from "../../config/config.ts";
import { effectiveSettings } from "../../config/settings.ts";
import { tempDir } from "../helpers/temp.ts";

describe("worker addresses", () => {
  test("host:port, a name or an IPv4 or bracketed IPv6 address", () => {
    expect(parseWorkerAddress("192.168.1.20:50052")).toEqual({ host: "192.168.1.20", port: 50052, text: "192.168.1.20:50052" });
    expect(parseWorkerAddress(" gpu-box.lan:1 ")).toEqual({ host: "gpu-box.lan", port: 1, text: "gpu-box.lan:1" });
    expect(parseWorkerAddress("[fe80::1]:50052")).toMatchObject({ host: "fe80::1", port: 50052 });
  });

  test.each(["gpu-box", "gpu-box:", ":50052", "gpu-box:0", "gpu-box:65536", "gpu box:50052", "fe80::1:50052", "http://gpu-box:50052", "gpu-box:50052,other:1"])("'%s' is refused, naming the address", (text) => {
    expect(() => parseWorkerAddress(text)).toThrow(RpcWorkerError);
    expect(() => parseWorkerAddress(text)).toThrow(`rpc worker '${text}' is not host:port`);
  });

  test("a model's rpc option is checked with its other options: a bad address is a load refused up front", () => {
    expect(() => llamacpp.checkOptions({ rpc: "all" })).not.toThrow();
    expect(() => llamacpp.checkOptions({ rpc: "a:1,b:2" })).not.toThrow();
    expect(() => llamacpp.checkOptions({ rpc: "a:1,b" })).toThrow("rpc worker 'b' is not host:port");
    expect(() => llamacpp.checkOptions({ tensor_split: "3,1" })).not.toThrow();
    expect(() => llamacpp.checkOptions({ tensor_split: "3;1" })).toThrow("tensor_split must be comma-separated shares");
  });

  test("the server sets --rpc itself: a model's llamacpp_args may not", () => {
    expect(() => llamacpp.checkOptions({ llamacpp_args: "--rpc 10.0.0.1:50052" })).toThrow("--rpc");
  });
});

describe("the proof of the secret", () => {
  const keying = randomBytes(32);

  test("the right secret on the same session opens; the request it makes is read back", () => {
    const bytes = opening("s3cret-s3cret-s3cret", REQUEST.tunnel, keying);
    expect(bytes.length).toBe(OPENING_BYTES);
    expect(checkOpening("s3cret-s3cret-s3cret", bytes, keying)).toBe(REQUEST.tunnel);
    expect(checkOpening("s3cret-s3cret-s3cret", opening("s3cret-s3cret-s3cret", REQUEST.status, keying), keying)).toBe(REQUEST.status);
  });

  test("a wrong secret, another session's proof (a replay or a relay) or a cut opening is refused", () => {
    const bytes = opening("s3cret-s3cret-s3cret", REQUEST.tunnel, keying);
    expect(checkOpening("another-secret-here", bytes, keying)).toBeNull();
    expect(checkOpening("s3cret-s3cret-s3cret", bytes, randomBytes(32))).toBeNull();
    expect(checkOpening("s3cret-s3cret-s3cret", bytes.subarray(0, OPENING_BYTES - 1), keying)).toBeNull();
    // rpc-server's own first bytes (HELLO, command 14) are not an opening: a client that speaks
    // the raw protocol to the TLS port reaches nothing.
    expect(checkOpening("s3cret-s3cret-s3cret", Buffer.concat([Buffer.of(14), Buffer.alloc(OPENING_BYTES - 1)]), keying)).toBeNull();
  });

  test("the secret itself is in no byte sent, and each side's proof differs from the other's", () => {
    const secret = "s3cret-s3cret-s3cret";
    const bytes = opening(secret, REQUEST.status, keying);
    expect(bytes.includes(Buffer.from(secret))).toBe(false);
    expect(proof(secret, "server", keying).equals(proof(secret, "worker", keying))).toBe(false);
  });
});

describe("a worker's status at load", () => {
  const address = parseWorkerAddress("10.0.0.2:50052");
  const ok: WorkerStatus = { protocol: `${RPC_PROTOCOL.major}.${RPC_PROTOCOL.minor}.0`, devices: [{ name: "CPU", description: "x", free: 1, total: 2 }], clients: 0 };

  test("the same protocol, free, with devices: usable", () => {
    expect(statusProblem(address, ok)).toBeNull();
  });

  test("another major version or a newer minor one is refused as llama.cpp's HELLO check would", () => {
    expect(statusProblem(address, { ...ok, protocol: `${RPC_PROTOCOL.major - 1}.9.0` })).toContain("runs RPC protocol");
    expect(statusProblem(address, { ...ok, protocol: `${RPC_PROTOCOL.major}.${RPC_PROTOCOL.minor + 1}.0` })).toContain("10.0.0.2:50052 runs RPC protocol");
  });

  test("a worker serving another client, or one without devices, is named", () => {
    expect(statusProblem(address, { ...ok, clients: 1 })).toContain("10.0.0.2:50052 is serving another model");
    expect(statusProblem(address, { ...ok, devices: [] })).toContain("has no devices");
  });
});

describe("lemonade worker's flags", () => {
  test("the secret comes from LEMONADE_RPC_SECRET or a file, never the command line, and is long enough", () => {
    expect(() => workerSettings({}, {})).toThrow("needs a shared secret of at least 16 characters");
    expect(() => workerSettings({}, { LEMONADE_RPC_SECRET: "short" })).toThrow("at least 16 characters");
    expect(workerSettings({}, { LEMONADE_RPC_SECRET: "s3cret-s3cret-s3cret" })).toEqual({ host: "127.0.0.1", port: 50052, secret: "s3cret-s3cret-s3cret" });
    const file = join(tempDir(), "secret");
    writeFileSync(file, "from-a-file-from-a-file\n");
    expect(workerSettings({ "secret-file": file }, { LEMONADE_RPC_SECRET: "s3cret-s3cret-s3cret" }).secret).toBe("from-a-file-from-a-file");
    expect(Object.keys(worker.options ?? {})).not.toContain("secret");
  });

  test("devices, threads, memory limit and cache folder map to rpc-server's flags; bad values are usage errors", () => {
    const env = { LEMONADE_RPC_SECRET: "s3cret-s3cret-s3cret" };
    expect(workerSettings({ host: "10.0.0.2", port: "6000", device: "CUDA0,CUDA1", threads: "4", "memory-limit": "1.5", "cache-dir": "/tmp/c" }, env)).toEqual({
      host: "10.0.0.2",
      port: 6000,
      secret: "s3cret-s3cret-s3cret",
      devices: "CUDA0,CUDA1",
      threads: 4,
      memoryLimitBytes: 1.5 * 1024 ** 3,
      tensorCacheDir: "/tmp/c",
    });
    expect(() => workerSettings({ port: "70000" }, env)).toThrow("--port must be 0-65535");
    expect(() => workerSettings({ threads: "0" }, env)).toThrow("--threads must be a whole number");
    expect(() => workerSettings({ "memory-limit": "-1" }, env)).toThrow("--memory-limit must be a positive number");
  });
});

describe("the workers' secret in the settings views", () => {
  test("config.json's llamacpp.rpc_secret is shown only as set", () => {
    const cacheDir = tempDir();
    writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ llamacpp: { rpc_secret: "in-the-config-file-1234", rpc_workers: ["10.0.0.2:50052"] } }));
    const shown = effectiveSettings({ cacheDir, host: "127.0.0.1", port: 13305, logLevel: "Info", maxLoadedModels: 1, ctxSize: -1, extraModelsDir: null, offline: false });
    expect(JSON.stringify(shown)).not.toContain("in-the-config-file-1234");
    expect((shown.llamacpp as Record<string, unknown>).rpc_secret).toBe("(set)");
    expect((shown.llamacpp as Record<string, unknown>).rpc_workers).toEqual(["10.0.0.2:50052"]);
    const config = loadConfig({ cacheDir }, {});
    expect(config.rpcWorkers).toEqual(["10.0.0.2:50052"]);
    expect(config.rpcSecret).toBe("in-the-config-file-1234");
    expect(loadConfig({ cacheDir }, { LEMONADE_RPC_SECRET: "from-the-env-1234567", LEMONADE_RPC_WORKERS: "a:1,b:2" })).toMatchObject({ rpcSecret: "from-the-env-1234567", rpcWorkers: ["a:1", "b:2"] });
  });
});
