// A spec-driven fuzz test: every operation of the server's own OpenAPI document gets malformed,
// wrong-typed, oversized and deeply nested input. Each must answer a 4xx in its route's error
// shape, never a 5xx, while /live, asked while each operation takes its bad input, keeps answering 200.
// A definition's other mounts (its other version prefixes and alias paths, tagged "other
// prefixes") get the malformed body and the bad query values only: http/bind.ts binds one set of
// hooks per definition (body limits, parse, validation, error style) at every path it is mounted
// at, so what the first mount answers for the rest holds at the others; each of them is still
// shown to reach those hooks.
import { afterAll, beforeAll, expect, test } from "bun:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let doc: { paths: Record<string, Record<string, Operation>> };

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
}

interface Operation {
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  parameters?: { in: string; name: string; schema?: Schema }[];
}

beforeAll(async () => {
  // Closed loopback ports for the hub and the npm registry: nothing a request starts leaves the machine.
  server = await startTestServer({ LEMONADE_MAX_BODY_MB: "1", NPM_CONFIG_REGISTRY: "http://127.0.0.1:9" }, undefined, { engines: false });
  // Schemas are `$ref`s to components.schemas: the fuzzer reads them resolved.
  doc = (await SwaggerParser.dereference(await (await fetch(`${server.url}/openapi.json`)).json())) as unknown as typeof doc;
});
afterAll(() => server.close());

type Style = "openai" | "ollama" | "anthropic" | "lemonade" | "lemonade_model" | "jsonrpc";

/** The shape a route answers errors in; Lemonade's own routes are told apart by the error schema
 * the document declares for them. */
function styleOf(path: string, op: any): Style {
  if (path === "/mcp") return "jsonrpc";
  const declared = Object.entries(op.responses ?? {}).find(([status]) => status.startsWith("4"))?.[1] as any;
  const properties = declared?.content?.["application/json"]?.schema?.properties;
  if (properties?.status) return properties.error?.type === "object" ? "lemonade_model" : "lemonade";
  if (/\/messages(\/count_tokens)?$/.test(path)) return "anthropic";
  if (path.startsWith("/api/") && !/^\/api\/v[01]\//.test(path)) return "ollama";
  return "openai";
}

function inShape(style: Style, body: any): boolean {
  switch (style) {
    case "openai":
      return typeof body?.error?.message === "string" && typeof body.error.type === "string";
    case "ollama":
      return typeof body?.error === "string";
    case "lemonade":
      return body?.status === "error" && typeof body.message === "string" && body.error === body.message && typeof body.code === "string";
    case "lemonade_model":
      return body?.status === "error" && typeof body.message === "string" && body.error?.message === body.message && typeof body.error.type === "string";
    case "anthropic":
      return body?.type === "error" && typeof body.error?.type === "string" && typeof body.error.message === "string";
    case "jsonrpc":
      // A batch answers one error per entry.
      return Array.isArray(body) ? body.every((b) => typeof b?.error?.message === "string") : typeof body?.error?.message === "string";
  }
}

const WRONG: Record<string, unknown> = { string: 12345, integer: "x", number: "x", boolean: "x", array: "x", object: "x" };

/** Made once: every operation is sent the same 2 MB. */
const OVERSIZED = JSON.stringify({ model: "x", input: "a".repeat(2 * 1024 * 1024) });
const NESTED = `{"model": ${"[".repeat(10_000)}${"]".repeat(10_000)}}`;

/** The bad bodies for an operation whose body is JSON with this schema. */
function badBodies(schema: Schema | undefined, otherMount: boolean): [string, string][] {
  const cases: [string, string][] = [
    ["malformed JSON", '{"model": '],
    ["a string", '"str"'],
    ["an array", "[1, 2]"],
    ["a number", "5"],
    ["null", "null"],
    ["nested 10,000 deep", NESTED],
    ["2 MB over a 1 MB limit", OVERSIZED],
  ];
  if (otherMount) return cases.slice(0, 1);
  for (const [name, prop] of Object.entries(schema?.properties ?? {})) {
    if (prop.type && prop.type in WRONG) cases.push([`${name} of the wrong type`, JSON.stringify({ [name]: WRONG[prop.type] })]);
  }
  return cases;
}

/** A concrete path for a templated one. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, "fuzz");

test("every operation answers bad input with a 4xx (JSON-RPC: its error, answered 200) in its error shape, and /live answers meanwhile", async () => {
  const live: number[] = [];
  const failures: string[] = [];
  let sent = 0;
  let operations = 0;
  let otherMounts = 0;
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (method === "head") continue;
      operations++;
      const url = `${server.url}${concrete(path)}`;
      const style = styleOf(path, op);
      const otherMount = ((op as { tags?: string[] }).tags ?? []).some((t) => t.endsWith(": other prefixes"));
      if (otherMount) otherMounts++;
      const requests: [string, RequestInit & { query?: string }][] = [];
      const json = op.requestBody?.content?.["application/json"];
      if (json) {
        for (const [what, body] of badBodies(json.schema, otherMount)) requests.push([what, { method: method.toUpperCase(), body, headers: { "content-type": "application/json" } }]);
      }
      for (const p of op.parameters ?? []) {
        const type = p.schema?.type;
        if (p.in === "query" && (type === "boolean" || type === "integer" || type === "number")) {
          requests.push([`query ${p.name}=not-a-${type}`, { method: method.toUpperCase(), query: `${p.name}=not-a-${type}` }]);
        }
      }
      const alive = fetch(`${server.url}/live`).then((res) => res.status);
      for (const [what, init] of requests) {
        sent++;
        const res = await fetch(init.query ? `${url}?${init.query}` : url, init);
        const text = await res.text();
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        // JSON-RPC answers its errors 200 (mcp.md); every other route with a 4xx.
        const statusOk = style === "jsonrpc" ? res.status === 200 || (res.status >= 400 && res.status < 500) : res.status >= 400 && res.status < 500;
        if (!statusOk || !inShape(style, body)) {
          failures.push(`${method.toUpperCase()} ${path} (${what}): ${res.status} ${text.slice(0, 160)}`);
        }
      }
      live.push(await alive);
    }
  }
  console.log(`fuzz: ${operations} operations (${otherMounts} other mounts), ${sent} bad requests, /live asked during each operation`);
  expect(failures).toEqual([]);
  expect(sent).toBeGreaterThan(operations);
  // The tag that tells the other mounts apart is the document's: a renamed tag would fuzz them all in full, or none.
  expect(otherMounts).toBeGreaterThan(0);
  expect(otherMounts).toBeLessThan(operations);
  expect(live).toEqual(Array(operations).fill(200));
}, 120_000);
