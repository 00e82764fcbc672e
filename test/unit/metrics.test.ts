import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { FakeClock } from "../helpers/fake-clock.ts";
import { HostStats, type CpuTimes } from "../../observability/system.ts";

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

describe("Lemonade's families on a model's engine (the FAKE llama-server)", () => {
  let fake: TestServer;
  const scrape = async () => parsePrometheus(await (await fetch(`${fake.url}/metrics`)).text());
  /** The one sample of a family for extra.info (listed as `info`, which no other model holds),
   * and that it is labelled with exactly Lemonade's five labels. */
  const ofModel = (samples: Sample[], name: string) => {
    const found = samples.filter((s) => s.name === name && s.labels.model_name === "info");
    expect(found, name).toHaveLength(1);
    expect(Object.keys(found[0]!.labels).sort(), name).toEqual(["checkpoint", "device", "model_name", "recipe", "type"]);
    return found[0]!;
  };
  const valueOf = (samples: Sample[], name: string) => samples.find((s) => s.name === name)?.value;
  beforeAll(async () => {
    fake = await startFakeServer(["info"]);
  });
  afterAll(() => fake.close());

  test("a loaded model has its lemonade_model_info and lemonade_model_loaded samples, labelled as Lemonade labels them; the cache and routing totals are there", async () => {
    expect((await scrape()).samples.filter((s) => s.name === "lemonade_model_info")).toEqual([]);
    expect((await fetch(`${fake.url}/v1/load`, { method: "POST", body: JSON.stringify({ model_name: "extra.info" }) })).status).toBe(200);
    const { samples } = await scrape();
    const info = ofModel(samples, "lemonade_model_info");
    expect(info.value).toBe(1);
    expect(info.labels).toMatchObject({ model_name: "info", type: "llm", device: "cpu", recipe: "llamacpp", checkpoint: expect.stringMatching(/info\.gguf$/) });
    expect(ofModel(samples, "lemonade_model_loaded").value).toBe(1);
    // A loaded model with no request yet reports zeros, and no cache figure.
    expect(ofModel(samples, "lemonade_model_requests_total").value).toBe(0);
    expect(ofModel(samples, "lemonade_model_output_tokens").value).toBe(0);
    expect(samples.filter((s) => s.name === "lemonade_model_cache_tokens")).toEqual([]);
    // The engine's own series, renamed and labelled with the model's identity.
    expect(ofModel(samples, "lemonade_llamacpp_requests_processing").labels).toEqual(info.labels);
    for (const total of ["lemonade_cache_tokens_total", "lemonade_routing_decisions_total", "lemonade_routing_switches_total"]) {
      expect(valueOf(samples, total), total).toBe(0);
    }
  });

  test("a chat moves each per-model and server-wide family by what the engine reported; the engine's request counter keeps endpoint and status", async () => {
    const before = (await scrape()).samples;
    const res = await fetch(`${fake.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "extra.info", messages: [{ role: "user", content: "hi" }], max_tokens: 3 }) });
    expect(res.status).toBe(200);
    let after = before;
    // The request is recorded when its answer has ended on the server, which may be just after the client has it.
    for (let i = 0; i < 40 && valueOf(after, "lemonade_requests_total") === valueOf(before, "lemonade_requests_total"); i++) {
      await Bun.sleep(25);
      after = (await scrape()).samples;
    }
    const { types } = await scrape();
    // The fake engine's timings: 1 prompt token processed, none cached, 3 generated at 1000/s after 1 ms.
    const latest = { lemonade_model_input_tokens: 1, lemonade_model_output_tokens: 3, lemonade_model_prompt_tokens: 1, lemonade_model_cache_tokens: 0, lemonade_model_time_to_first_token_seconds: 0.001, lemonade_model_tokens_per_second: 1000 };
    for (const [name, value] of Object.entries(latest)) {
      expect(types.get(name), name).toBe("gauge");
      expect(ofModel(after, name).value, name).toBe(value);
    }
    const moved = { requests_total: 1, input_tokens_total: 1, output_tokens_total: 3, prompt_tokens_total: 1, cache_tokens_total: 0 };
    for (const [suffix, by] of Object.entries(moved)) {
      const perModel = `lemonade_model_${suffix}`;
      const all = `lemonade_${suffix}`;
      expect(types.get(perModel), perModel).toBe("counter");
      expect(types.get(all), all).toBe("counter");
      expect(ofModel(after, perModel).value - ofModel(before, perModel).value, perModel).toBe(by);
      expect(valueOf(after, all)! - valueOf(before, all)!, all).toBe(by);
      expect(after.find((s) => s.name === all)?.labels, all).toEqual({});
    }
    const engine = (samples: Sample[]) => samples.find((s) => s.name === "lemonade_engine_requests_total" && s.labels.model === "info" && s.labels.endpoint === "chat_completions" && s.labels.status === "200")?.value ?? 0;
    expect(engine(after) - engine(before)).toBe(1);
  });

  test("an unloaded model keeps its telemetry, with lemonade_model_loaded 0", async () => {
    const before = ofModel((await scrape()).samples, "lemonade_model_requests_total").value;
    expect(before).toBeGreaterThan(0);
    expect((await fetch(`${fake.url}/v1/unload`, { method: "POST", body: JSON.stringify({ model_name: "extra.info" }) })).status).toBe(200);
    const { samples } = await scrape();
    expect(valueOf(samples, "lemonade_loaded_models")).toBe(0);
    expect(ofModel(samples, "lemonade_model_info").value).toBe(1);
    expect(ofModel(samples, "lemonade_model_loaded").value).toBe(0);
    expect(ofModel(samples, "lemonade_model_requests_total").value).toBe(before);
  });
});

describe("a built-in shadowed by a registered model of its name (the custom-models guide's naming spec)", () => {
  let fake: TestServer;
  const BARE = "Qwen3-0.6B-GGUF";
  /** Puts a checkpoint's file in the server's Hugging Face cache, as a download would leave it. */
  const seed = (repo: string, file: string) => {
    const base = join(fake.cacheDir, "hf", `models--${repo.replace(/\//g, "--")}`);
    mkdirSync(join(base, "refs"), { recursive: true });
    writeFileSync(join(base, "refs", "main"), "c".repeat(40));
    mkdirSync(join(base, "snapshots", "c".repeat(40)), { recursive: true });
    writeFileSync(join(base, "snapshots", "c".repeat(40), file), "FAKE: the fake engine reads no weights");
  };
  const post = (path: string, body: unknown) => fetch(`${fake.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  beforeAll(async () => {
    fake = await startFakeServer([], { LEMONADE_MAX_LOADED_MODELS: "-1", LEMONADE_LOG_LEVEL: "info" });
    seed("unsloth/Qwen3-0.6B-GGUF", "Qwen3-0.6B-Q4_0.gguf");
    seed("test-org/shadow-GGUF", "shadow-Q4_0.gguf");
    expect((await post("/v1/models/register", { model_name: `user.${BARE}`, checkpoint: "test-org/shadow-GGUF:Q4_0", recipe: "llamacpp" })).status).toBe(200);
  });
  afterAll(() => fake.close());

  test("each is labelled by the id /v1/models lists it by: the registered one bare, the built-in builtin.NAME; log lines name them so too", async () => {
    const listed = ((await (await fetch(`${fake.url}/v1/models?show_all=true`)).json()).data as { id: string }[]).map((m) => m.id);
    expect(listed).toContain(BARE);
    expect(listed).toContain(`builtin.${BARE}`);
    for (const name of [`builtin.${BARE}`, BARE]) {
      expect((await post("/v1/load", { model_name: name, llamacpp_backend: "system" })).status).toBe(200);
      expect((await post("/v1/chat/completions", { model: name, messages: [{ role: "user", content: "hi" }], max_tokens: 2 })).status).toBe(200);
    }
    let samples: Sample[] = [];
    // A request is recorded once its answer has ended on the server, which may be just after the client has it.
    for (let i = 0; i < 40 && samples.filter((s) => s.name === "lemonade_engine_requests_total").length < 2; i++) {
      if (i) await Bun.sleep(25);
      samples = parsePrometheus(await (await fetch(`${fake.url}/metrics`)).text()).samples;
    }
    const info = samples.filter((s) => s.name === "lemonade_model_info").map((s) => [s.labels.model_name, s.labels.checkpoint]);
    expect(info.sort()).toEqual([
      [BARE, "test-org/shadow-GGUF:Q4_0"],
      [`builtin.${BARE}`, "unsloth/Qwen3-0.6B-GGUF:Q4_0"],
    ]);
    for (const family of ["lemonade_model_requests_total", "lemonade_llamacpp_requests_processing"]) {
      expect(samples.filter((s) => s.name === family).map((s) => s.labels.model_name).sort(), family).toEqual([BARE, `builtin.${BARE}`]);
    }
    // The bare name's chat went to the registered model, not to the built-in loaded under that id.
    expect(samples.filter((s) => s.name === "lemonade_model_requests_total").map((s) => s.value)).toEqual([1, 1]);
    for (const family of ["lemonade_engine_requests_total", "lemonade_generated_tokens_total", "lemonade_queued_requests"]) {
      expect(samples.filter((s) => s.name === family).map((s) => s.labels.model).sort(), family).toEqual([BARE, `builtin.${BARE}`]);
    }
    const lines = fake.ctx.logger.snapshot().map((e) => e.line);
    expect(lines.filter((l) => / Loading \S+ on llama\.cpp/.test(l)).map((l) => / Loading (\S+) on/.exec(l)![1])).toEqual([`builtin.${BARE}`, BARE]);
    expect(lines.some((l) => l.includes(`Registered ${BARE} (test-org/shadow-GGUF:Q4_0)`))).toBe(true);
    expect(lines.some((l) => l.includes("user.") || / Load(ing|ed) Qwen3-0\.6B-GGUF .*unsloth/.test(l))).toBe(false);
  });
});

test("the host gauges and max_loaded_models by type, as Lemonade exports them", async () => {
  const { types, samples } = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text());
  for (const name of ["lemonade_cpu_usage_percent", "lemonade_memory_used_gb", "lemonade_gpu_usage_percent", "lemonade_vram_used_gb", "lemonade_npu_usage_percent"]) {
    expect(types.get(name), name).toBe("gauge");
  }
  const cpu = samples.find((s) => s.name === "lemonade_cpu_usage_percent")!.value;
  expect(cpu).toBeGreaterThanOrEqual(0);
  expect(cpu).toBeLessThanOrEqual(100);
  expect(samples.find((s) => s.name === "lemonade_memory_used_gb")!.value).toBeGreaterThan(0);
  // This server has no NPU reading: the family is declared and its sample left out.
  expect(samples.filter((s) => s.name === "lemonade_npu_usage_percent")).toEqual([]);
  const limits = samples.filter((s) => s.name === "lemonade_max_loaded_models");
  expect(limits.map((s) => s.labels.type)).toEqual(expect.arrayContaining(["llm", "embedding", "reranking", "transcription", "image", "tts", "classification"]));
  for (const s of limits) expect(s.value).toBe(server.ctx.config.maxLoadedModels);
});

describe("the CPU figure, on a fake clock and a scripted CPU", () => {
  const clock = new FakeClock();
  let cpu: CpuTimes = { idle: 0, total: 0 };
  /** Time passes with the CPU busy for `busy` of it. */
  const spend = async (ms: number, busy: number) => {
    cpu = { idle: cpu.idle + ms * (1 - busy), total: cpu.total + ms };
    await clock.advance(ms);
  };
  const percent = async (reader: HostStats) => (await reader.read()).cpu_percent;

  test("a /metrics scrape between two /v1/system-stats reads leaves their figure alone: each reader has its own window", async () => {
    const systemStats = new HostStats(clock, () => cpu);
    const scrape = new HostStats(clock, () => cpu);
    await spend(1000, 0.2);
    expect(await percent(systemStats)).toBe(20);
    await spend(500, 1);
    // The scrape's window is its whole life: 200 + 500 busy of 1500 ms.
    expect(await percent(scrape)).toBe(46.7);
    await spend(500, 0);
    // 500 busy of the 1000 ms since this reader's last read; a shared window would say 0.
    expect(await percent(systemStats)).toBe(50);
    // The scrape, over its own 500 idle ms since its last.
    expect(await percent(scrape)).toBe(0);
    // Asked again within 100 ms, a reader answers its last figure and its window stays open:
    // the next read covers 50 busy of 200 ms.
    await spend(50, 1);
    expect(await percent(systemStats)).toBe(50);
    await spend(150, 0);
    expect(await percent(systemStats)).toBe(25);
  });

  test("a reader's first read, sooner than the shortest window, waits for the rest of it", async () => {
    const reader = new HostStats(clock, () => cpu);
    let figure: number | null | undefined;
    const reading = percent(reader).then((f) => (figure = f));
    cpu = { idle: cpu.idle + 60, total: cpu.total + 99 };
    await clock.advance(99);
    expect(figure).toBeUndefined();
    cpu = { idle: cpu.idle, total: cpu.total + 1 };
    await clock.advance(1);
    await reading;
    expect(figure).toBe(40);
  });
});

test("the reader rejects what is not Prometheus text", () => {
  expect(() => parsePrometheus("lemonade_x 1")).toThrow();
  expect(() => parsePrometheus("# HELP a b\n# TYPE a gauge\na NaN")).toThrow();
  expect(() => parsePrometheus("<html>")).toThrow();
});
