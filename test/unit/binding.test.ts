// spec/ and the app agree: every definition is bound, and every route the app answers comes from
// a definition (with its HEAD twin where the definition asks for one): HTTP routes under /v1, whose
// other prefixes the app answers through its Bun routes (http/version-prefixes.ts), WebSocket routes
// under every prefix.
import { expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { definitionsOf, endpoints, lifecycle, mountedPaths, operations } from "../../spec/index.ts";
import { loadConfig } from "../../config/config.ts";
import { createServerContext } from "../../app/context.ts";
import { createApp } from "../../http/app.ts";
import { Binder } from "../../http/bind.ts";
import { boundPaths } from "../../http/version-prefixes.ts";
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

test("every route the app serves is a bound path of a definition, and the other prefixes reach them", () => {
  const declared = new Set(
    endpoints.flatMap((def) =>
      (def.method === "WS" ? mountedPaths(def) : boundPaths(def)).flatMap((path) => {
        const method = def.method === "WS" ? "WS" : def.method;
        return [`${method} ${path}`, ...(def.head ? [`HEAD ${path}`] : [])];
      }),
    ),
  );
  const served = app.routes.map((r) => `${r.method === "WS" || (r as { websocket?: unknown }).websocket ? "WS" : r.method} ${r.path}`);
  expect(served.length).toBeGreaterThan(100);
  expect(served.filter((r) => /^\S+ \/(api\/v1|v0|api\/v0)\//.test(r) && !r.startsWith("WS "))).toEqual([]);
  expect(Object.keys(app.config.serve?.routes ?? {}).sort()).toEqual(["/api/v0/*", "/api/v1/*", "/v0/*"]);
  expect(served.filter((r) => !declared.has(r))).toEqual([]);
  expect([...declared].filter((r) => !served.includes(r))).toEqual([]);
});

test("a handler answers its definition's response type: tsc refuses an answer that drifts from it", () => {
  const mounted: string[] = [];
  const mount = (path: string) => void mounted.push(path);
  const binder = new Binder({ get: mount, post: mount, delete: mount, head: mount, ws: mount }, { maxBytes: 1024, maxDepth: 8 });
  binder.http(operations.live, () => ({ status: "ok" }));
  // A Response is always an answer (a stream, another status); an unschematised body is unchecked.
  binder.http(lifecycle.load, () => new Response(null, { status: 204 }));
  binder.http(operations.metrics, () => "# text");
  // Each line below drifts from the documented shape; tsc (CI's `npx tsc --noEmit`) fails when
  // one of them is no longer an error.
  // @ts-expect-error `status` is the literal "success"
  binder.http(lifecycle.unload, () => ({ status: "done", message: "Unloaded" }));
  // @ts-expect-error `version` and the other fields of /v1/health are missing
  binder.http(operations.health, async () => ({ status: "ok" }));
  // @ts-expect-error `pid` is not a field of /v1/system-stats' answer
  binder.http(operations.systemStats, () => ({ pid: 1 }));
  expect(binder.bound.map((d) => d.id)).toEqual([operations.live, lifecycle.load, operations.metrics, lifecycle.unload, operations.health, operations.systemStats].map((d) => d.id));
  expect(mounted).toEqual(binder.bound.flatMap((d) => [...boundPaths(d), ...(d.head ? boundPaths(d) : [])]));
  expect(mounted).toContain("/v1/health");
  expect(mounted).not.toContain("/api/v1/health");
});
