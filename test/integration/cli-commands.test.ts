// The `lemonade` command as users run it: the single-file build with nothing but system binaries
// on PATH, against a real server on the tiny models.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultCacheDir } from "../../config/config.ts";
import { freePort } from "../../engines/process.ts";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startFakeHub, type FakeHub } from "../helpers/fake-hub.ts";
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
async function lemonade(args: string[], stdin?: string) {
  return spawn([exe, ...args], stdin);
}

async function spawn(argv: string[], stdin?: string) {
  const p = Bun.spawn(argv, { env: bareEnv(), stdin: stdin === undefined ? "ignore" : Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

beforeAll(async () => {
  const out = join(tempDir("lemonade-build-"), "lemonade");
  const build = Bun.spawnSync([process.execPath, "build", "--compile", "cli/main.ts", "--outfile", out], { cwd: root });
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr}`);
  exe = out;

  const chat = new Uint8Array(readFileSync(join(testModelsDir(), MODELS.chat)));
  hub = startFakeHub({ "test-org/tiny-GGUF": { sha: "c".repeat(40), files: { "tiny-Q4_0.gguf": chat } } });
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
  test("list, load, status and unload against its own server", async () => {
    const list = await lemonade(["list"]);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^MODEL\s+DOWNLOADED\s+STATE/);
    expect(list.out).toContain("extra.tiny-chat");

    expect((await lemonade(["load", "extra.tiny-chat"])).out).toContain("Loaded model: extra.tiny-chat");
    const status = await lemonade(["status", "--json"]);
    const parsed = JSON.parse(status.out);
    expect(parsed.running).toBe(true);
    const loaded = parsed.all_models_loaded[0];
    expect(loaded.model_name).toBe("extra.tiny-chat");
    expect(() => process.kill(loaded.pid, 0)).not.toThrow();
    expect((await lemonade(["status"])).out).toContain(String(loaded.pid));

    const models = JSON.parse((await lemonade(["list", "--json"])).out);
    expect(models.find((m: any) => m.id === "extra.tiny-chat").loaded).toBe(true);

    expect((await lemonade(["unload", "extra.tiny-chat"])).code).toBe(0);
    expect(JSON.parse((await lemonade(["status", "--json"])).out).all_models_loaded).toEqual([]);
  });

  test("run streams a reply to a piped message and exits cleanly", async () => {
    const chats = async () => {
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const m = /lemonade_model_requests_total\{model="extra\.tiny-chat",endpoint="chat_completions",status="200"\} (\d+)/.exec(metrics);
      return Number(m?.[1] ?? 0);
    };
    const before = await chats();
    const r = await lemonade(["run", "extra.tiny-chat", "--max-tokens", "6"], "hello there\n/bye\nnot sent\n");
    expect(r.code).toBe(0);
    expect(r.out.trim().length).toBeGreaterThan(0);
    // One message went out; /bye ended the chat before the line after it.
    expect(await chats()).toBe(before + 1);
  });

  test("run downloads a registered model with progress before chatting", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/models/register`, {
      method: "POST",
      body: JSON.stringify({ model_name: "user.RunMe", recipe: "llamacpp", checkpoint: "test-org/tiny-GGUF:Q4_0" }),
    });
    expect(res.status).toBe(200);
    const r = await lemonade(["run", "user.RunMe", "--max-tokens", "3"], "hi\n");
    expect(r.code).toBe(0);
    expect(r.err).toContain("tiny-Q4_0.gguf: 100%");
    expect(r.out.trim().length).toBeGreaterThan(0);
  });

  test("run in a pseudo-terminal shows a prompt and leaves on Ctrl-D", async () => {
    const cmd = `${exe} run extra.tiny-chat --max-tokens 4`;
    const r = await spawn(["script", "-qec", cmd, "/dev/null"], "hi\n\x04");
    const out = r.out;
    expect(r.code).toBe(0);
    expect(out).toContain(">>> ");
    expect(out).toContain("Chatting with extra.tiny-chat");
  });

  test("pull shows plain progress lines when piped and a redrawn bar on a terminal", async () => {
    const piped = await lemonade(["pull", "user.Piped", "--checkpoint", "test-org/tiny-GGUF:Q4_0"]);
    expect(piped.code).toBe(0);
    expect(piped.err).toMatch(/\[1\/1\] tiny-Q4_0\.gguf: 100% \(/);
    expect(piped.err).not.toContain("\r");
    expect(piped.out).toContain("Installed user.Piped");

    const tty = await spawn(["script", "-qec", `${exe} pull user.Tty --checkpoint test-org/tiny-GGUF:Q4_0`, "/dev/null"]);
    const out = tty.out;
    expect(tty.code).toBe(0);
    expect(out).toContain("\r[1/1] tiny-Q4_0.gguf [");
    expect(out).toContain("100%");
  });

  test("alias, config, export and import", async () => {
    expect((await lemonade(["alias", "add", "my-chat", "extra.tiny-chat"])).code).toBe(0);
    expect((await lemonade(["alias", "list"])).out).toMatch(/my-chat\s+extra\.tiny-chat/);
    expect((await lemonade(["alias", "remove", "my-chat"])).code).toBe(0);

    expect((await lemonade(["config", "set", "max_loaded_models=2", "offline=false"])).code).toBe(0);
    expect((await lemonade(["config", "get", "max_loaded_models"])).out.trim()).toBe("2");
    expect((await lemonade(["config", "set", "nonsense=1"])).code).toBe(2);

    const exported = join(cacheDir, "piped.json");
    const exportedRun = await lemonade(["export", "user.Piped", "-o", exported]);
    expect(exportedRun.code, exportedRun.err).toBe(0);
    const body = JSON.parse(readFileSync(exported, "utf8"));
    // The public (bare) name, which import turns back into the user. registration.
    expect(body).toMatchObject({ model_name: "Piped", recipe: "llamacpp", checkpoints: { main: "test-org/tiny-GGUF:Q4_0" } });
    writeFileSync(exported, JSON.stringify({ ...body, model_name: "user.Imported" }));
    const imported = await lemonade(["import", exported]);
    expect(imported.code).toBe(0);
    // Listed by its public (bare) name.
    expect(JSON.parse((await lemonade(["list", "--json"])).out).some((m: any) => m.id === "Imported" && m.downloaded)).toBe(true);
  });

  test("cloud: the server as its own provider (another Lemonade), listed, keyed, cleared and removed", async () => {
    const install = await lemonade(["cloud", "install", "self", `http://127.0.0.1:${port}/v1`]);
    expect(install.code, install.err).toBe(0);
    expect(install.out).toMatch(/Installed self: [1-9]\d* model\(s\) discovered/);
    const listed = JSON.parse((await lemonade(["cloud", "list", "--json"])).out);
    expect(listed).toEqual([{ provider: "self", base_url: `http://127.0.0.1:${port}/v1`, models: expect.arrayContaining(["self.extra.tiny-chat"]) }]);
    expect((await lemonade(["cloud", "list"])).out).toMatch(/self\s+http:\/\/127\.0\.0\.1:\d+\/v1\s+[1-9]/);
    // The key goes in on standard input, so it never shows in the process list.
    const auth = await lemonade(["cloud", "auth", "self"], "sk-cli-key\n");
    expect(auth.code, auth.err).toBe(0);
    expect(auth.out).toContain("Key set for self");
    expect((await lemonade(["cloud", "clear", "self"])).out).toContain("Forgot the key of self");
    expect((await lemonade(["cloud", "uninstall", "self"])).out).toMatch(/Removed self and its [1-9]\d* model\(s\)/);
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
  });

  test("exit codes: 0 with --help on every command, 2 for usage, 1 for runtime failures with what to do", async () => {
    for (const cmd of ["serve", "run", "list", "pull", "delete", "load", "unload", "status", "backends", "alias", "config", "export", "import", "check-updates", "logs", "bench"]) {
      const r = await lemonade([cmd, "--help"]);
      expect(r.code, cmd).toBe(0);
      expect(r.out, cmd).toContain(`Usage: lemonade ${cmd}`);
    }
    expect((await lemonade(["frobnicate"])).code).toBe(2);
    expect((await lemonade(["load"])).code).toBe(2);
    expect((await lemonade(["list", "--bogus"])).code).toBe(2);
    const missing = await lemonade(["load", "No-Such-Model"]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("Model not found: No-Such-Model");
    expect(missing.err).not.toContain("\x1b[");
  });

  test("a command that needs a server starts one when none answers", async () => {
    const other = freePort();
    const r = await lemonade(["list", "--port", String(other)]);
    try {
      expect(r.code).toBe(0);
      expect(r.err).toContain(`Starting Lemonade Server on http://127.0.0.1:${other}`);
      // This server has no models; the answer says what to do next.
      expect(r.out).toContain("lemonade pull <model>");
      expect((await fetch(`http://127.0.0.1:${other}/live`)).status).toBe(200);
    } finally {
      // The server it started says its pid in its log; stop exactly that process.
      const started = readFileSync(join(cacheDir, "server.log"), "utf8").match(new RegExp(`listening on http://127\\.0\\.0\\.1:${other} \\(pid (\\d+)\\)`));
      if (started) process.kill(Number(started[1]), "SIGTERM");
    }
  });

  test("logs prints the server's retained log", async () => {
    const r = await lemonade(["logs", "--no-follow"]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("listening on");
  });
});
