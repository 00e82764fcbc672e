// spec/ and the app agree: every definition is bound, and every route the app answers comes from
// a definition (with its HEAD twin where the definition asks for one).
import { expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { definitionsOf, endpoints, mountedPaths } from "../../spec/index.ts";
import { loadConfig } from "../../config/config.ts";
import { createServerContext } from "../../app/context.ts";
import { createApp } from "../../http/app.ts";
import { Logger } from "../../observability/logger.ts";
import { tempDir } from "../helpers/server.ts";

const cacheDir = tempDir();
const ctx = createServerContext(
  loadConfig({ cacheDir }, { HF_HUB_CACHE: join(cacheDir, "hf") }),
  new Logger("Error", () => {}),
);
const { app, bound } = createApp(ctx);

test("every definition a spec/ module exports is in the endpoints list", async () => {
  const dir = join(import.meta.dir, "..", "..", "spec");
  const listed = new Set(endpoints);
  const modules = readdirSync(dir).filter((f) => f.endsWith(".ts"));
  const missing: string[] = [];
  for (const file of modules) missing.push(...definitionsOf(await import(join(dir, file))).filter((d) => !listed.has(d)).map((d) => `${file}: ${d.id}`));
  expect(missing).toEqual([]);
  expect(endpoints.length).toBeGreaterThan(70);
});

test("every definition in spec/ is bound, once", () => {
  const ids = (defs: { id: string }[]) => defs.map((d) => d.id).sort();
  expect(ids(bound)).toEqual(ids(endpoints));
});

test("every route the app serves is a mounted path of a definition", () => {
  const declared = new Set(
    endpoints.flatMap((def) =>
      mountedPaths(def).flatMap((path) => {
        const method = def.method === "WS" ? "WS" : def.method;
        return [`${method} ${path}`, ...(def.head ? [`HEAD ${path}`] : [])];
      }),
    ),
  );
  const served = app.routes.map((r) => `${r.method === "WS" || (r as { websocket?: unknown }).websocket ? "WS" : r.method} ${r.path}`);
  expect(served.length).toBeGreaterThan(150);
  expect(served.filter((r) => !declared.has(r))).toEqual([]);
  expect([...declared].filter((r) => !served.includes(r))).toEqual([]);
});
