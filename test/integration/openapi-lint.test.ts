// The OpenAPI document as generators and linters take it: `redocly lint` with its recommended
// rules (redocly.yaml turns off only what it gives a reason for) finds nothing; bodies are named
// schemas, no object schema is written out twice, and operationIds are URL-safe and unique.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openApiDocument } from "../../http/openapi.ts";
import { endpoints } from "../../spec/index.ts";

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

type Doc = { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, unknown> } };

test("bodies and events are named schemas, and no object schema is written out twice", () => {
  const doc = openApiDocument("0.0.0") as unknown as Doc;
  for (const name of ["ChatCompletionsRequest", "ChatCompletion", "ChatCompletionChunk", "LoadRequest", "HealthResponse", "LemonadeError", "OllamaChatResponse", "AnthropicStreamEvent"]) {
    expect(doc.components.schemas[name], name).toBeDefined();
  }
  const primary = endpoints.filter((d) => d.method !== "WS").map((def) => [def, Object.values(doc.paths).find((item) => item[def.method.toLowerCase()]?.operationId === def.id)![def.method.toLowerCase()]] as const);
  for (const [def, op] of primary) {
    if (def.body) expect(op.requestBody.content["application/json"].schema.$ref, def.id).toStartWith("#/components/schemas/");
    if (def.response && !def.contentType) expect(op.responses["200"].content["application/json"].schema.$ref, def.id).toStartWith("#/components/schemas/");
    if (def.stream) expect(op.responses["200"].content[def.stream.contentType].schema.$ref, def.id).toStartWith("#/components/schemas/");
  }
  // Every object with properties, inline in a named schema or an operation (each once, at its first mount).
  const seen = new Map<string, number>();
  const visit = (node: unknown, top = false): void => {
    if (Array.isArray(node)) return node.forEach((n) => visit(n));
    if (typeof node !== "object" || node === null) return;
    const o = node as Record<string, unknown>;
    if (!top && o.type === "object" && o.properties) seen.set(JSON.stringify(o), (seen.get(JSON.stringify(o)) ?? 0) + 1);
    for (const value of Object.values(o)) visit(value);
  };
  for (const schema of Object.values(doc.components.schemas)) visit(schema, true);
  for (const [, op] of primary) visit([op.requestBody, op.responses]);
  expect([...seen].filter(([, n]) => n > 1).map(([json]) => json.slice(0, 120))).toEqual([]);
});

test("operationIds are URL-safe and unique", () => {
  const doc = openApiDocument("0.0.0") as unknown as Doc;
  const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId as string));
  expect(ids.filter((id) => !/^[A-Za-z0-9._~-]+$/.test(id))).toEqual([]);
  expect(new Set(ids).size).toBe(ids.length);
});
