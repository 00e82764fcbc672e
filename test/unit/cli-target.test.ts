// The CLI as lemonade-docs-guide-cli.md has it: --host read as Lemonade's CLI reads it (a bare
// host, host:port, [v6]:port, or a URL whose scheme picks http or https and, without a port, its
// own port; a path is dropped), and the help's groups.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { Client, target } from "../../cli/client.ts";
import { tempDir } from "../helpers/server.ts";

const saved = { cache: process.env.LEMONADE_CACHE_DIR, host: process.env.LEMONADE_HOST, port: process.env.LEMONADE_PORT };
beforeAll(() => {
  process.env.LEMONADE_CACHE_DIR = tempDir();
  delete process.env.LEMONADE_HOST;
  delete process.env.LEMONADE_PORT;
});
afterAll(() => {
  for (const [key, value] of [["LEMONADE_CACHE_DIR", saved.cache], ["LEMONADE_HOST", saved.host], ["LEMONADE_PORT", saved.port]] as const) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

const base = (flags: { host?: string; port?: string }) => new Client(target(flags)).base;

test("URL schemes in --host choose http or https, and a scheme without a port means its own", () => {
  expect(base({ host: "https://lemonade.example.com" })).toBe("https://lemonade.example.com:443");
  expect(base({ host: "http://gpu-box" })).toBe("http://gpu-box:80");
  expect(base({ host: "HTTPS://gpu-box:8443/api/v1" })).toBe("https://gpu-box:8443");
  expect(base({ host: "http://gpu-box", port: "9000" })).toBe("http://gpu-box:9000");
});

test("a bare host keeps --port (or the default); host:port and [v6]:port carry their own", () => {
  expect(base({ host: "192.168.1.100", port: "13305" })).toBe("http://192.168.1.100:13305");
  expect(base({ host: "192.168.1.100" })).toBe("http://192.168.1.100:13305");
  expect(base({ host: "gpu-box:9001", port: "9000" })).toBe("http://gpu-box:9001");
  expect(base({ host: "[::1]:9002" })).toBe("http://[::1]:9002");
});

test("a host naming every address is reached on loopback", () => {
  expect(base({ host: "0.0.0.0", port: "9000" })).toBe("http://127.0.0.1:9000");
  expect(base({ host: "[::]:9001" })).toBe("http://127.0.0.1:9001");
});

test("LEMONADE_HOST is read the same way when --host is not given", () => {
  process.env.LEMONADE_HOST = "https://remote.example.com/v1";
  try {
    expect(base({})).toBe("https://remote.example.com:443");
  } finally {
    delete process.env.LEMONADE_HOST;
  }
});

test("LEMONADE_PORT is a given port, as Lemonade's CLI counts it: it stands in for a scheme's own, not for a port in the URL", () => {
  process.env.LEMONADE_PORT = "9443";
  try {
    expect(base({ host: "https://remote.example.com" })).toBe("https://remote.example.com:9443");
    expect(base({ host: "https://remote.example.com:8443" })).toBe("https://remote.example.com:8443");
    expect(base({ host: "http://gpu-box", port: "9000" })).toBe("http://gpu-box:9000");
  } finally {
    delete process.env.LEMONADE_PORT;
  }
});

test("help is grouped as Lemonade's: Quick Start, Server, Model Management, Benchmarking; load's General Options, then each backend's", async () => {
  const run = async (args: string[]) => {
    const child = Bun.spawn([process.execPath, "cli/main.ts", ...args], { cwd: join(import.meta.dir, "..", ".."), stdout: "pipe", stderr: "pipe" });
    const out = await new Response(child.stdout).text();
    expect(await child.exited).toBe(0);
    return out;
  };
  const top = await run(["--help"]);
  const at = (header: string) => top.indexOf(`\n${header}:\n`);
  for (const header of ["Quick Start", "Server", "Model Management", "Benchmarking", "Global Options (before or after the command)"]) expect(at(header), header).toBeGreaterThan(0);
  expect(at("Quick Start")).toBeLessThan(at("Server"));
  expect(top.slice(at("Quick Start"), at("Server"))).toContain("  launch ");
  expect(top.slice(at("Model Management"), at("Benchmarking"))).toContain("  import ");
  expect(top).not.toContain("\nOther:\n");
  const load = await run(["load", "--help"]);
  expect(load.indexOf("\nGeneral Options:\n")).toBeGreaterThan(0);
  expect(load.indexOf("\nGeneral Options:\n")).toBeLessThan(load.indexOf("\nLlama.cpp Backend Options:\n"));
  expect(load.slice(load.indexOf("\nGeneral Options:\n"), load.indexOf("\nLlama.cpp Backend Options:\n"))).toContain("--pinned");
});
