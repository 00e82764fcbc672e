// The OpenAPI document passes `redocly lint` with its recommended rules (redocly.yaml turns off
// only what it gives a reason for): 0 errors and 0 warnings.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openApiDocument } from "../../http/openapi.ts";

const root = join(import.meta.dir, "..", "..");

test("redocly lint passes on the document with no error and no warning", () => {
  const dir = mkdtempSync(join(tmpdir(), "openapi-lint-"));
  try {
    const file = join(dir, "openapi.json");
    writeFileSync(file, JSON.stringify(openApiDocument("0.0.0")));
    const run = Bun.spawnSync(
      [process.execPath, join(root, "node_modules", "@redocly", "cli", "bin", "cli.js"), "lint", file, "--config", join(root, "redocly.yaml"), "--format", "json"],
      { cwd: root, env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" } },
    );
    const report = JSON.parse(run.stdout.toString());
    const problems = report.problems.map((p: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
    expect(problems).toEqual([]);
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
    expect(run.exitCode).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
