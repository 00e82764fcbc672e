// What a killed server leaves behind is cleaned by the next one: engines it spawned but had not
// yet written a pid for (found by the token in their environment), and its temp files.
import { expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EngineRegistry } from "../../engines/orphans.ts";
import { ENGINE_TOKEN_VAR, isAlive } from "../../engines/process.ts";
import { removeStaleTemps } from "../../lib/json-file.ts";
import { tempDir } from "../helpers/server.ts";

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const p = Bun.spawn(["true"]);
  await p.exited;
  return p.pid;
}

test("an engine spawned just before its server was killed (no pid recorded yet) is found by its token and stopped", async () => {
  const cacheDir = tempDir();
  mkdirSync(cacheDir, { recursive: true });
  const token = crypto.randomUUID();
  const orphan = Bun.spawn(["sleep", "30"], { env: { ...process.env, [ENGINE_TOKEN_VAR]: token } });
  const bystander = Bun.spawn(["sleep", "30"]);
  const server = await deadPid();
  writeFileSync(join(cacheDir, "engines.json"), JSON.stringify([{ server, pid: null, binary: "/usr/bin/sleep", token }]));
  try {
    expect(new EngineRegistry(cacheDir).reapOrphans()).toEqual([orphan.pid]);
    await orphan.exited;
    expect(isAlive(bystander.pid)).toBe(true);
    expect(await Bun.file(join(cacheDir, "engines.json")).json()).toEqual([]);
  } finally {
    orphan.kill();
    bystander.kill();
  }
});

test("a live server's records are kept, and a recycled pid without the token is left alone", async () => {
  const cacheDir = tempDir();
  mkdirSync(cacheDir, { recursive: true });
  const other = Bun.spawn(["sleep", "30"]);
  const rows = [
    { server: process.pid, pid: 1, binary: "x", token: "mine" },
    { server: await deadPid(), pid: other.pid, binary: "/usr/bin/sleep", token: "not-in-its-environment" },
  ];
  writeFileSync(join(cacheDir, "engines.json"), JSON.stringify(rows));
  try {
    expect(new EngineRegistry(cacheDir).reapOrphans()).toEqual([]);
    expect(isAlive(other.pid)).toBe(true);
    expect(await Bun.file(join(cacheDir, "engines.json")).json()).toEqual([rows[0]]);
  } finally {
    other.kill();
  }
});

test("temp files of a killed writer are removed at start-up; a live writer's are kept", async () => {
  const dir = tempDir();
  mkdirSync(dir, { recursive: true });
  const dead = `.engines.json.${await deadPid()}.3.tmp`;
  const live = `.config.json.${process.pid}.1.tmp`;
  for (const f of [dead, live, "config.json"]) writeFileSync(join(dir, f), "{}");
  expect(removeStaleTemps(dir)).toEqual([dead]);
  expect(existsSync(join(dir, live))).toBe(true);
  expect(existsSync(join(dir, "config.json"))).toBe(true);
});
