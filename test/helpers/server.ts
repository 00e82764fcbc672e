// Starts a real server in-process on a free loopback port with its own temp cache directory.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { expect } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import type { TSchema } from "@sinclair/typebox";
import { startServer, type RunningServer } from "../../app/server.ts";
import { linkEngines } from "./engines.ts";
import { tempDir } from "./temp.ts";

export interface TestServer extends RunningServer {
  cacheDir: string;
  /** Stops the server and removes its cache directory (unless `keepCache`). */
  close(keepCache?: boolean): Promise<void>;
}

export { tempDir };

export async function startTestServer(
  env: Record<string, string> = {},
  cacheDir = tempDir(),
  { engines = true } = {},
): Promise<TestServer> {
  if (engines) linkEngines(cacheDir);
  const server = await startServer(
    { host: "127.0.0.1", port: 0, cacheDir },
    // No test reaches the real hub: the default endpoint is a closed loopback port.
    { PATH: process.env.PATH ?? "", HF_HUB_CACHE: join(cacheDir, "hf"), HF_ENDPOINT: "http://127.0.0.1:9", LEMONADE_LOG_LEVEL: "warning", ...env },
  );
  return {
    ...server,
    cacheDir,
    async close(keepCache = false) {
      await server.stop();
      if (!keepCache) rmSync(cacheDir, { recursive: true, force: true });
    },
  };
}

/** Asserts that a response body matches the spec's schema, listing every mismatch on failure. */
export function expectMatches(schema: TSchema, value: unknown): void {
  const errors = [...Value.Errors(schema, value)].map((e) => `${e.path}: ${e.message}`);
  expect(errors).toEqual([]);
}
