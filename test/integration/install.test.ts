// Backend install/uninstall through the API. The engine build itself runs in CI's set-up
// (scripts/build-engines.ts, the same code path); here the cache already holds it.
import { afterEach, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { LLAMACPP } from "../../engines/llamacpp.ts";
import { engineDir } from "../../engines/source-build.ts";
import { llamaServerBinary, MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const post = (path: string, body: unknown) =>
  fetch(`${server!.url}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

/** A cache dir with its own copy of the build, so uninstalling it touches nothing shared. */
function cacheWithOwnBuild(): string {
  const cacheDir = tempDir();
  const dest = join(engineDir(cacheDir, LLAMACPP), LLAMACPP.binary);
  mkdirSync(dirname(dest), { recursive: true });
  copyFileSync(llamaServerBinary(), dest);
  return cacheDir;
}

test("installing an installed backend succeeds at once, streamed or not", async () => {
  server = await startTestServer();
  expect(await (await post("/v1/install", { recipe: "llamacpp", backend: "cpu" })).json()).toEqual({
    status: "success",
    recipe: "llamacpp",
    backend: "cpu",
  });
  const res = await post("/v1/install", { recipe: "llamacpp", backend: "cpu", stream: true });
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const text = await res.text();
  expect(text).toContain("event: complete");
  expect(text).toContain('"percent":100');
});

test("a backend this system cannot install is a 400 before any stream starts", async () => {
  server = await startTestServer();
  for (const stream of [false, true]) {
    const res = await post("/v1/install", { recipe: "llamacpp", backend: "rocm", stream });
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe("unsupported_backend");
  }
});

test("uninstall unloads the models using the backend, removes it, and system-info follows", async () => {
  const models = testModelsDir();
  const extra = tempDir("lemonade-extra-");
  copyFileSync(join(models, MODELS.chat), join(extra, MODELS.chat));
  const cacheDir = cacheWithOwnBuild();
  // The registry is a closed port, so the on-demand rebuild below fails at once instead of building.
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, NPM_CONFIG_REGISTRY: "http://127.0.0.1:9" }, cacheDir, { engines: false });
  expect((await post("/v1/load", { model_name: "extra.tiny-chat" })).status).toBe(200);
  const pid = (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded[0].pid;

  const res = await post("/v1/uninstall", { recipe: "llamacpp", backend: "cpu" });
  expect(res.status).toBe(200);
  expect((await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded).toEqual([]);
  expect(() => process.kill(pid, 0)).toThrow();
  expect(existsSync(engineDir(cacheDir, LLAMACPP))).toBe(false);
  const info = await (await fetch(`${server.url}/v1/system-info`)).json();
  expect(info.recipes.llamacpp.backends.cpu.state).toBe("installable");

  // Gone already: the state asked for is the state there is.
  const again = await post("/v1/uninstall", { recipe: "llamacpp", backend: "cpu" });
  expect(again.status).toBe(200);
  expect((await again.json()).message).toContain("was not installed");
  // With the engine gone, a load tries to build it on demand, and says how to get it back when that fails.
  const load = await post("/v1/load", { model_name: "extra.tiny-chat" });
  expect(load.status).toBe(500);
  const message = (await load.json()).message;
  expect(message).toContain("building it failed");
  expect(message).toContain("lemonade backends install llamacpp:cpu");
  // The shared build other tests use is untouched.
  expect(existsSync(llamaServerBinary())).toBe(true);
});
