// `npm start` (cli/start.js) as a fresh clone meets it: with no bundle yet it builds one
// (scripts/build.ts --start) and runs it; the bundle serves the API, the web app's and Swagger UI's
// files and the /docs pages (with a package it leaves in node_modules) and finds the files it starts
// as programs in the checkout (onnxruntime's engine script);
// a second start runs the same bundle without building; where no bundle can be built, the sources run.
import { beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startLemonade, type EmbeddedLemonade } from "../../embed/index.ts";
import { SERVER_RUNTIME_ENV } from "../../cli/runtime-env.ts";
import { checkBundle } from "../../cli/start.js";
import { FAKE_DIR } from "../helpers/fake-engine.ts";
import { tempDir } from "../helpers/temp.ts";

const root = join(import.meta.dir, "..", "..");
const MODEL = "extra.start-chat";
let env: Record<string, string>;

beforeAll(() => {
  const cacheDir = tempDir();
  const extra = tempDir("lemonade-fake-models-");
  writeFileSync(join(extra, "start-chat.gguf"), "FAKE: the fake engine reads no weights");
  writeFileSync(join(cacheDir, "recipe_options.json"), JSON.stringify({ [MODEL]: { llamacpp_backend: "system" } }));
  env = {
    PATH: `${FAKE_DIR}:${process.env.PATH ?? ""}`,
    ...SERVER_RUNTIME_ENV,
    LEMONADE_CACHE_DIR: cacheDir,
    LEMONADE_EXTRA_MODELS_DIR: extra,
    HF_HUB_CACHE: join(cacheDir, "hf"),
    HF_ENDPOINT: "http://127.0.0.1:9",
  };
});

async function npmStart(startDir: string): Promise<{ server: EmbeddedLemonade; log: string[] }> {
  const log: string[] = [];
  const server = await startLemonade({ command: [process.execPath, join(root, "cli", "start.js")], env: { ...env, LEMONADE_START_DIR: startDir }, onLog: (line) => log.push(line), timeoutMs: 120_000 });
  return { server, log };
}

test("with no bundle yet, npm start builds it and runs it; a second start runs it as built", async () => {
  const dir = join(tempDir(), "start");
  const first = await npmStart(dir);
  try {
    expect(first.log.some((line) => line.includes("Building npm start's bundle, since there is none yet"))).toBe(true);
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
    expect(checkBundle(dir, manifest.root, Bun.revision)).toEqual({ stale: null, bundle: join(dir, manifest.bundle) });
    // Its inputs: the server's sources and the web app's, the data they import, npm's record of the
    // install, and the TypeScript settings the bundler read (the JSX runtime).
    expect(manifest.inputs).toEqual(expect.arrayContaining(["cli/serve-main.ts", "web/main.tsx", "config/defaults.json", "node_modules/.package-lock.json", "tsconfig.json"]));
    expect(manifest.inputs.filter((file: string) => file.startsWith("node_modules/"))).toEqual(["node_modules/.package-lock.json"]);
    // CommonJS as Bun's bundler writes it (run without the transpiler), and no bytecode file,
    // which Bun would hold in memory whole.
    expect(readFileSync(join(dir, manifest.bundle), "utf8").split("\n")[0]).toBe("// @bun @bun-cjs");
    expect(existsSync(join(dir, `${manifest.bundle}.jsc`))).toBe(false);

    const { url } = first.server;
    expect(await (await fetch(`${url}/live`)).json()).toEqual({ status: "ok" });
    const page = await (await fetch(url)).text();
    expect(page).toContain("/app/assets/app.js");
    const app = await fetch(`${url}/app/assets/app.js`);
    expect(app.status).toBe(200);
    expect((await app.text()).length).toBeGreaterThan(10_000);
    const swagger = await fetch(`${url}/docs/assets/swagger-ui-bundle.js`);
    expect(swagger.status).toBe(200);
    expect(await swagger.text()).toContain("SwaggerUIBundle");
    // The markdown pages: marked is required from node_modules on first use (scripts/build.ts LAZY_PACKAGES).
    const openai = await fetch(`${url}/docs/assets/openai.html`);
    expect(openai.status).toBe(200);
    expect(await openai.text()).toContain("<h2");
    const info = await (await fetch(`${url}/v1/system-info`)).json();
    expect(info.recipes.onnxruntime.backends.cpu.state).toBe("installed");

    const chat = await fetch(`${url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 8 }) });
    expect(chat.status).toBe(200);
    expect((await chat.json()).choices[0].message.content.length).toBeGreaterThan(0);
  } finally {
    await first.server.stop();
  }
  expect(first.server.process.exitCode).toBe(0);

  const second = await npmStart(dir);
  try {
    expect(second.log.some((line) => line.includes("Building"))).toBe(false);
    expect((await fetch(`${second.server.url}/live`)).status).toBe(200);
  } finally {
    await second.server.stop();
  }
});

test("where no bundle can be built, npm start runs the sources and says so", async () => {
  const blocked = tempDir();
  mkdirSync(blocked, { recursive: true });
  // A folder below a file cannot be made, so the build fails.
  writeFileSync(join(blocked, "file"), "");
  const { server, log } = await npmStart(join(blocked, "file", "start"));
  try {
    expect(log.some((line) => line.includes("Running the sources instead of the bundle"))).toBe(true);
    expect((await fetch(`${server.url}/live`)).status).toBe(200);
  } finally {
    await server.stop();
  }
});
