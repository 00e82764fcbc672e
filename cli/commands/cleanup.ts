// `cleanup-cache`: frees what downloads and builds left behind (app/cache-cleanup.ts decides).
import { loadConfig } from "../../config/config.ts";
import { CliError } from "../client.ts";
import type { Command } from "../command.ts";
import { bytes, table } from "../format.ts";

export const cleanupCache: Command = {
  name: "cleanup-cache",
  summary: "Free partial downloads, stale engine builds and orphaned model blobs",
  usage: "cleanup-cache [--dry-run]",
  help: `Lists what it would free, then frees it: partial downloads nobody has written to for a minute,
engine builds and sources of versions no longer used, scratch folders of builds that died, and
Hugging Face blobs no snapshot links to. Models that count as downloaded are never touched.
  --dry-run   Only list what would be freed`,
  options: { "dry-run": { type: "boolean" } },
  async run(input) {
    if (input.positionals.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    // Loaded on use: it reads every recipe, which no other command's start-up needs.
    const { applyCleanup, planCleanup } = await import("../../app/cache-cleanup.ts");
    const config = loadConfig({});
    const items = planCleanup(config.cacheDir, config.hfCacheDir);
    if (!items.length) {
      console.log("Nothing to free: the cache holds only what is in use.");
      return 0;
    }
    const total = items.reduce((n, i) => n + i.bytes, 0);
    console.log(table(["KIND", "SIZE", "PATH"], items.map((i) => [i.kind, bytes(i.bytes), i.path])));
    if (input.values["dry-run"]) {
      console.log(`Would free ${bytes(total)}. Run without --dry-run to free it.`);
      return 0;
    }
    console.log(`Freed ${bytes(applyCleanup(items))}.`);
    return 0;
  },
};
