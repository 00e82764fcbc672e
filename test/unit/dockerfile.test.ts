// The Dockerfile's essentials, read from its instructions: no container builder runs here and
// hadolint is in neither npm nor Debian, so the rules that matter for this image (a few of
// hadolint's among them, by their numbers) are checked on the file itself.
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../config/config.ts";
import { tempDir } from "../helpers/temp.ts";

const root = join(import.meta.dir, "..", "..");

interface Instruction {
  op: string;
  args: string;
  stage: number;
}

/** Instructions with their continuation lines joined, comments dropped, each with its stage. */
function instructions(text: string): Instruction[] {
  const lines = text.split("\n").filter((l) => !/^\s*#/.test(l));
  const joined = lines.join("\n").replace(/\\\n/g, " ");
  let stage = -1;
  return joined
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const [, op, args] = l.match(/^(\S+)\s+(.*)$/)!;
      if (op!.toUpperCase() === "FROM") stage++;
      return { op: op!.toUpperCase(), args: args!.replace(/\s+/g, " "), stage };
    });
}

const all = instructions(readFileSync(join(root, "Dockerfile"), "utf8"));
const stages = all.filter((i) => i.op === "FROM");
const last = stages.length - 1;
const final = all.filter((i) => i.stage === last);
const of = (op: string, list = all) => list.filter((i) => i.op === op);

test("the instructions are read, stage by stage", () => {
  expect(stages.length).toBe(2);
  expect(of("RUN").length).toBeGreaterThan(2);
  expect(of("RUN").some((r) => r.args.includes("apt-get update && apt-get install"))).toBe(true);
});

test("the image is the single executable on a slim Debian base with a pinned release (DL3006, DL3007)", () => {
  expect(stages[last]!.args).toMatch(/^debian:[a-z]+-slim$/);
  for (const from of stages) expect(from.args).toMatch(/^[^:\s]+:(?!latest)\S+/);
  const [, alias] = stages[0]!.args.match(/ AS (\S+)$/i)!;
  const workdir = of("WORKDIR", all.filter((i) => i.stage === 0)).pop()!.args;
  expect(of("RUN", all.filter((i) => i.stage === 0)).map((r) => r.args)).toContain("npx bun run build");
  // What `bun run build` writes (scripts/build.ts: dist/lemonade), into PATH.
  expect(of("COPY", final).map((c) => c.args)).toContain(`--from=${alias} ${workdir}/dist/lemonade /usr/bin/lemonade`);
  expect(readFileSync(join(root, "scripts", "build.ts"), "utf8")).toContain('join(root, "dist", "lemonade")');
});

test("the build context has what the COPYs name and leaves out what was installed or built here", () => {
  for (const copy of of("COPY").filter((c) => !c.args.startsWith("--from"))) {
    const sources = copy.args.split(" ").slice(0, -1);
    for (const source of sources) expect(existsSync(join(root, source))).toBe(true);
  }
  const ignored = readFileSync(join(root, ".dockerignore"), "utf8").split("\n");
  for (const path of ["node_modules", "dist", ".cache"]) expect(ignored).toContain(path);
});

test("apt-get installs without recommends and cleans its lists in the same layer (DL3015, DL3009)", () => {
  for (const run of of("RUN").filter((r) => r.args.includes("apt-get install"))) {
    expect(run.args).toContain("--no-install-recommends");
    expect(run.args).toMatch(/apt-get install -y /);
    expect(run.args).toContain("rm -rf /var/lib/apt/lists/*");
  }
  for (const run of of("RUN")) expect(run.args).not.toMatch(/\b(sudo|apt-get (dist-)?upgrade)\b|(^|&& )cd /);
});

test("it runs as its own user, with the cache in that user's home as a volume", () => {
  const user = of("USER", final).pop()!.args;
  expect(user).not.toMatch(/^(root|0)$/);
  const home = of("RUN", final).map((r) => r.args.match(new RegExp(`useradd .*--home-dir (\\S+) .*${user}$`))?.[1]).find(Boolean)!;
  const env = Object.fromEntries([...of("ENV", final).map((e) => e.args).join(" ").matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]]));
  expect(env.HOME).toBe(home);
  expect(env.LEMONADE_CACHE_DIR!.startsWith(`${home}/`)).toBe(true);
  expect(JSON.parse(of("VOLUME", final).pop()!.args)).toEqual([home]);
  expect(all.findIndex((i) => i.op === "USER")).toBeLessThan(all.findIndex((i) => i.op === "ENTRYPOINT"));
});

test("it listens on every interface at the port it exposes, which is the server's default", () => {
  const env = Object.fromEntries([...of("ENV", final).map((e) => e.args).join(" ").matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]]));
  expect(env.LEMONADE_HOST).toBe("0.0.0.0");
  expect(of("EXPOSE", final).map((e) => e.args)).toEqual([env.LEMONADE_PORT!]);
  expect(loadConfig({ cacheDir: tempDir() }, {}).port).toBe(Number(env.LEMONADE_PORT));
});

test("entrypoint, command and health check are exec-form JSON naming the installed binary (DL3025)", () => {
  expect(JSON.parse(of("ENTRYPOINT", final).pop()!.args)).toEqual(["/usr/bin/lemonade"]);
  expect(JSON.parse(of("CMD", final).pop()!.args)).toEqual(["serve"]);
  const health = of("HEALTHCHECK", final).pop()!.args;
  expect(JSON.parse(health.slice(health.indexOf("CMD ") + 4))).toEqual(["/usr/bin/lemonade", "status"]);
});
