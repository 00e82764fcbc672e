// Lookups shared within one listing build (lib/build-scope.ts): answered once per build, never
// carried into the next one, and the Hugging Face cache's listing of repositories that a build
// takes once answers as looking at each repository would.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "bun:test";
import { building, memoInBuild, withinBuild } from "../../lib/build-scope.ts";
import { findCachedFile, repoCacheDir } from "../../models/hf-cache.ts";
import { tempDir } from "../helpers/server.ts";

test("an answer is worked out once per build and again in the next; outside a build, at every call", () => {
  const table = Symbol("table");
  let computed = 0;
  const ask = (key: string) => memoInBuild(table, key, () => `${key}:${++computed}`);
  expect(building()).toBe(false);
  expect([ask("a"), ask("a")]).toEqual(["a:1", "a:2"]);
  const first = withinBuild(() => {
    expect(building()).toBe(true);
    // A nested build shares the outer one's answers.
    return [ask("a"), ask("b"), ask("a"), withinBuild(() => ask("b"))];
  });
  expect(first).toEqual(["a:3", "b:4", "a:3", "b:4"]);
  expect(withinBuild(() => ask("a"))).toBe("a:5");
});

test("answers are per table, and undefined is an answer like any other", () => {
  let computed = 0;
  const [one, two] = [Symbol("one"), Symbol("two")];
  withinBuild(() => {
    expect(memoInBuild(one, "k", () => (computed++, undefined))).toBeUndefined();
    expect(memoInBuild(one, "k", () => (computed++, "late"))).toBeUndefined();
    expect(memoInBuild(two, "k", () => (computed++, "two"))).toBe("two");
  });
  expect(computed).toBe(2);
});

test("a build that throws leaves no scope behind", () => {
  expect(() =>
    withinBuild(() => {
      throw new Error("broken build");
    }),
  ).toThrow("broken build");
  expect(building()).toBe(false);
});

test("within a build, a checkpoint is found in the Hugging Face cache as it is outside one; a repository downloaded after a build is seen by the next", () => {
  const hub = tempDir();
  try {
    const put = (repo: string) => {
      const snap = join(repoCacheDir(hub, repo), "snapshots", "abc");
      mkdirSync(snap, { recursive: true });
      mkdirSync(join(repoCacheDir(hub, repo), "refs"), { recursive: true });
      writeFileSync(join(repoCacheDir(hub, repo), "refs", "main"), "abc");
      writeFileSync(join(snap, "model-Q4_0.gguf"), "GGUF");
      return join(snap, "model-Q4_0.gguf");
    };
    const first = put("org/first-GGUF");
    const look = () => [findCachedFile(hub, "org/first-GGUF:Q4_0"), findCachedFile(hub, "org/second-GGUF:Q4_0"), findCachedFile(hub, "org/missing-GGUF:Q4_0")];
    expect(withinBuild(look)).toEqual([first, null, null]);
    const second = put("org/second-GGUF");
    expect(withinBuild(look)).toEqual([first, second, null]);
    expect(look()).toEqual([first, second, null]);
    // A hub folder that does not exist holds nothing, in a build or not.
    const gone = join(hub, "not-there");
    expect(withinBuild(() => findCachedFile(gone, "org/first-GGUF:Q4_0"))).toBeNull();
  } finally {
    rmSync(hub, { recursive: true, force: true });
  }
});
