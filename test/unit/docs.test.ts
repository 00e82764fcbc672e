import { expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { endpoints } from "../../spec/index.ts";
import { renderEndpoint, updateDocs } from "../../scripts/gen-docs.ts";

const root = join(import.meta.dir, "..", "..");
/** What the contract pages look like, kept in the project (test/fixtures/contract-tables.json). */
const contract = JSON.parse(readFileSync(join(import.meta.dir, "..", "fixtures", "contract-tables.json"), "utf8")) as {
  headers: string[];
  blocks: Record<string, string[]>;
};

test("bun run docs:check passes on the committed docs, and fails on a stale block", () => {
  const run = Bun.spawnSync([process.execPath, "run", "docs:check"], { cwd: root });
  expect(run.stderr.toString()).not.toContain("out of date");
  expect(run.exitCode).toBe(0);

  const dir = mkdtempSync(join(tmpdir(), "docs-"));
  cpSync(join(root, "generated-docs"), dir, { recursive: true });
  const page = join(dir, "lemonade.md");
  writeFileSync(page, readFileSync(page, "utf8").replace("Lists every active model alias.", "Lists aliases."));
  const stale = Bun.spawnSync([process.execPath, "scripts/gen-docs.ts", "--dir", dir, "--check"], { cwd: root });
  expect(stale.exitCode).toBe(1);
  expect(stale.stderr.toString()).toContain("lemonade.md: generated blocks are stale");
  // Written again (in this process: the command's exit codes are the two above), it checks clean.
  expect(updateDocs(false, dir).problems).toEqual(["lemonade.md: generated blocks are stale"]);
  expect(updateDocs(true, dir).problems).toEqual([]);
  expect(readFileSync(page, "utf8")).toContain("Lists every active model alias.");
});

test("every endpoint has its block in generated-docs, equal to what the spec renders", () => {
  for (const def of endpoints) {
    const page = readFileSync(join(root, "generated-docs", `${def.page}.md`), "utf8");
    const block = new RegExp(`<!-- BEGIN GENERATED: ${def.id.replace(".", "\\.")} -->\\n([\\s\\S]*?)\\n<!-- END GENERATED: ${def.id.replace(".", "\\.")} -->`).exec(page);
    expect(block?.[1], def.id).toBe(renderEndpoint(def));
  }
});

/** The header rows of every markdown table in a text. */
function tableHeaders(text: string): Set<string> {
  return new Set(text.split("\n").filter((l, i, all) => l.startsWith("| ") && all[i + 1]?.startsWith("|--")));
}

test("generated tables have the same shapes as the contract's", () => {
  const shapes = new Set(contract.headers);
  for (const def of endpoints) {
    for (const header of tableHeaders(renderEndpoint(def))) expect(shapes.has(header), `${def.id}: ${header}`).toBe(true);
  }
  const ollama = readFileSync(join(root, "generated-docs", "ollama.md"), "utf8");
  const summary = [...tableHeaders(ollama)][0];
  expect(summary).toBe("| Method | Endpoint | Status | Description |");
});

test("a block the contract also has renders its heading, badge and error rows the same way", () => {
  for (const [id, theirs] of Object.entries(contract.blocks)) {
    const ours = renderEndpoint(endpoints.find((d) => d.id === id)!);
    const lines = (s: string) => s.split("\n").filter((l) => l.startsWith("## ") || l.startsWith("<sub>") || l.startsWith("| "));
    expect(lines(ours)).toEqual(theirs);
  }
});
