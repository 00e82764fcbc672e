// The `lemonade` command as users run it: the single-file build with nothing but system binaries
// on PATH, against a real server on the tiny models.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SERVER_RUNTIME_ENV } from "../../cli/runtime-env.ts";
import { defaultCacheDir } from "../../config/config.ts";
import { freePort } from "../../engines/process.ts";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startFakeHub, type FakeHub } from "../helpers/fake-hub.ts";
import { spawnPty } from "../helpers/pty.ts";
import { tempDir } from "../helpers/server.ts";

const root = join(import.meta.dir, "..", "..");
let exe: string;
let cacheDir: string;
let port: number;
let server: ReturnType<typeof Bun.spawn>;
let hub: FakeHub;

/** Only system binaries: no node, npm or bun. */
const bareEnv = () => ({ PATH: "/usr/bin:/bin", HOME: cacheDir, LEMONADE_CACHE_DIR: cacheDir, LEMONADE_PORT: String(port) });

/** Runs the CLI without blocking this process (the fake hub answers from it). */
async function lemonade(args: string[], stdin?: string, env: Record<string, string | undefined> = {}) {
  return spawn([exe, ...args], stdin, env);
}

async function spawn(argv: string[], stdin?: string, env: Record<string, string | undefined> = {}) {
  const p = Bun.spawn(argv, { env: { ...bareEnv(), ...env }, stdin: stdin === undefined ? "ignore" : Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

beforeAll(async () => {
  const out = join(tempDir("lemonade-build-"), "lemonade");
  const build = Bun.spawnSync([process.execPath, "scripts/build.ts", out], { cwd: root });
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr}`);
  exe = out;

  const chat = new Uint8Array(readFileSync(join(testModelsDir(), MODELS.chat)));
  // A collection as `lemonade export` publishes it: its manifest, defining its chat component.
  const omni = { recipe: "collection.omni", components: ["user.omni-chat", "kokoro-v1"], models: [{ model_name: "user.omni-chat", recipe: "llamacpp", checkpoint: "test-org/tiny-GGUF:Q4_0" }] };
  hub = startFakeHub({
    "test-org/tiny-GGUF": { sha: "c".repeat(40), files: { "tiny-Q4_0.gguf": chat, "tiny-Q8_0.gguf": chat } },
    "test-org/Tiny-Omni": { sha: "e".repeat(40), files: { "Tiny-Omni.json": new TextEncoder().encode(JSON.stringify(omni)) } },
  });
  cacheDir = tempDir();
  symlinkSync(join(defaultCacheDir(), "bin"), join(cacheDir, "bin"));
  const extra = join(cacheDir, "extra");
  mkdirSync(extra);
  copyFileSync(join(testModelsDir(), MODELS.chat), join(extra, MODELS.chat));
  port = freePort();
  server = Bun.spawn([exe, "serve"], {
    env: { ...bareEnv(), LEMONADE_EXTRA_MODELS_DIR: extra, HF_ENDPOINT: hub.url, HF_HUB_CACHE: join(cacheDir, "hf") },
    stdout: "ignore",
    stderr: "ignore",
  });
  for (let i = 0; i < 100; i++) {
    if (await fetch(`http://127.0.0.1:${port}/live`).then((r) => r.ok, () => false)) return;
    await Bun.sleep(50);
  }
  throw new Error("the compiled server did not start");
});

afterAll(async () => {
  server.kill("SIGTERM");
  await server.exited;
  hub.stop();
});

describe("the single-file build", () => {
  test("serve re-runs itself in place with the JavaScriptCore settings npm start's script sets", () => {
    // Started with none of them: the same process (execve keeps the pid) now has each.
    const environ = readFileSync(`/proc/${server.pid}/environ`, "utf8").split("\0");
    for (const [key, value] of Object.entries(SERVER_RUNTIME_ENV)) expect(environ).toContain(`${key}=${value}`);
  });

  test("list, load, status and unload against its own server", async () => {
    const list = await lemonade(["list"]);
    expect(list.code).toBe(0);
    // Two sections, as Lemonade's CLI prints them: what is here, then the catalog's others.
    const [local, available] = list.out.split("Available for Download");
    expect(local).toMatch(/^Local\nModel Name\s+Downloaded\s+Size \(GB\)\s+Details/);
    // Each listed by its id: an extra model's bare name, which nothing else holds.
    expect(local).toMatch(/^tiny-chat\s+Yes\s+\d+\.\d\d\s+llamacpp/m);
    expect(available).toContain("Qwen3-0.6B-GGUF");
    expect(local).not.toContain("Qwen3-0.6B-GGUF");
    const filtered = await lemonade(["list", "--downloaded", "tiny"]);
    // The Name column is the listed id: an extra model's bare name, which nothing else holds.
    expect(filtered.out).toMatch(/^tiny-chat\s/m);
    expect(filtered.out).not.toContain("extra.tiny-chat");
    expect(filtered.out).not.toContain("Available for Download");
    expect(filtered.out).not.toContain("Local\n");
    expect(filtered.out).toMatch(/^Model Name\s+Downloaded/);

    expect((await lemonade(["load", "extra.tiny-chat"])).out).toContain("Loaded model: extra.tiny-chat");
    const status = await lemonade(["status", "--json"]);
    const parsed = JSON.parse(status.out);
    expect(parsed.running).toBe(true);
    const loaded = parsed.all_models_loaded[0];
    expect(loaded.model_name).toBe("tiny-chat");
    expect(() => process.kill(loaded.pid, 0)).not.toThrow();
    expect((await lemonade(["status"])).out).toContain(String(loaded.pid));

    const models = JSON.parse((await lemonade(["list", "--json"])).out);
    expect(models.find((m: any) => m.id === "tiny-chat").loaded).toBe(true);

    expect((await lemonade(["unload", "extra.tiny-chat"])).code).toBe(0);
    expect(JSON.parse((await lemonade(["status", "--json"])).out).all_models_loaded).toEqual([]);
  });

  test("carries the API reference: /openapi.json, /docs, its viewer and its pages, from the executable alone", async () => {
    const base = `http://127.0.0.1:${port}`;
    const doc = await (await fetch(`${base}/openapi.json`)).json();
    expect(doc.servers).toEqual([{ url: "/", description: "The server this document is served from" }]);
    expect(doc.components.schemas.ChatCompletion).toBeDefined();
    expect(await (await fetch(`${base}/docs`)).text()).toContain('src="/docs/assets/swagger-ui-bundle.js"');
    for (const file of ["swagger-ui-bundle.js", "swagger-ui.css", "init.js", "openai.html", "lemonade.html"]) {
      expect((await fetch(`${base}/docs/assets/${file}`)).status, file).toBe(200);
    }
    expect(await (await fetch(`${base}/docs/assets/lemonade.html`)).text()).toContain('id="post-v1load"');
  });

  test("serves the web app's files embedded in the executable, and no others", async () => {
    const base = `http://127.0.0.1:${port}`;
    const js = await fetch(`${base}/app/assets/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toContain("javascript");
    expect((await js.text()).length).toBeGreaterThan(10_000);
    const css = await fetch(`${base}/app/assets/app.css`);
    expect(css.headers.get("content-type")).toContain("text/css");
    expect((await css.text()).length).toBeGreaterThan(0);
    for (const file of ["missing.js", "constructor", "__proto__"]) expect((await fetch(`${base}/app/assets/${file}`)).status, file).toBe(404);
  });

  test("run streams a reply to a piped message and exits cleanly", async () => {
    const chats = async () => {
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const m = /lemonade_engine_requests_total\{model="tiny-chat",endpoint="chat_completions",status="200"\} (\d+)/.exec(metrics);
      return Number(m?.[1] ?? 0);
    };
    const before = await chats();
    const r = await lemonade(["run", "extra.tiny-chat", "--chat-cli", "--max-tokens", "6"], "hello there\n/bye\nnot sent\n");
    expect(r.code).toBe(0);
    expect(r.out.trim().length).toBeGreaterThan(0);
    // One message went out; /bye ended the chat before the line after it. The server counts a
    // request when its stream has ended, which may be just after the client saw [DONE].
    let after = await chats();
    for (let i = 0; i < 200 && after === before; i++) {
      await Bun.sleep(50);
      after = await chats();
    }
    await Bun.sleep(200);
    expect(await chats()).toBe(before + 1);
  });

  test("run downloads a registered model with progress before chatting", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/models/register`, {
      method: "POST",
      body: JSON.stringify({ model_name: "user.RunMe", recipe: "llamacpp", checkpoint: "test-org/tiny-GGUF:Q4_0" }),
    });
    expect(res.status).toBe(200);
    const r = await lemonade(["run", "user.RunMe", "--chat-cli", "--max-tokens", "3"], "hi\n");
    expect(r.code).toBe(0);
    expect(r.err).toContain("tiny-Q4_0.gguf: 100%");
    expect(r.out.trim().length).toBeGreaterThan(0);
  });

  test("run in a pseudo-terminal shows a prompt and leaves on Ctrl-D", async () => {
    const s = spawnPty([exe, "run", "extra.tiny-chat", "--chat-cli", "--max-tokens", "4"], bareEnv());
    expect(await s.until(/>>> $/)).toContain("Chatting with extra.tiny-chat");
    s.type("hi\r");
    await s.until(/>>> [\s\S]+>>> $/);
    s.type("\x04");
    expect(await s.exited).toBe(0);
  });

  test("pull shows plain progress lines when piped and a redrawn bar on a terminal", async () => {
    const piped = await lemonade(["pull", "user.Piped", "--checkpoint", "test-org/tiny-GGUF:Q4_0"]);
    expect(piped.code).toBe(0);
    expect(piped.err).toMatch(/\[1\/1\] tiny-Q4_0\.gguf: 100% \(/);
    expect(piped.err).not.toContain("\r");
    expect(piped.out).toContain("Installed user.Piped");

    const tty = spawnPty([exe, "pull", "user.Tty", "--checkpoint", "test-org/tiny-GGUF:Q4_0"], bareEnv());
    expect(await tty.exited).toBe(0);
    expect(tty.raw()).toContain("\r[1/1] tiny-Q4_0.gguf [");
    expect(tty.text()).toContain("100%");
  });

  test("alias, config, export and import", async () => {
    expect((await lemonade(["alias", "add", "my-chat", "extra.tiny-chat"])).code).toBe(0);
    // With the target's recipe and whether it is downloaded, as Lemonade's lists them.
    expect((await lemonade(["alias", "list"])).out).toMatch(/my-chat\s+extra\.tiny-chat\s+llamacpp\s+yes/);
    expect((await lemonade(["alias", "remove", "my-chat"])).code).toBe(0);

    expect((await lemonade(["config", "set", "max_loaded_models=2", "offline=false"])).code).toBe(0);
    expect((await lemonade(["config", "get", "max_loaded_models"])).out.trim()).toBe("2");
    const unknown = await lemonade(["config", "set", "nonsense=1"]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toBe("Error: unknown config key `nonsense`\nRun `lemonade config` to see valid keys.\n");
    // auto_evict is a setting the CLI sets (the multi-model guide's `lemonade config set auto_evict=true`).
    const evict = await lemonade(["config", "set", "auto_evict=true"]);
    expect(evict.code, evict.err).toBe(0);
    expect((await lemonade(["config", "get", "auto_evict"])).out.trim()).toBe("true");
    expect((await lemonade(["config", "set", "auto_evict=false"])).code).toBe(0);

    const exported = join(cacheDir, "piped.json");
    const exportedRun = await lemonade(["export", "user.Piped", "-o", exported]);
    expect(exportedRun.code, exportedRun.err).toBe(0);
    const body = JSON.parse(readFileSync(exported, "utf8"));
    // Its user. registration, so the file is a /v1/pull body as it is (lemonade.md).
    expect(body).toMatchObject({ model_name: "user.Piped", recipe: "llamacpp", checkpoints: { main: "test-org/tiny-GGUF:Q4_0" } });
    writeFileSync(exported, JSON.stringify({ ...body, model_name: "user.Imported" }));
    const imported = await lemonade(["import", exported]);
    expect(imported.code, imported.err).toBe(0);
    // Listed by its public (bare) name.
    expect(JSON.parse((await lemonade(["list", "--json"])).out).some((m: any) => m.id === "Imported" && m.downloaded)).toBe(true);
  });

  test("collections: pull a published one by its repository, make one with --components, export and import it", async () => {
    const published = await lemonade(["pull", "test-org/Tiny-Omni"]);
    expect(published.code, published.err).toBe(0);
    expect(published.out).toContain("Installed user.Tiny-Omni");
    const list = () => lemonade(["list", "--json"]).then((r) => JSON.parse(r.out) as any[]);
    // A user's collection is listed by its user. id; its components by their listed ids.
    expect((await list()).find((m) => m.id === "user.Tiny-Omni")).toMatchObject({ recipe: "collection.omni", components: ["omni-chat", "kokoro-v1"], downloaded: true });

    const missing = await lemonade(["pull", "user.CliGap", "--recipe", "collection.omni", "--components", "user.omni-chat", "No-Such-Part"]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("Collection component not registered: 'No-Such-Part'");
    const made = await lemonade(["pull", "user.CliKit", "--recipe", "collection.omni", "--components", "user.omni-chat", "kokoro-v1"]);
    expect(made.code, made.err).toBe(0);
    const file = join(cacheDir, "kit.json");
    expect((await lemonade(["export", "user.CliKit", "-o", file])).code).toBe(0);
    const body = JSON.parse(readFileSync(file, "utf8"));
    expect(body).toMatchObject({ model_name: "user.CliKit", recipe: "collection.omni", components: ["omni-chat", "kokoro-v1"] });
    expect(body.models.map((d: any) => [d.model_name, d.recipe])).toEqual([["omni-chat", "llamacpp"], ["kokoro-v1", "kokoro"]]);
    expect(body.models[0].checkpoints.main).toBe("test-org/tiny-GGUF:Q4_0");

    expect((await lemonade(["delete", "user.CliKit"])).code).toBe(0);
    expect((await list()).some((m) => m.id === "user.CliKit")).toBe(false);
    const imported = await lemonade(["import", file]);
    expect(imported.code, imported.err).toBe(0);
    expect((await list()).find((m) => m.id === "user.CliKit")).toMatchObject({ components: ["omni-chat", "kokoro-v1"], downloaded: true });
    // The file is an import-ready /v1/pull body, POSTed as it is.
    expect((await lemonade(["delete", "user.CliKit"])).code).toBe(0);
    const verbatim = await fetch(`http://127.0.0.1:${port}/v1/pull`, { method: "POST", body: readFileSync(file) });
    expect(verbatim.status).toBe(200);
    expect((await list()).find((m) => m.id === "user.CliKit")).toMatchObject({ components: ["omni-chat", "kokoro-v1"] });
  });

  test("cloud: the server as its own provider (another Lemonade), listed, keyed, cleared and removed", async () => {
    // Without a key nothing is discovered; an http:// provider takes one only with the opt-in.
    const keyless = await lemonade(["cloud", "install", "self", `http://127.0.0.1:${port}/v1`]);
    expect(keyless.out).toContain("Installed self: 0 model(s) discovered");
    const refused = await lemonade(["cloud", "install", "self", "--base-url", `http://127.0.0.1:${port}/v1`, "--api-key", "sk-any"]);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain("allow_insecure_http");
    const install = await lemonade(["cloud", "install", "self", "--base-url", `http://127.0.0.1:${port}/v1`, "--api-key", "sk-any", "--allow-insecure-http"]);
    expect(install.code, install.err).toBe(0);
    expect(install.out).toMatch(/Installed self: [1-9]\d* model\(s\) discovered/);
    const listed = JSON.parse((await lemonade(["cloud", "list", "--json"])).out);
    expect(listed).toEqual([
      {
        name: "self",
        base_url: `http://127.0.0.1:${port}/v1`,
        allow_insecure_http: true,
        auth_header_name: "Authorization",
        auth_header_prefix: "Bearer ",
        env_var: "LEMONADE_SELF_API_KEY",
        env_var_set: false,
        runtime_key_set: true,
        models_discovered: expect.any(Number),
        warnings: expect.arrayContaining(["Base URL uses http://; traffic to this provider is not encrypted."]),
        warning: expect.stringContaining("not encrypted"),
      },
    ]);
    expect(listed[0].models_discovered).toBeGreaterThan(0);
    expect((await lemonade(["cloud", "list"])).out).toMatch(/self\s+http:\/\/127\.0\.0\.1:\d+\/v1\s+[1-9]/);
    // Several base URLs make a pool (here this server twice, by two names).
    const pool = await lemonade(["cloud", "install", "twin", `http://127.0.0.1:${port}/v1`, `http://localhost:${port}/v1`, "--api-key", "sk-any", "--allow-insecure-http"]);
    expect(pool.code, pool.err).toBe(0);
    expect((await lemonade(["cloud", "list"])).out).toMatch(/twin\s+http:\/\/127\.0\.0\.1:\d+\/v1 http:\/\/localhost:\d+\/v1\s+[1-9]/);
    expect((await lemonade(["cloud", "uninstall", "twin"])).code).toBe(0);
    // A gateway's own header; the listing shows it (quoted, so the empty prefix shows) where it is not the default.
    const gateway = await lemonade(["cloud", "install", "gw", `http://127.0.0.1:${port}/v1`, "--auth-header-name", "X-Api-Key", "--auth-header-prefix", ""]);
    expect(gateway.code, gateway.err).toBe(0);
    const withHeader = (await lemonade(["cloud", "list"])).out;
    expect(withHeader).toContain('gw auth header: X-Api-Key: ""<key>');
    expect(withHeader).not.toContain("self auth header");
    expect((await lemonade(["cloud", "uninstall", "gw"])).code).toBe(0);
    // The key goes in on standard input, so it never shows in the process list.
    const auth = await lemonade(["cloud", "auth", "self"], "sk-cli-key\n");
    expect(auth.code, auth.err).toBe(0);
    expect(auth.out).toContain("Key set for self");
    expect((await lemonade(["cloud", "clear", "self"])).out).toContain("Forgot the key of self");
    // Its key gone, the provider's models are no longer listed.
    expect((await lemonade(["cloud", "uninstall", "self"])).out).toContain("Removed self and its 0 model(s)");
    const missing = await lemonade(["cloud", "uninstall", "self"]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("not installed");
    expect((await lemonade(["cloud", "frobnicate"])).code).toBe(2);
  });

  test("backends lists recipe states; --json is machine-readable", async () => {
    const table = await lemonade(["backends"]);
    expect(table.out).toMatch(/llamacpp\s+cpu\s+installed/);
    const json = JSON.parse((await lemonade(["backends", "--json"])).out);
    expect(json.llamacpp.backends.cpu.state).toBe("installed");
    // What cannot run here is listed only with --all.
    const unsupported = Object.entries<any>(json).flatMap(([r, v]) => Object.entries<any>(v.backends).filter(([, b]) => b.state === "unsupported").map(([b]) => `${r}\\s+${b}`));
    expect(unsupported.length).toBeGreaterThan(0);
    expect(table.out).not.toMatch(new RegExp(unsupported[0]!));
    expect((await lemonade(["backends", "--all"])).out).toMatch(new RegExp(`${unsupported[0]}\\s+unsupported`));
  });

  test("exit codes: 0 with --help on every command, 2 for usage, 1 for runtime failures with what to do", async () => {
    for (const cmd of ["serve", "run", "chat", "launch", "list", "pull", "delete", "load", "unload", "pin", "unpin", "status", "backends", "alias", "cloud", "config", "export", "import", "check-updates", "logs", "bench", "cleanup-cache"]) {
      const r = await lemonade([cmd, "--help"]);
      expect(r.code, cmd).toBe(0);
      expect(r.out, cmd).toContain(`Usage: lemonade ${cmd}`);
    }
    expect((await lemonade(["frobnicate"])).code).toBe(2);
    expect((await lemonade(["load"])).code).toBe(2);
    expect((await lemonade(["list", "--bogus"])).code).toBe(2);
    const missing = await lemonade(["load", "No-Such-Model"]);
    expect(missing.code).toBe(1);
    // A load says what it is doing first ("Loading ..."); the error is the line that ends it.
    expect(missing.err.trimEnd().split("\n").at(-1)).toStartWith("Error: Model 'No-Such-Model' was not found.");
    expect(missing.err).not.toContain("\x1b[");
  });

  test("a command that needs a server starts one when none answers", async () => {
    const other = freePort();
    const r = await lemonade(["list", "--port", String(other)]);
    try {
      expect(r.code).toBe(0);
      expect(r.err).toContain(`Starting Lemonade Server on http://127.0.0.1:${other}`);
      // This server has no downloaded chat models: the catalog's are offered for download.
      expect(r.out).toContain("Available for Download");
      expect((await fetch(`http://127.0.0.1:${other}/live`)).status).toBe(200);
    } finally {
      // The server it started says its pid in its log; stop exactly that process.
      const started = readFileSync(join(cacheDir, "server.log"), "utf8").match(new RegExp(`listening on http://127\\.0\\.0\\.1:${other} \\(pid (\\d+)\\)`));
      if (started) process.kill(Number(started[1]), "SIGTERM");
    }
  });

  test("logs opens the web app's Logs panel, as Lemonade's does, or prints the retained log with --no-follow", async () => {
    const r = await lemonade(["logs", "--no-follow"]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("listening on");
    const bin = tempDir("lemonade-logs-browser-");
    const record = join(bin, "opened.txt");
    writeFileSync(join(bin, "xdg-open"), `#!/bin/sh\necho "$1" > "${record}"\n`, { mode: 0o755 });
    const opened = await lemonade(["logs"], undefined, { PATH: `${bin}:/usr/bin:/bin` });
    expect(opened.code, opened.err).toBe(0);
    expect(readFileSync(record, "utf8").trim()).toBe(`http://127.0.0.1:${port}/#logs`);
    // No browser: the address to open.
    const printed = await lemonade(["logs"], undefined, { PATH: tempDir("lemonade-no-browser-") });
    expect(printed.out).toContain(`Open http://127.0.0.1:${port}/#logs in your browser`);
  });
});

describe("Lemonade's CLI syntax", () => {
  test("global options before or after the command, LEMONADE_HOST forms, --help-all, -v, Error: messages", async () => {
    expect(JSON.parse((await lemonade(["--port", String(port), "status", "--json"])).out).running).toBe(true);
    expect(JSON.parse((await lemonade(["status", "--json", `--port=${port}`])).out).running).toBe(true);
    // Lemonade's beacon switches are taken (the server is --host's, found by no beacon).
    expect(JSON.parse((await lemonade(["--no-discovery", "status", "--json"])).out).running).toBe(true);
    expect(JSON.parse((await lemonade(["status", "--discovery", "--json"])).out).running).toBe(true);
    for (const host of [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`]) {
      const r = await lemonade(["status", "--json"], undefined, { LEMONADE_PORT: undefined, LEMONADE_HOST: host });
      expect(JSON.parse(r.out).url, host).toBe(`http://127.0.0.1:${port}`);
    }
    const all = await lemonade(["--help-all"]);
    expect(all.code).toBe(0);
    for (const cmd of ["pull", "launch", "chat", "cleanup-cache", "cloud"]) expect(all.out).toContain(`== ${cmd} ==\nUsage: lemonade ${cmd}`);
    expect((await lemonade(["list", "-v"])).out.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const bad = await lemonade(["load", "extra.tiny-chat", "--ctx-size", "lots"]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/^Error: --ctx-size must be a whole number, got lots\. Run with --help/);
  });

  test("--host URLs: a server of Lemonade's API at http://HOST:PORT is listed from, https is tried as TLS; list's FILTER takes *", async () => {
    // Only Lemonade's /api/v1 routes, as a Lemonade server behind a proxy might expose.
    const stand = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => (new URL(req.url).pathname === "/api/v1/models" ? Response.json({ data: [] }) : new Response("no", { status: 404 })) });
    try {
      const plain = await lemonade(["list"], undefined, { LEMONADE_PORT: undefined, LEMONADE_HOST: `http://127.0.0.1:${stand.port}` });
      expect(plain.code, plain.err).toBe(0);
      expect(plain.out).toBe("No models available\n");
      // Nothing is started where something already answers, nor for an https address.
      const tls = await lemonade(["list"], undefined, { LEMONADE_PORT: undefined, LEMONADE_HOST: `https://127.0.0.1:${stand.port}` });
      expect(tls.code).toBe(1);
      expect(tls.err).toStartWith(`Error: Could not connect to Lemonade server at https://127.0.0.1:${stand.port}`);
      expect(tls.err).not.toContain("Starting Lemonade Server");
    } finally {
      stand.stop(true);
    }
    const starred = await lemonade(["list", "TINY*chat"]);
    expect(starred.out).toMatch(/\ntiny-chat +Yes /);
    expect(starred.out).not.toContain("Qwen");
  });

  test("load and run --help group the recipe flags under Lemonade's headings", async () => {
    for (const cmd of ["load", "run"]) {
      const help = (await lemonade([cmd, "--help"])).out;
      const groups = ["General Options:", "Llama.cpp Backend Options:", "Whisper.cpp Options:", "Stable Diffusion Options:", "vLLM Options:"];
      const at = groups.map((g) => help.indexOf(`\n${g}\n`));
      expect(at.every((i) => i >= 0), help).toBe(true);
      const section = (g: string) => help.slice(help.indexOf(`\n${g}\n`) + 1).split("\n\n")[0]!;
      expect(section("General Options:")).toMatch(/\n  --ctx-size SIZE +\S[\s\S]*\n  --merge-args, --no-merge-args +\S/);
      for (const flag of ["--llamacpp BACKEND", "--llamacpp-device", "--llamacpp-args"]) expect(section("Llama.cpp Backend Options:")).toContain(`\n  ${flag} `);
      for (const flag of ["--sdcpp BACKEND", "--sdcpp-args"]) expect(section("Stable Diffusion Options:")).toContain(`\n  ${flag} `);
      for (const flag of ["--vllm BACKEND", "--vllm-args"]) expect(section("vLLM Options:")).toContain(`\n  ${flag} `);
      for (const flag of ["--whispercpp BACKEND", "--whispercpp-args"]) expect(section("Whisper.cpp Options:")).toContain(`\n  ${flag} `);
    }
  });

  test("load takes every recipe option as a flag; pin, unpin; unload with no model unloads all", async () => {
    const r = await lemonade(["load", "extra.tiny-chat", "--ctx-size", "384", "--llamacpp", "cpu", "--llamacpp-args", "--threads 1", "--no-merge-args", "--save-options"]);
    expect(r.code, r.err).toBe(0);
    const options = await (await fetch(`http://127.0.0.1:${port}/v1/models/extra.tiny-chat/options`)).json();
    expect(options.saved).toMatchObject({ ctx_size: 384, llamacpp_backend: "cpu", llamacpp_args: "--threads 1", merge_args: false });
    const health = async () => (await (await fetch(`http://127.0.0.1:${port}/v1/health`)).json()).all_models_loaded;
    expect((await health())[0].recipe_options.ctx_size).toBe(384);
    expect((await lemonade(["pin", "extra.tiny-chat"])).out).toContain("Pinned extra.tiny-chat");
    expect((await health())[0].pinned).toBe(true);
    expect((await lemonade(["unpin", "extra.tiny-chat"])).code).toBe(0);
    expect((await health())[0].pinned).toBe(false);
    expect((await lemonade(["pin", "Qwen3-0.6B-GGUF"])).code).toBe(1);
    expect((await lemonade(["unload"])).out).toContain("All models unloaded");
    expect(await health()).toEqual([]);
    await fetch(`http://127.0.0.1:${port}/v1/models/extra.tiny-chat/options`, { method: "DELETE" });
  });

  test("config shows the live settings; set applies through the server and saves; get reads nested keys", async () => {
    // As Lemonade's CLI prints it: [General], then a section per nested setting, `section.field`.
    const table = (await lemonade(["config"])).out;
    expect(table).toStartWith("Server Configuration\n---");
    expect(table).toMatch(/\n  \[General\]\n(  \S+ +\S.*\n)*  max_loaded_models +\d+\n/);
    expect(table).toMatch(/\n  \[llamacpp\]\n(  llamacpp\.\S+ +\S.*\n)*  llamacpp\.backend +auto\n/);
    expect(table).toMatch(/  llamacpp\.args +\(empty\)\n/);
    expect(table.trimEnd()).toEndWith("To change a value:  lemonade config set port=9000 llamacpp.backend=rocm");
    expect(JSON.parse((await lemonade(["config", "--json"])).out).llamacpp.backend).toBe("auto");
    const set = await lemonade(["config", "set", "max_loaded_models=3", "llamacpp.args=--threads 1"]);
    expect(set.code, set.err).toBe(0);
    expect(set.out).toStartWith(`Configuration updated:\n${JSON.stringify({ max_loaded_models: 3, llamacpp: { args: "--threads 1" } }, null, 4)}`);
    expect((await (await fetch(`http://127.0.0.1:${port}/v1/health`)).json()).max_models.llm).toBe(3);
    expect((await lemonade(["config", "get", "llamacpp.args"])).out.trim()).toBe("--threads 1");
    expect(JSON.parse(readFileSync(join(cacheDir, "config.json"), "utf8")).llamacpp.args).toBe("--threads 1");
    const wrong = await lemonade(["config", "set", "max_loaded_models=many"]);
    expect(wrong.code).toBe(1);
    expect(wrong.err).toContain("max_loaded_models");
    // Lemonade's flat spellings: a backend's `<recipe>_args` is its section's `args`; `no_broadcast` negates `broadcast`.
    const flat = await lemonade(["config", "set", "vllm_args=--enforce-eager", "no_broadcast=true"]);
    expect(flat.code, flat.err).toBe(0);
    expect((await lemonade(["config", "get", "vllm.args"])).out.trim()).toBe("--enforce-eager");
    expect((await lemonade(["config"])).out).toMatch(/\n  vllm\.args +--enforce-eager\n/);
    expect((await lemonade(["config", "get", "broadcast"])).out.trim()).toBe("false");
    const twice = await lemonade(["config", "set", "llamacpp_args=-a", "llamacpp.args=-b"]);
    expect(twice.code).toBe(1);
    expect((await lemonade(["config", "get", "llamacpp.args"])).out.trim()).toBe("--threads 1");
    await lemonade(["config", "set", "max_loaded_models=2", "llamacpp.args=", "vllm.args=", "broadcast=true"]);
  });

  test("chat: a system prompt, /clear, a multi-line message and /model, piped", async () => {
    const chats = async () => {
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return [...metrics.matchAll(/lemonade_engine_requests_total\{model="[^"]+",endpoint="chat_completions",status="200"\} (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    };
    const before = await chats();
    expect((await lemonade(["pull", "user.ChatB", "--checkpoint", "test-org/tiny-GGUF:Q4_0"])).code).toBe(0);
    const r = await lemonade(["chat", "extra.tiny-chat", "--system", "Be brief.", "--max-tokens", "3", "--no-stream"], 'hello\n/clear\n"""\nline one\nline two\n"""\n/model user.ChatB\nand now?\n/bye\nnot sent\n');
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain("Cleared the conversation");
    expect(r.err).toContain("Now chatting with user.ChatB");
    // hello, the two-line message as one, and the line after /model: three requests.
    // The last request is counted once its answer has ended on the server too.
    for (let i = 0; i < 20 && (await chats()) < before + 3; i++) await Bun.sleep(50);
    expect(await chats()).toBe(before + 3);
  });

  test("chat in a pseudo-terminal: Ctrl-C stops a reply and the chat goes on", async () => {
    const s = spawnPty([exe, "chat", "extra.tiny-chat", "--max-tokens", "4000"], bareEnv());
    const prompted = (await s.until(/>>> $/)).length;
    s.type("tell me everything\r");
    // Some of the reply, then Ctrl-C.
    await s.until(new RegExp(`^[\\s\\S]{${prompted + 60},}`));
    s.type("\x03");
    await s.until(/\(stopped\)[\s\S]*>>> $/);
    s.type("/bye\r");
    expect(await s.exited).toBe(0);
  });

  test("run opens the web app's chat with the model in the browser, or prints its address", async () => {
    const bin = tempDir("lemonade-browser-");
    const record = join(bin, "opened.txt");
    writeFileSync(join(bin, "xdg-open"), `#!/bin/sh\necho "$1" > "${record}"\n`, { mode: 0o755 });
    const opened = await lemonade(["run", "extra.tiny-chat"], undefined, { PATH: `${bin}:/usr/bin:/bin` });
    expect(opened.code, opened.err).toBe(0);
    const url = `http://127.0.0.1:${port}/?model=extra.tiny-chat#chat`;
    expect(readFileSync(record, "utf8").trim()).toBe(url);
    expect(opened.out).toContain(`Opened ${url}`);
    // The page it opens is the app.
    expect((await fetch(url)).headers.get("content-type")).toContain("text/html");
    const failing = join(tempDir("lemonade-nobrowser-"), "xdg-open");
    writeFileSync(failing, "#!/bin/sh\nexit 3\n", { mode: 0o755 });
    const printed = await lemonade(["run", "extra.tiny-chat"], undefined, { PATH: `${join(failing, "..")}:/usr/bin:/bin` });
    expect(printed.out).toContain(`Open ${url} in your browser`);
  });

  test("launch runs each agent as Lemonade's CLI does: its URL, key and model; codex's -c provider; opencode's config file; --provider for codex only; a missing agent fails at once", async () => {
    const bin = tempDir("lemonade-agents-");
    const home = tempDir("lemonade-agent-home-");
    const record = join(bin, "record.txt");
    const agentEnv = { PATH: `${bin}:/usr/bin:/bin`, HOME: home, XDG_CONFIG_HOME: join(home, ".config") };
    const fakeAgent = (name: string, code = 0) => writeFileSync(join(bin, name), `#!/bin/sh\n{ env; echo "ARGV $*"; } > "${record}"\nexit ${code}\n`, { mode: 0o755 });
    fakeAgent("claude", 7);
    // Arguments for the agent go in --agent-args: anything else after the agent is refused, as
    // Lemonade's parser refuses extras, before the agent runs.
    const extras = await lemonade(["launch", "claude", "--model", "extra.tiny-chat", "--", "--verbose", "-x"], undefined, agentEnv);
    expect(extras.code).toBe(2);
    expect(extras.err).toContain("The following arguments were not expected: --verbose -x\nRun with --help for more information.");
    expect(existsSync(record)).toBe(false);
    const r = await lemonade(["launch", "claude", "--model", "extra.tiny-chat", "--agent-args", "--print hello --verbose"], undefined, agentEnv);
    expect(r.code).toBe(7);
    expect(r.out).toContain("Loading model in background: extra.tiny-chat");
    const seen = readFileSync(record, "utf8");
    expect(seen).toContain(`ANTHROPIC_BASE_URL=http://127.0.0.1:${port}\n`);
    expect(seen).toContain("ANTHROPIC_AUTH_TOKEN=lemonade\n");
    expect(seen).toContain("ANTHROPIC_DEFAULT_SONNET_MODEL=extra.tiny-chat\n");
    expect(seen).toContain("ARGV --print hello --verbose");
    // The API key given is the agent's too.
    await lemonade(["launch", "claude", "--model", "extra.tiny-chat"], undefined, { ...agentEnv, LEMONADE_API_KEY: "sk-agent" });
    expect(readFileSync(record, "utf8")).toContain("ANTHROPIC_AUTH_TOKEN=sk-agent\n");
    // --api-key is the key given, over LEMONADE_API_KEY, and the agent's own LEMONADE_API_KEY too.
    expect((await lemonade(["launch", "claude", "--model", "extra.tiny-chat", "--api-key", "sk-flag"], undefined, { ...agentEnv, LEMONADE_API_KEY: "sk-env" })).code).toBe(7);
    expect(readFileSync(record, "utf8")).toContain("ANTHROPIC_AUTH_TOKEN=sk-flag\n");
    expect(readFileSync(record, "utf8")).toContain("LEMONADE_API_KEY=sk-flag\n");

    // A server bound to every address is the agent's on localhost, as Lemonade's CLI gives it.
    expect((await lemonade(["--host", "0.0.0.0", "launch", "claude", "--model", "extra.tiny-chat"], undefined, agentEnv)).code).toBe(7);
    expect(readFileSync(record, "utf8")).toContain(`ANTHROPIC_BASE_URL=http://localhost:${port}\n`);

    // A missing agent: the model named is acknowledged, then Lemonade's (unprefixed) message.
    const missing = await lemonade(["launch", "codex", "--model", "extra.tiny-chat"], undefined, agentEnv);
    expect(missing.code).toBe(1);
    expect(missing.out).toBe("Model was provided explicitly; skipping recipe import prompts.\n");
    expect(missing.err).toStartWith("Agent binary not found for codex\n");
    expect(missing.err).toContain("Install Codex CLI and ensure 'codex' is on PATH.");

    fakeAgent("codex");
    expect((await lemonade(["launch", "codex", "--model", "extra.tiny-chat"], undefined, agentEnv)).code).toBe(0);
    const codex = readFileSync(record, "utf8");
    expect(codex).toContain("OPENAI_API_KEY=lemonade\n");
    expect(codex).toContain(`-c model_providers.lemonade={ name='Lemonade', base_url='http://127.0.0.1:${port}/v1', wire_api='responses'`);
    expect(codex).toContain('-c model_provider="lemonade"');
    expect(codex).toContain("-m extra.tiny-chat");
    expect((await lemonade(["launch", "codex", "--model", "extra.tiny-chat", "--provider", "mine"], undefined, agentEnv)).code).toBe(0);
    const mine = readFileSync(record, "utf8");
    expect(mine).toContain('-c model_provider="mine"');
    expect(mine).not.toContain("model_providers.");
    // -p alone: Codex's own config.toml, provider lemonade.
    expect((await lemonade(["launch", "codex", "--model", "extra.tiny-chat", "-p"], undefined, agentEnv)).code).toBe(0);
    expect(readFileSync(record, "utf8")).toContain('-c model_provider="lemonade"');
    expect(readFileSync(record, "utf8")).not.toContain("model_providers.");
    const refused = await lemonade(["launch", "claude", "--model", "extra.tiny-chat", "--provider", "mine"], undefined, agentEnv);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain("Error: --provider is only supported for 'lemonade launch codex'.");

    // opencode: its config file is created with the Lemonade provider, refreshed, and keeps the rest.
    fakeAgent("opencode");
    const configPath = join(home, ".config", "opencode", "opencode.json");
    mkdirSync(join(configPath, ".."), { recursive: true });
    writeFileSync(configPath, JSON.stringify({ theme: "dark", provider: { Other: { name: "x" } } }));
    expect((await lemonade(["launch", "opencode", "--model", "extra.tiny-chat"], undefined, agentEnv)).code).toBe(0);
    expect(readFileSync(record, "utf8")).toContain("ARGV -m Lemonade/extra.tiny-chat");
    const config = JSON.parse(readFileSync(configPath, "utf8"));
    expect(config).toMatchObject({ $schema: "https://opencode.ai/config.json", theme: "dark", provider: { Other: { name: "x" }, Lemonade: { npm: "@ai-sdk/openai-compatible", options: { baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "lemonade" } } } });
    // The downloaded chat models, each named "<id> (local)", with its saved ctx_size as its context
    // (else Lemonade's 40960) and a third of it as its output.
    expect(config.provider.Lemonade.models["extra.tiny-chat"]).toEqual({ name: "extra.tiny-chat (local)", limit: { context: 40960, output: 13653 } });
    await fetch(`http://127.0.0.1:${port}/v1/models/extra.tiny-chat/options`, { method: "POST", body: JSON.stringify({ ctx_size: 2048 }) });
    expect((await lemonade(["launch", "opencode", "--model", "extra.tiny-chat"], undefined, agentEnv)).code).toBe(0);
    expect(JSON.parse(readFileSync(configPath, "utf8")).provider.Lemonade.models["extra.tiny-chat"].limit).toEqual({ context: 2048, output: 682 });
    await fetch(`http://127.0.0.1:${port}/v1/models/extra.tiny-chat/options`, { method: "DELETE" });
    // A config file that is not JSON is left as it is, and the agent starts anyway.
    writeFileSync(configPath, "{ not json");
    const broken = await lemonade(["launch", "opencode", "--model", "extra.tiny-chat"], undefined, agentEnv);
    expect(broken.code).toBe(0);
    expect(broken.err).toContain(`Warning: Failed to sync opencode config: Cannot parse existing ${configPath}: `);
    expect(broken.err).toContain("Continuing with launch anyway...");
    expect(readFileSync(configPath, "utf8")).toBe("{ not json");
    writeFileSync(configPath, JSON.stringify({ theme: "dark", provider: { Other: { name: "x" } } }));

    const unknown = await lemonade(["launch", "notepad"]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain("Unsupported agent: notepad. Supported agents: claude, codex, opencode, pi.\nRun with --help for more information.");
    // Refreshed with the key given; created, with its $schema, where there was none.
    expect((await lemonade(["launch", "opencode", "--model", "extra.tiny-chat"], undefined, { ...agentEnv, LEMONADE_API_KEY: "sk-open" })).code).toBe(0);
    expect(JSON.parse(readFileSync(configPath, "utf8"))).toMatchObject({ theme: "dark", provider: { Other: { name: "x" }, Lemonade: { options: { apiKey: "sk-open" } } } });
    rmSync(configPath);
    expect((await lemonade(["launch", "opencode", "--model", "extra.tiny-chat"], undefined, agentEnv)).code).toBe(0);
    const created = JSON.parse(readFileSync(configPath, "utf8"));
    expect(created.$schema).toBe("https://opencode.ai/config.json");
    expect(Object.keys(created.provider)).toEqual(["Lemonade"]);

    // pi: its settings.json's own default provider and model are kept.
    fakeAgent("pi");
    const settings = join(home, ".pi", "agent", "settings.json");
    mkdirSync(join(settings, ".."), { recursive: true });
    writeFileSync(settings, JSON.stringify({ defaultProvider: "Mine", defaultModel: "m", theme: "light" }));
    const pi = await lemonade(["launch", "pi", "-m", "extra.tiny-chat"], undefined, agentEnv);
    expect(pi.code, pi.err).toBe(0);
    expect(readFileSync(record, "utf8")).toContain("ARGV --provider Lemonade --model extra.tiny-chat");
    expect(JSON.parse(readFileSync(settings, "utf8"))).toEqual({ defaultProvider: "Mine", defaultModel: "m", theme: "light" });
    expect(JSON.parse(readFileSync(join(home, ".pi", "agent", "models.json"), "utf8")).providers.Lemonade).toMatchObject({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: "lemonade" });
  });

  test("pull owner/repo: the recommended variant when piped, Lemonade's variant menu on a terminal; --checkpoint TYPE C; --label checked", async () => {
    const piped = await lemonade(["pull", "test-org/tiny-GGUF"]);
    expect(piped.code, piped.err).toBe(0);
    expect(piped.err).toContain("recommended variant Q4_0");
    expect(piped.out).toContain("Installed user.tiny-Q4_0");

    const tty = spawnPty([exe, "pull", "https://huggingface.co/test-org/tiny-GGUF", "--alias", "tq8"], bareEnv());
    expect(await tty.until(/Enter number, or type any variant name: $/)).toMatch(/Select a variant:\n  1\) \S+  \(1 file, /);
    tty.type("Q8_0\r");
    await tty.until(/Press enter to use the default: tiny-Q8_0\n[\s\S]*> $/);
    tty.type("\r");
    await tty.until(/Installed user\.tiny-Q8_0 \(alias tq8\)/);
    expect(await tty.exited).toBe(0);
    const aliases = await (await fetch(`http://127.0.0.1:${port}/internal/aliases`)).json();
    expect(aliases.aliases).toContainEqual(expect.objectContaining({ alias: "tq8", target: "user.tiny-Q8_0" }));

    const two = await lemonade(["pull", "user.TwoArg", "--checkpoint", "main", "test-org/tiny-GGUF:Q4_0", "--label", "reasoning"]);
    expect(two.code, two.err).toBe(0);
    const model = await (await fetch(`http://127.0.0.1:${port}/v1/models/TwoArg`)).json();
    expect(model.checkpoints.main).toBe("test-org/tiny-GGUF:Q4_0");
    expect(model.labels).toContain("reasoning");
    const label = await lemonade(["pull", "user.Bad", "--checkpoint", "test-org/tiny-GGUF:Q4_0", "--label", "fast"]);
    expect(label.code).toBe(2);
    expect(label.err).toContain("Valid labels: chat");
    expect(label.err).toContain("--help");
  });

  test("bench prints per-run figures, writes JSON and compares with an earlier run", async () => {
    const file = join(cacheDir, "bench.json");
    const r = await lemonade(["bench", "extra.tiny-chat", "--runs", "2", "--warmup", "0", "--tokens", "4", "--json", "--output", file]);
    expect(r.code, r.err).toBe(0);
    const report = JSON.parse(r.out);
    expect(report.runs).toHaveLength(2);
    for (const run of report.runs) {
      expect(run.ttft_ms).toBeGreaterThan(0);
      expect(run.generation_tokens_per_second).toBeGreaterThan(0);
      expect(run.prompt_tokens_per_second).toBeGreaterThan(0);
      expect(run.peak_memory_mb).toBeGreaterThan(1);
    }
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual(report);
    // A model named twice is measured once; one not downloaded stops the run before anything is measured.
    const twice = await lemonade(["bench", "extra.tiny-chat", "extra.tiny-chat", "--runs", "1", "--tokens", "2", "--json"]);
    expect(twice.code, twice.err).toBe(0);
    expect(JSON.parse(twice.out).runs).toHaveLength(1);
    // Several context sizes: a load and runs for each, labelled with it.
    const sizes = await lemonade(["bench", "--ctx-size", "512", "1024", "extra.tiny-chat", "--runs", "1", "--tokens", "2"]);
    expect(sizes.code, sizes.err).toBe(0);
    expect(sizes.out).toMatch(/extra\.tiny-chat \(ctx=512\)\s+1\s+[\d.]+/);
    expect(sizes.out).toMatch(/extra\.tiny-chat \(ctx=1024\): median TTFT/);
    const health = await (await fetch(`http://127.0.0.1:${port}/v1/health`)).json();
    expect(health.all_models_loaded.find((m: any) => m.model_name === "tiny-chat").recipe_options.ctx_size).toBe(1024);
    const preflight = await lemonade(["bench", "extra.tiny-chat", "user.Never-Pulled", "--runs", "1", "--tokens", "2"]);
    expect(preflight.code).toBe(1);
    expect(preflight.err).toContain("Not available: user.Never-Pulled (not registered). Pull with: lemonade pull MODEL, or pass --auto-pull");
    expect(preflight.out).toBe("");
    const compared = await lemonade(["bench", "extra.tiny-chat", "--runs", "1", "--tokens", "4", "--compare", file]);
    expect(compared.out).toMatch(/^MODEL\s+RUN\s+TTFT MS\s+PROMPT TOK\/S\s+GEN TOK\/S\s+PEAK MB/);
    expect(compared.out).toMatch(/median TTFT [\d.]+ \(was [\d.]+, [\d.]+x\) ms/);
  });

  test("bench --base-url prints the server's rate and stream tables, each figure beside its baseline and goal", async () => {
    const r = await lemonade(["bench", "--base-url", `http://127.0.0.1:${port}`, "extra.tiny-chat", "--runs", "1", "--seconds", "1"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/\/v1\/models req\/s\s+\d+ req\/s\s+\/live \d+ req\/s\s+[\d.]+\s+ratio >= 0.3\s+(met|MISSED)/);
    expect(r.out).toMatch(/time to first token p50 \(32-token stream, extra.tiny-chat\)\s+[\d.]+ ms/);
  });

  test("import takes a /v1/models entry (id as the name)", async () => {
    const file = join(cacheDir, "entry.json");
    writeFileSync(file, JSON.stringify({ id: "FromId", recipe: "llamacpp", checkpoints: { main: "test-org/tiny-GGUF:Q4_0" } }));
    const r = await lemonade(["import", file]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain("Imported user.FromId");
  });

  test("check-updates asks the hub about downloaded models", async () => {
    const r = await lemonade(["check-updates"], undefined, { HF_ENDPOINT: hub.url });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain("All downloaded models are up to date.");
  });

  test("serve takes the daemon's flags; logs says when the key is missing", async () => {
    const other = freePort();
    const extra = tempDir("lemonade-serve-models-");
    const server2 = Bun.spawn([exe, "serve", "--port", String(other), "--max-loaded-models", "3", "--ctx-size", "512", "--extra-models-dir", extra], {
      env: { ...bareEnv(), LEMONADE_API_KEY: "sk-cli" },
      stdout: "ignore",
      stderr: "ignore",
    });
    try {
      const headers = { authorization: "Bearer sk-cli" };
      let up = false;
      for (let i = 0; i < 100 && !up; i++) {
        up = await fetch(`http://127.0.0.1:${other}/live`).then((r) => r.ok, () => false);
        if (!up) await Bun.sleep(50);
      }
      const config = await (await fetch(`http://127.0.0.1:${other}/internal/config`, { headers })).json();
      expect(config).toMatchObject({ max_loaded_models: 3, ctx_size: 512, extra_models_dir: extra });
      const refused = await lemonade(["logs", "--no-follow", "--port", String(other)]);
      expect(refused.code).toBe(1);
      expect(refused.err).toContain("Error: the server refused the log stream");
      expect(refused.err).toContain("--api-key");
      const allowed = await lemonade(["logs", "--no-follow", "--port", String(other), "--api-key", "sk-cli"]);
      expect(allowed.code).toBe(0);
      expect(allowed.out).toContain("listening on");
    } finally {
      server2.kill("SIGTERM");
      await server2.exited;
    }
  });

  test("cleanup-cache lists, then frees, what downloads and builds left; downloaded models stay", async () => {
    expect((await lemonade(["pull", "user.Keep", "--checkpoint", "test-org/tiny-GGUF:Q4_0"])).code).toBe(0);
    const repo = join(cacheDir, "hf", "models--test-org--tiny-GGUF", "blobs");
    writeFileSync(join(repo, "0".repeat(64)), "orphan");
    writeFileSync(join(repo, `${"1".repeat(64)}.incomplete`), "partial");
    utimesSync(join(repo, `${"1".repeat(64)}.incomplete`), new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
    mkdirSync(join(cacheDir, "build", "llamacpp-old-999999-1"), { recursive: true });
    // The command reads the same Hugging Face cache setting as the server it cleans for.
    const hf = { HF_HUB_CACHE: join(cacheDir, "hf") };
    const dry = await lemonade(["cleanup-cache", "--dry-run"], undefined, hf);
    expect(dry.code).toBe(0);
    expect(dry.out).toMatch(/orphaned blob/);
    expect(dry.out).toMatch(/partial download/);
    expect(dry.out).toMatch(/build leftovers/);
    expect(dry.out).toContain("Would free");
    expect(existsSync(join(repo, "0".repeat(64)))).toBe(true);
    const real = await lemonade(["cleanup-cache"], undefined, hf);
    expect(real.out).toMatch(/Freed \d+ B/);
    expect(existsSync(join(repo, "0".repeat(64)))).toBe(false);
    expect(existsSync(join(cacheDir, "build", "llamacpp-old-999999-1"))).toBe(false);
    expect((await lemonade(["cleanup-cache"], undefined, hf)).out).toContain("Nothing to free");
    expect((await (await fetch(`http://127.0.0.1:${port}/v1/models/Keep`)).json()).downloaded).toBe(true);
  });
});
