// The .deb as a user gets it: `bun run package:deb` builds the executable and the package with
// dpkg-deb, `dpkg -i` installs it (lemonade on PATH, the service's user with its home, the systemd
// unit), the installed binary answers --version and serves as the service would run it, and
// `dpkg -r` / `--purge` take it all away again. Needs root and Debian's dpkg (CI has both).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { VERSION } from "../../lib/version.ts";
import { tempDir } from "../helpers/temp.ts";

const root = join(import.meta.dir, "..", "..");
const PACKAGE = "lemonade-server";
const UNIT = "/lib/systemd/system/lemonade-server.service";
const HOME = "/var/lib/lemonade";
const ENABLED = "/etc/systemd/system/multi-user.target.wants/lemonade-server.service";

const skip = process.getuid?.() !== 0 ? "not running as root" : !Bun.which("dpkg") || !Bun.which("dpkg-deb") ? "Debian's dpkg is absent" : null;
if (skip) console.warn(`skipping the .deb test: ${skip} (dpkg -i needs both)`);

function sh(argv: string[], env: Record<string, string> = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" }) {
  const p = Bun.spawnSync(argv, { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

const installed = () => sh(["dpkg-query", "-W", "-f", "${Status}", PACKAGE]).out.includes("install ok installed");

describe.skipIf(skip !== null)("the lemonade-server .deb", () => {
  let deb: string;

  beforeAll(() => {
    const out = tempDir("lemonade-deb-");
    const built = Bun.spawnSync([process.execPath, "run", "package:deb", "--out", out], { cwd: root, stdout: "pipe", stderr: "pipe" });
    if (built.exitCode !== 0) throw new Error(`package:deb failed: ${built.stderr}`);
    deb = built.stdout.toString().trim().split("\n").pop()!;
  }, 600_000);

  afterAll(() => {
    if (installed()) sh(["dpkg", "--purge", PACKAGE]);
  });

  test("is built by dpkg-deb with the executable, the unit and the maintainer scripts", () => {
    expect(deb).toEndWith(`${PACKAGE}_${VERSION}_${sh(["dpkg", "--print-architecture"]).out.trim()}.deb`);
    const fields = sh(["dpkg-deb", "-f", deb, "Package", "Version", "Depends"]).out;
    expect(fields).toContain(`Package: ${PACKAGE}`);
    expect(fields).toContain(`Version: ${VERSION}`);
    expect(fields).toContain("Depends: adduser");
    const files = sh(["dpkg-deb", "-c", deb]).out;
    expect(files).toMatch(/^-rwxr-xr-x root\/root .* \.\/usr\/bin\/lemonade$/m);
    expect(files).toMatch(/^-rw-r--r-- root\/root .* \.\/lib\/systemd\/system\/lemonade-server\.service$/m);
    expect(sh(["dpkg-deb", "-I", deb]).out).toMatch(/postinst[\s\S]*postrm[\s\S]*prerm/);
  });

  test("dpkg -i puts lemonade on PATH, makes the service's user with its home, and installs the unit", () => {
    const install = sh(["dpkg", "-i", deb]);
    expect(install.err).not.toMatch(/error|warning/i);
    expect(install.code).toBe(0);
    expect(sh(["sh", "-c", "command -v lemonade"]).out.trim()).toBe("/usr/bin/lemonade");
    const version = sh(["lemonade", "--version"]);
    expect(version.code).toBe(0);
    expect(version.out.trim()).toBe(VERSION);
    const user = sh(["getent", "passwd", "lemonade"]).out.split(":");
    expect(user[5]).toBe(HOME);
    expect(statSync(HOME).uid).toBe(Number(user[2]));
    const unit = readFileSync(UNIT, "utf8");
    expect(unit).toContain("User=lemonade");
    expect(unit).toContain(`Environment=LEMONADE_CACHE_DIR=${HOME}/.cache/lemonade`);
    expect(unit).toContain("ExecStart=/usr/bin/lemonade serve");
    // Enabled for boot, as Debian enables a service it installs.
    expect(existsSync(ENABLED)).toBe(true);
    if (Bun.which("systemd-analyze")) {
      const verify = sh(["systemd-analyze", "verify", UNIT]);
      expect(verify.err).toBe("");
      expect(verify.code).toBe(0);
    }
  });

  test("the installed binary serves as the unit runs it: the service's user, the cache in its home", async () => {
    // The unit's environment, under the unit's user.
    const server = Bun.spawn(
      ["runuser", "-u", "lemonade", "--", "env", "-i", `HOME=${HOME}`, `LEMONADE_CACHE_DIR=${HOME}/.cache/lemonade`, "PATH=/usr/bin:/bin", "/usr/bin/lemonade", "serve", "--port", "0", "--ready-json"],
      { stdout: "pipe", stderr: "pipe" },
    );
    const reader = server.stdout.getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`serve exited: ${await new Response(server.stderr).text()}`);
      text += new TextDecoder().decode(value);
    }
    const ready = JSON.parse(text);
    expect(ready).toMatchObject({ url: `http://127.0.0.1:${ready.port}`, api_key: null });
    expect((await fetch(`${ready.url}/live`)).status).toBe(200);
    expect((await (await fetch(`${ready.url}/v1/health`)).json()).version).toBe(VERSION);
    expect(sh(["ps", "-o", "user=,args=", "-p", String(ready.pid)]).out).toMatch(/^lemonade +\/usr\/bin\/lemonade serve/);
    process.kill(ready.pid, "SIGTERM");
    expect(await server.exited).toBe(0);
    expect(await new Response(server.stderr).text()).toContain(`Cache directory: ${HOME}/.cache/lemonade`);
  });

  test("dpkg -r removes the binary and the unit; --purge the user and its home", () => {
    expect(sh(["dpkg", "-r", PACKAGE]).code).toBe(0);
    expect(existsSync("/usr/bin/lemonade")).toBe(false);
    expect(existsSync(UNIT)).toBe(false);
    expect(sh(["dpkg", "--purge", PACKAGE]).code).toBe(0);
    expect(sh(["getent", "passwd", "lemonade"]).code).not.toBe(0);
    expect(existsSync(HOME)).toBe(false);
    // Neither the boot link nor the mask that `remove` leaves outlives the purge.
    expect(existsSync(ENABLED)).toBe(false);
    expect(existsSync("/etc/systemd/system/lemonade-server.service")).toBe(false);
  });
});
