import { expect, test } from "bun:test";
import { join } from "node:path";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { tempDir } from "../helpers/server.ts";
import { freePort, isAlive } from "../../engines/process.ts";
import { linkEngines, MODELS, testModelsDir } from "../helpers/engines.ts";

const root = join(import.meta.dir, "..", "..");
const cli = (args: string[], env: Record<string, string> = {}) =>
  Bun.spawn([process.execPath, "cli/main.ts", ...args], {
    cwd: root,
    env: { ...process.env, LEMONADE_CACHE_DIR: tempDir(), HF_ENDPOINT: "http://127.0.0.1:9", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });

async function waitForLive(url: string, child: ReturnType<typeof cli>): Promise<void> {
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}: ${await new Response(child.stderr).text()}`);
    try {
      if ((await fetch(`${url}/live`)).ok) return;
    } catch {}
    await Bun.sleep(50);
  }
  throw new Error("server did not answer /live within 15 s");
}

test("`lemonade serve` listens on loopback, answers /live, and exits 0 on SIGTERM", async () => {
  const port = freePort();
  const child = cli(["serve", "--port", String(port)]);
  try {
    await waitForLive(`http://127.0.0.1:${port}`, child);
    const health = await (await fetch(`http://127.0.0.1:${port}/v1/health`)).json();
    expect(health.status).toBe("ok");
  } finally {
    child.kill("SIGTERM");
  }
  expect(await child.exited).toBe(0);
  expect(await new Response(child.stdout).text()).toContain(`listening on http://127.0.0.1:${port}`);
});

test("LEMONADE_PORT picks the port when no flag is given", async () => {
  const port = freePort();
  const child = cli(["serve"], { LEMONADE_PORT: String(port) });
  try {
    await waitForLive(`http://127.0.0.1:${port}`, child);
  } finally {
    child.kill("SIGTERM");
  }
  expect(await child.exited).toBe(0);
});

test("usage errors exit 2 with a message, --help exits 0", async () => {
  const help = cli(["serve", "--help"]);
  expect(await help.exited).toBe(0);
  expect(await new Response(help.stdout).text()).toContain("--port");

  for (const args of [["bogus"], ["serve", "--port", "http"], ["serve", "--nope"], []]) {
    const child = cli(args);
    expect(await child.exited).toBe(2);
  }
  const bogus = cli(["bogus"]);
  await bogus.exited;
  expect(await new Response(bogus.stderr).text()).toContain("unknown command 'bogus'");
});

test("a port in use is a runtime failure (exit 1) with a clear message", async () => {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  try {
    const child = cli(["serve", "--port", String(s.port)]);
    expect(await child.exited).toBe(1);
    expect(await new Response(child.stderr).text()).toMatch(/in use|EADDRINUSE/i);
  } finally {
    s.stop(true);
  }
});

test("engines left by a server killed outright are stopped by the next server on the same cache", async () => {
  const cacheDir = tempDir();
  linkEngines(cacheDir);
  const extra = join(cacheDir, "extra");
  mkdirSync(extra);
  copyFileSync(join(testModelsDir(), MODELS.chat), join(extra, MODELS.chat));
  const env = { LEMONADE_CACHE_DIR: cacheDir, LEMONADE_EXTRA_MODELS_DIR: extra };

  const port = freePort();
  const first = cli(["serve", "--port", String(port)], env);
  await waitForLive(`http://127.0.0.1:${port}`, first);
  await fetch(`http://127.0.0.1:${port}/v1/load`, { method: "POST", body: JSON.stringify({ model_name: "extra.tiny-chat" }) });
  const enginePid = (await (await fetch(`http://127.0.0.1:${port}/v1/health`)).json()).all_models_loaded[0].pid;
  first.kill("SIGKILL");
  await first.exited;
  expect(isAlive(enginePid)).toBe(true);

  const port2 = freePort();
  const second = cli(["serve", "--port", String(port2)], env);
  try {
    await waitForLive(`http://127.0.0.1:${port2}`, second);
    const deadline = Date.now() + 5000;
    while (isAlive(enginePid) && Date.now() < deadline) await Bun.sleep(20);
    expect(isAlive(enginePid)).toBe(false);
  } finally {
    second.kill("SIGTERM");
    await second.exited;
  }
  expect(await new Response(second.stderr).text()).toContain(`left running by a server that was killed (pids ${enginePid})`);
});

test("a second server on a busy port exits 1 with Lemonade's 'Port N on HOST is already in use', and the first keeps serving", async () => {
  const port = freePort();
  const cache = tempDir();
  const first = cli(["serve", "--port", String(port)], { LEMONADE_CACHE_DIR: cache });
  try {
    await waitForLive(`http://127.0.0.1:${port}`, first);
    const second = cli(["serve", "--port", String(port)], { LEMONADE_CACHE_DIR: cache });
    expect(await second.exited).toBe(1);
    expect(await new Response(second.stderr).text()).toContain(`Port ${port} on 127.0.0.1 is already in use`);
    expect(await new Response(second.stdout).text()).not.toContain("listening");
    for (let i = 0; i < 5; i++) expect((await fetch(`http://127.0.0.1:${port}/live`)).status).toBe(200);
  } finally {
    first.kill("SIGTERM");
  }
  expect(await first.exited).toBe(0);
});

/** A loopback npm registry serving node-llama-cpp's tarball, whose llama.cpp source is a CMake
 * project that configures for a long time (a `sleep` marked by its unusual duration). */
function slowBuildRegistry(marker: string): { url: string; stop(): void } {
  const work = tempDir("lemonade-slow-build-");
  const src = join(work, "src");
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, "CMakeLists.txt"), `cmake_minimum_required(VERSION 3.10)\nproject(slow NONE)\nexecute_process(COMMAND sleep ${marker})\n`);
  const git = (...args: string[]) => expect(Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: src }).exitCode).toBe(0);
  git("init", "-q");
  git("add", ".");
  git("commit", "-qm", "slow");
  mkdirSync(join(work, "package", "llama"), { recursive: true });
  git("bundle", "create", join(work, "package", "llama", "gitRelease.bundle"), "--all");
  expect(Bun.spawnSync(["tar", "czf", join(work, "pkg.tgz"), "package"], { cwd: work }).exitCode).toBe(0);
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(Bun.file(join(work, "pkg.tgz"))) });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

const processesWith = (marker: string) =>
  new TextDecoder()
    .decode(Bun.spawnSync(["pgrep", "-f", `sleep ${marker}`]).stdout)
    .split("\n")
    .filter(Boolean);

test("SIGTERM during /v1/install stops the build it started, compilers and all", async () => {
  const marker = "987.654";
  const registry = slowBuildRegistry(marker);
  const port = freePort();
  const child = cli(["serve", "--port", String(port)], { NPM_CONFIG_REGISTRY: registry.url });
  try {
    await waitForLive(`http://127.0.0.1:${port}`, child);
    void fetch(`http://127.0.0.1:${port}/v1/install`, { method: "POST", body: JSON.stringify({ recipe: "llamacpp", backend: "cpu" }) }).catch(() => {});
    const deadline = Date.now() + 20_000;
    while (!processesWith(marker).length && Date.now() < deadline) await Bun.sleep(100);
    expect(processesWith(marker).length).toBeGreaterThan(0);
    child.kill("SIGTERM");
    expect(await child.exited).toBe(0);
    await Bun.sleep(200);
    expect(processesWith(marker)).toEqual([]);
  } finally {
    child.kill("SIGKILL");
    for (const pid of processesWith(marker)) process.kill(Number(pid), "SIGKILL");
    registry.stop();
  }
});

test("`lemonade config set ctx_size=-1` (Lemonade's default, automatic) and then a start works", async () => {
  const cache = tempDir();
  const set = cli(["config", "set", "ctx_size=-1"], { LEMONADE_CACHE_DIR: cache });
  expect(await set.exited).toBe(0);
  const port = freePort();
  const child = cli(["serve", "--port", String(port)], { LEMONADE_CACHE_DIR: cache });
  try {
    await waitForLive(`http://127.0.0.1:${port}`, child);
    const config = await (await fetch(`http://127.0.0.1:${port}/internal/config`)).json();
    expect(config.ctx_size).toBe(-1);
  } finally {
    child.kill("SIGTERM");
  }
  expect(await child.exited).toBe(0);
});
