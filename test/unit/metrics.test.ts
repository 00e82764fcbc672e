import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A strict reader of the Prometheus text format (0.0.4): every line is a comment or a sample,
 * every sample's family is declared by HELP and TYPE before it, and every value is finite. */
function parsePrometheus(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const helped = new Set<string>();
  const samples: Sample[] = [];
  const sampleRe = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    let m: RegExpExecArray | null;
    if ((m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$/.exec(line))) helped.add(m[1]!);
    else if ((m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line))) types.set(m[1]!, m[2]!);
    else if ((m = sampleRe.exec(line))) {
      const [, name, rawLabels, rawValue] = m;
      const family = [...types.keys()].find((f) => name === f || name!.startsWith(f + "_"));
      if (!family || !helped.has(family)) throw new Error(`sample without HELP/TYPE: ${line}`);
      const labels: Record<string, string> = {};
      for (const l of (rawLabels ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
      const value = Number(rawValue);
      if (!Number.isFinite(value)) throw new Error(`non-finite sample: ${line}`);
      samples.push({ name: name!, labels, value });
    } else throw new Error(`not Prometheus text: ${line}`);
  }
  return { types, samples };
}

test("/metrics is Prometheus text with the server's families", async () => {
  const res = await fetch(`${server.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  const { types, samples } = parsePrometheus(await res.text());
  expect(types.get("lemonade_server_up")).toBe("gauge");
  expect(samples.find((s) => s.name === "lemonade_server_up")?.value).toBe(1);
  const info = samples.find((s) => s.name === "lemonade_server_info");
  expect(info?.labels.version).toBe(server.ctx.version);
  expect(samples.find((s) => s.name === "lemonade_process_resident_memory_bytes")!.value).toBeGreaterThan(1e6);
  expect(samples.find((s) => s.name === "lemonade_loaded_models")?.value).toBe(0);
  expect(samples.find((s) => s.name === "lemonade_max_loaded_models")?.value).toBe(server.ctx.config.maxLoadedModels);
});

test("request counters count requests by route and status", async () => {
  const count = async (route: string, status: string) => {
    const { samples } = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text());
    return (
      samples.find(
        (s) => s.name === "lemonade_http_requests_total" && s.labels.route === route && s.labels.status === status,
      )?.value ?? 0
    );
  };
  const before = await count("/v1/health", "200");
  const beforeBad = await count("/internal/aliases", "400");
  for (let i = 0; i < 3; i++) await fetch(`${server.url}/v1/health`);
  await fetch(`${server.url}/internal/aliases`, { method: "POST", body: "{" });
  expect(await count("/v1/health", "200")).toBe(before + 3);
  expect(await count("/internal/aliases", "400")).toBe(beforeBad + 1);
});

test("a loaded model has its lemonade_model_info and lemonade_model_loaded samples, labelled as Lemonade labels them; the cache and routing totals are there", async () => {
  const fake = await startFakeServer(["info"]);
  try {
    const scrape = async () => parsePrometheus(await (await fetch(`${fake.url}/metrics`)).text()).samples;
    expect((await scrape()).filter((s) => s.name === "lemonade_model_info")).toEqual([]);
    expect((await fetch(`${fake.url}/v1/load`, { method: "POST", body: JSON.stringify({ model_name: "extra.info" }) })).status).toBe(200);
    const samples = await scrape();
    const info = samples.find((s) => s.name === "lemonade_model_info");
    expect(info?.value).toBe(1);
    expect(info?.labels).toMatchObject({ model_name: "extra.info", type: "llm", device: "cpu", recipe: "llamacpp", checkpoint: expect.stringMatching(/info\.gguf$/) });
    expect(samples.find((s) => s.name === "lemonade_model_loaded" && s.labels.model_name === "extra.info")?.value).toBe(1);
    for (const total of ["lemonade_cache_tokens_total", "lemonade_routing_decisions_total", "lemonade_routing_switches_total"]) {
      expect(samples.find((s) => s.name === total)?.value, total).toBe(0);
    }
  } finally {
    await fake.close();
  }
});

test("the reader rejects what is not Prometheus text", () => {
  expect(() => parsePrometheus("lemonade_x 1")).toThrow();
  expect(() => parsePrometheus("# HELP a b\n# TYPE a gauge\na NaN")).toThrow();
  expect(() => parsePrometheus("<html>")).toThrow();
});
