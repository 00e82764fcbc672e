// `bun run package:deb [--binary PATH] [--out DIR]`: the lemonade-server .deb, built with Debian's
// dpkg-deb: the single executable as /usr/bin/lemonade, a systemd unit running it as the `lemonade`
// system user with the cache in that user's home (/var/lib/lemonade), and the maintainer scripts
// (packaging/deb/) that make the user and enable the unit. Without --binary it first builds the
// executable (`bun run build`, dist/lemonade). Prints the .deb's path on its last line.
import { chmodSync, copyFileSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { VERSION } from "../lib/version.ts";

const PACKAGE = "lemonade-server";
const UNIT = "lemonade-server.service";

const root = join(import.meta.dir, "..");
const { values } = parseArgs({ options: { binary: { type: "string" }, out: { type: "string" } } });
const out = resolve(values.out ?? join(root, "dist"));

function run(argv: string[]): string {
  const p = Bun.spawnSync(argv, { cwd: root, stdout: "pipe", stderr: "inherit" });
  if (p.exitCode !== 0) throw new Error(`${argv.join(" ")} failed (exit ${p.exitCode})`);
  return p.stdout.toString().trim();
}

if (!Bun.which("dpkg-deb")) {
  console.error("error: dpkg-deb is missing; it comes with Debian's dpkg (apt-get install dpkg dpkg-dev)");
  process.exit(1);
}
const binary = values.binary ? resolve(values.binary) : join(root, "dist", "lemonade");
if (!values.binary) {
  const build = Bun.spawnSync([process.execPath, join(root, "scripts", "build.ts"), binary], { cwd: root, stdout: "inherit", stderr: "inherit" });
  if (build.exitCode !== 0) process.exit(build.exitCode ?? 1);
}
const arch = run(["dpkg", "--print-architecture"]);

const stage = join(root, ".cache", "deb", `${PACKAGE}_${VERSION}_${arch}`);
rmSync(stage, { recursive: true, force: true });
const place = (from: string, to: string, mode: number) => {
  const path = join(stage, to);
  mkdirSync(join(path, ".."), { recursive: true });
  copyFileSync(from, path);
  chmodSync(path, mode);
};
place(binary, "usr/bin/lemonade", 0o755);
// /lib, where Debian 12's deb-systemd-helper links units from (the same folder where /usr is merged).
place(join(root, "packaging", "deb", UNIT), `lib/systemd/system/${UNIT}`, 0o644);
for (const script of ["postinst", "prerm", "postrm"]) place(join(root, "packaging", "deb", script), `DEBIAN/${script}`, 0o755);
writeFileSync(
  join(stage, "DEBIAN", "control"),
  [
    `Package: ${PACKAGE}`,
    `Version: ${VERSION}`,
    `Architecture: ${arch}`,
    "Maintainer: Lemonade Server (Bun) maintainers <lemonade@localhost>",
    `Installed-Size: ${Math.ceil(statSync(binary).size / 1024)}`,
    "Depends: adduser, init-system-helpers",
    "Recommends: ffmpeg, espeak-ng, ca-certificates, openssl",
    "Section: net",
    "Priority: optional",
    "Description: local AI server speaking the OpenAI, Ollama, Anthropic and MCP APIs",
    " Lemonade Server runs models on native engines (llama.cpp, whisper.cpp, ...) as child",
    " processes and serves them on http://localhost:13305. The lemonade-server service runs",
    " it as the lemonade user, with its cache in /var/lib/lemonade.",
    "",
  ].join("\n"),
);
mkdirSync(out, { recursive: true });
const deb = join(out, `${PACKAGE}_${VERSION}_${arch}.deb`);
// Root-owned files whoever builds it; the maintainer scripts make the service's user.
run(["dpkg-deb", "--root-owner-group", "--build", stage, deb]);
rmSync(stage, { recursive: true, force: true });
console.log(deb);
