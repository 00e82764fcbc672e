// The embedding helper (embed/index.ts) as an app uses it: it spawns `lemonade serve --port 0
// --ready-json --parent-pid <app>`, resolves with the ready line's URL and key, and the server
// stops itself and its engines (a FAKE llama-server here) when the app dies, however it dies.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startLemonade, type EmbeddedLemonade } from "../../embed/index.ts";
import { FAKE_DIR } from "../helpers/fake-engine.ts";
import { tempDir } from "../helpers/temp.ts";

const root = join(import.meta.dir, "..", "..");
const MODEL = "extra.embed-chat";
let env: Record<string, string>;
const started: EmbeddedLemonade[] = [];

beforeAll(() => {
  const cacheDir = tempDir();
  const extra = tempDir("lemonade-fake-models-");
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(join(extra, "embed-chat.gguf"), "FAKE: the fake engine reads no weights");
  writeFileSync(join(cacheDir, "recipe_options.json"), JSON.stringify({ [MODEL]: { llamacpp_backend: "system" } }));
  env = {
    PATH: `${FAKE_DIR}:${process.env.PATH ?? ""}`,
    LEMONADE_CACHE_DIR: cacheDir,
    LEMONADE_EXTRA_MODELS_DIR: extra,
    HF_HUB_CACHE: join(cacheDir, "hf"),
    HF_ENDPOINT: "http://127.0.0.1:9",
  };
});

afterAll(async () => {
  await Promise.all(started.map((s) => s.stop()));
});

const running = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function untilGone(pid: number, ms = 15_000): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 50) {
    if (!running(pid)) return true;
    await Bun.sleep(50);
  }
  return false;
}

/** Loads the model and returns its engine's pid, as /v1/health reports it. */
async function loadEngine(url: string, key: string | null): Promise<number> {
  const headers = { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) };
  const load = await fetch(`${url}/v1/load`, { method: "POST", headers, body: JSON.stringify({ model_name: MODEL }) });
  expect(load.status).toBe(200);
  const health = await (await fetch(`${url}/v1/health`, { headers })).json();
  const pid = health.all_models_loaded.find((m: { model_name: string }) => m.model_name === "embed-chat")?.pid;
  expect(typeof pid).toBe("number");
  expect(running(pid)).toBe(true);
  return pid;
}

test("resolves with the ready line's URL and generated key; the server answers there and stop() ends it and its engine", async () => {
  const lemonade = await startLemonade({ env, apiKey: "generate" });
  started.push(lemonade);
  expect(lemonade.url).toBe(`http://127.0.0.1:${lemonade.port}`);
  expect(lemonade.pid).toBe(lemonade.process.pid!);
  expect(lemonade.apiKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect((await fetch(`${lemonade.url}/live`)).status).toBe(200);
  // The generated key is the one in force.
  expect((await fetch(`${lemonade.url}/v1/models`)).status).toBe(401);
  const engine = await loadEngine(lemonade.url, lemonade.apiKey);
  const chat = await fetch(`${lemonade.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${lemonade.apiKey}` },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 4 }),
  });
  expect(chat.status).toBe(200);
  expect((await chat.json()).choices[0].message.content.length).toBeGreaterThan(0);
  await lemonade.stop();
  expect(lemonade.process.exitCode).toBe(0);
  expect(await untilGone(engine)).toBe(true);
});

test("stdout holds the ready line alone, and the generated key is nowhere in the log", async () => {
  const server = Bun.spawn([process.execPath, join(root, "cli", "main.ts"), "serve", "--port", "0", "--ready-json", "--generate-api-key", "--log-level", "debug"], {
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = new Response(server.stderr).text();
  const reader = server.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve exited: ${await stderr}`);
    text += new TextDecoder().decode(value);
  }
  const ready = JSON.parse(text.slice(0, text.indexOf("\n")));
  expect(Object.keys(ready).sort()).toEqual(["api_key", "pid", "port", "url"]);
  expect(ready.pid).toBe(server.pid);
  expect((await fetch(`${ready.url}/v1/models`, { headers: { authorization: `Bearer ${ready.api_key}` } })).status).toBe(200);
  server.kill("SIGTERM");
  expect(await server.exited).toBe(0);
  let rest = text.slice(text.indexOf("\n") + 1);
  for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
  expect(rest).toBe("");
  const log = await stderr;
  expect(log).toContain("listening on");
  expect(log).not.toContain(ready.api_key);
});

test("a key given by the app is the one required, passed in the environment", async () => {
  const lemonade = await startLemonade({ env, apiKey: "app-secret" });
  started.push(lemonade);
  expect(lemonade.apiKey).toBe("app-secret");
  expect(lemonade.process.spawnargs.join(" ")).not.toContain("app-secret");
  expect((await fetch(`${lemonade.url}/v1/models`, { headers: { authorization: "Bearer app-secret" } })).status).toBe(200);
  await lemonade.stop();
});

test("a server that cannot start rejects with its error", async () => {
  await expect(startLemonade({ env, args: ["--max-loaded-models", "lots"] })).rejects.toThrow(/exited before it was ready[\s\S]*--max-loaded-models/);
});

test("when the app dies (SIGKILL), the server stops itself and its engine", async () => {
  // The app: a process that embeds Lemonade, prints what it got, and waits.
  const app = Bun.spawn(
    [
      process.execPath,
      "-e",
      `import { startLemonade } from ${JSON.stringify(join(root, "embed", "index.ts"))};
       const l = await startLemonade({ env: ${JSON.stringify(env)} });
       console.log(JSON.stringify({ url: l.url, pid: l.pid, apiKey: l.apiKey }));
       setInterval(() => {}, 1000);`,
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  const reader = app.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the app exited: ${text}`);
    text += new TextDecoder().decode(value);
  }
  const { url, pid, apiKey } = JSON.parse(text);
  expect(apiKey).toBeNull();
  const engine = await loadEngine(url, apiKey);
  app.kill("SIGKILL");
  await app.exited;
  expect(await untilGone(pid)).toBe(true);
  expect(await untilGone(engine)).toBe(true);
});
