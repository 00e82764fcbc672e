// The extra-models folder's watcher: begun by the first scan rather than at start-up (an idle
// server keeps no watcher thread), and moved, not added to, when the folder setting changes.
// A watched change shows as lib/generation.ts's count moving.
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { generation } from "../../lib/generation.ts";
import { AliasStore } from "../../models/aliases.ts";
import { Catalog } from "../../models/catalog.ts";
import { tempDir } from "../helpers/server.ts";

function catalogOf(extraModelsDir: string): Catalog {
  const cacheDir = tempDir();
  return new Catalog({ cacheDir, hfCacheDir: join(cacheDir, "hf"), extraModelsDir, isRecipeSupported: () => true }, new AliasStore(cacheDir));
}

/** Whether the count moves within `ms` of writing `file` (a watcher reports within milliseconds). */
async function countMovesOn(file: string, ms = 1500): Promise<boolean> {
  const before = generation();
  writeFileSync(file, "not a model");
  for (let waited = 0; waited < ms; waited += 25) {
    if (generation() !== before) return true;
    await Bun.sleep(25);
  }
  return false;
}

test("the extra folder is watched from the first listing on, not from the catalog's making", async () => {
  const extra = tempDir("lemonade-extra-watch-");
  const catalog = catalogOf(extra);
  expect(await countMovesOn(join(extra, "before.txt"), 500)).toBe(false);
  catalog.all();
  expect(await countMovesOn(join(extra, "after.txt"))).toBe(true);
});

test("another extra folder is watched instead of the first, from the next listing on", async () => {
  const first = tempDir("lemonade-extra-first-");
  const second = tempDir("lemonade-extra-second-");
  const catalog = catalogOf(first);
  catalog.all();
  expect(await countMovesOn(join(first, "a.txt"))).toBe(true);
  catalog.setExtraModelsDir(second);
  catalog.all();
  expect(await countMovesOn(join(first, "b.txt"), 500)).toBe(false);
  expect(await countMovesOn(join(second, "c.txt"))).toBe(true);
});
