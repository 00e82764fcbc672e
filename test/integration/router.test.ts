// The router against real llama-server processes on the tiny generated models.
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { isAlive } from "../../engines/process.ts";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let models: string;
beforeAll(() => {
  models = testModelsDir();
});

async function waitFor(cond: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await Bun.sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** An extra-models folder holding the given generated models (`name` or `[source, name]`). */
function extraDir(files: (string | [string, string])[]): string {
  const dir = tempDir("lemonade-extra-");
  for (const f of files) {
    const [src, dest] = typeof f === "string" ? [f, f] : f;
    copyFileSync(join(models, src), join(dir, dest));
  }
  return dir;
}

const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(
  env: Record<string, string> = {},
  files: (string | [string, string])[] = [MODELS.chat, MODELS.chatB, MODELS.embed, MODELS.rerank],
) {
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extraDir(files), ...env });
  return server;
}

const health = async (s: TestServer) => (await fetch(`${s.url}/v1/health`)).json();
const load = (s: TestServer, body: Record<string, unknown>) => fetch(`${s.url}/v1/load`, json(body));

describe("load and unload", () => {
  test("load starts a real llama-server that health lists; unload stops it", async () => {
    const s = await start();
    const res = await load(s, { model_name: "extra.tiny-chat" });
    expect(await res.json()).toEqual({ status: "success", message: "Loaded model: extra.tiny-chat", model_name: "extra.tiny-chat", checkpoint: "tiny-chat.gguf", recipe: "llamacpp" });
    const h = await health(s);
    // Health names the model by its listed id, the bare name no other source holds.
    expect(h.model_loaded).toBe("tiny-chat");
    expect(h.all_models_loaded).toHaveLength(1);
    const entry = h.all_models_loaded[0];
    expect(entry).toMatchObject({ model_name: "tiny-chat", type: "llm", recipe: "llamacpp", pinned: false });
    expect(isAlive(entry.pid)).toBe(true);
    // The backend URL is the engine itself, answering OpenAI-style requests.
    const direct = await (await fetch(`${entry.backend_url}/models`)).json();
    expect(direct.data[0].id).toContain("tiny-chat.gguf");

    const un = await fetch(`${s.url}/v1/unload`, json({ model_name: "extra.tiny-chat" }));
    expect(un.status).toBe(200);
    await waitFor(() => !isAlive(entry.pid), "the engine to exit");
    expect((await health(s)).all_models_loaded).toEqual([]);
  });

  test("unload without a body unloads everything; unloading what is not loaded is 404", async () => {
    const s = await start({ LEMONADE_MAX_LOADED_MODELS: "-1" });
    await load(s, { model_name: "extra.tiny-chat" });
    await load(s, { model_name: "extra.tiny-embed" });
    const pids = (await health(s)).all_models_loaded.map((m: any) => m.pid);
    expect(pids).toHaveLength(2);
    expect((await fetch(`${s.url}/v1/unload`, { method: "POST" })).status).toBe(200);
    await waitFor(() => pids.every((p: number) => !isAlive(p)), "both engines to exit");
    const again = await fetch(`${s.url}/v1/unload`, json({ model_name: "extra.tiny-chat" }));
    expect(again.status).toBe(404);
    expect((await again.json()).code).toBe("model_not_loaded");
  });

  test("embedding and reranking models start in their mode", async () => {
    const s = await start({ LEMONADE_MAX_LOADED_MODELS: "-1" });
    await load(s, { model_name: "extra.tiny-embed" });
    await load(s, { model_name: "extra.tiny-rerank" });
    const loaded = (await health(s)).all_models_loaded;
    const byName = Object.fromEntries(loaded.map((m: any) => [m.model_name, m]));
    expect(byName["tiny-embed"].type).toBe("embedding");
    expect(byName["tiny-rerank"].type).toBe("reranking");
    const emb = await (await fetch(`${byName["tiny-embed"].backend_url}/embeddings`, json({ input: "hi" }))).json();
    expect(emb.data[0].embedding.length).toBe(32);
    const rr = await (
      await fetch(`${byName["tiny-rerank"].backend_url}/rerank`, json({ query: "a", documents: ["x", "y"] }))
    ).json();
    expect(rr.results).toHaveLength(2);
  });

  test("a broken model file fails the load quickly with model_load_error, and the server stays up", async () => {
    const dir = tempDir("lemonade-extra-");
    writeFileSync(join(dir, "broken.gguf"), Buffer.concat([Buffer.from("GGUF"), Buffer.alloc(64, 7)]));
    server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: dir });
    const started = Date.now();
    const res = await load(server, { model_name: "extra.broken" });
    expect(res.status).toBe(500);
    expect((await res.json()).code).toBe("model_load_error");
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await fetch(`${server.url}/live`)).status).toBe(200);
  });

  test("reserved llama-server flags in llamacpp_args are refused before anything starts", async () => {
    const s = await start();
    const res = await load(s, { model_name: "extra.tiny-chat", llamacpp_args: "--port 9999" });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toContain("--port");
    expect((await health(s)).all_models_loaded).toEqual([]);
  });

  test("an unknown model is model_not_found; a model filtered out here is model_not_supported", async () => {
    const s = await start();
    const missing = await load(s, { model_name: "No-Such-Model" });
    expect(missing.status).toBe(404);
    expect((await missing.json()).code).toBe("model_not_found");
    // An NPU model; image models are listed (and tried) everywhere, as Lemonade lists them.
    const npu = await load(s, { model_name: "Llama-3.2-1B-Instruct-CPU" });
    expect(npu.status).toBe(404);
    expect((await npu.json()).code).toBe("model_not_supported");
  });

  test("a catalog model that is not downloaded fails with model_load_error saying so", async () => {
    const s = await start();
    const res = await load(s, { model_name: "Qwen3-0.6B-GGUF" });
    expect(res.status).toBe(500);
    const body = await res.json();
    expect(body.code).toBe("model_load_error");
    expect(body.message).toContain("not downloaded");
  });
});

describe("eviction", () => {
  test("with max_loaded_models=1 a second chat model evicts the first, and the first's stream completes whole", async () => {
    const s = await start();
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "unused" });
    await load(s, { model_name: "extra.tiny-chat" });
    const firstPid = (await health(s)).all_models_loaded[0].pid;

    const maxTokens = 400;
    const stream = (await client.chat.completions.create({
      model: "extra.tiny-chat",
      messages: [{ role: "user", content: "tell me a long story" }],
      max_tokens: maxTokens,
      stream: true,
      // llama.cpp extension: never stop early, so the stream is long enough to overlap the load.
      ignore_eos: true,
    } as any)) as unknown as AsyncIterable<any>;
    const it = stream[Symbol.asyncIterator]();
    const firstChunk = await it.next();
    expect(firstChunk.done).toBe(false);

    const loadB = load(s, { model_name: "extra.tiny-chat-b" });
    const loadBDone = loadB.then(() => Date.now());
    let pieces = 0;
    let finish: string | null = null;
    for (let r = await it.next(); !r.done; r = await it.next()) {
      if (r.value.choices[0]?.delta?.content) pieces++;
      finish = r.value.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe("length");
    // Every generated token arrived (allowing for the role-only first chunk and a merged piece or two).
    expect(pieces).toBeGreaterThanOrEqual(maxTokens - 5);
    const streamEnded = Date.now();

    expect((await loadB).status).toBe(200);
    // B could only start once A had drained: its load finished after A's stream did.
    expect(await loadBDone).toBeGreaterThanOrEqual(streamEnded - 50);
    const after = (await health(s)).all_models_loaded;
    expect(after.map((m: any) => m.model_name)).toEqual(["tiny-chat-b"]);
    await waitFor(() => !isAlive(firstPid), "the evicted engine to exit");
  });

  test("least recently used goes first; pinned models stay; all pinned is 409", async () => {
    const s = await start({ LEMONADE_MAX_LOADED_MODELS: "2" }, [MODELS.chat, MODELS.chatB, [MODELS.chat, "tiny-chat-c.gguf"]]);
    await load(s, { model_name: "extra.tiny-chat" });
    await load(s, { model_name: "extra.tiny-chat-b" });
    // Touch the first so the second becomes least recently used.
    await fetch(`${s.url}/v1/completions`, json({ model: "extra.tiny-chat", prompt: "x", max_tokens: 1 }));
    await load(s, { model_name: "extra.tiny-chat-c" });
    let names = (await health(s)).all_models_loaded.map((m: any) => m.model_name).sort();
    expect(names).toEqual(["tiny-chat", "tiny-chat-c"]);

    await load(s, { model_name: "extra.tiny-chat", pinned: true });
    await load(s, { model_name: "extra.tiny-chat-c", pinned: true });
    const h = await health(s);
    expect(h.pinned_models.llm).toBe(2);
    const refused = await load(s, { model_name: "extra.tiny-chat-b" });
    expect(refused.status).toBe(409);
    expect((await refused.json()).code).toBe("slots_pinned_error");
    names = (await health(s)).all_models_loaded.map((m: any) => m.model_name).sort();
    expect(names).toEqual(["tiny-chat", "tiny-chat-c"]);
  });

  test("a model idle past evict_idle_timeout is unloaded", async () => {
    const s = await start();
    await load(s, { model_name: "extra.tiny-chat", auto_evict: true, evict_idle_timeout: 1 });
    const pid = (await health(s)).all_models_loaded[0].pid;
    await waitFor(async () => (await health(s)).all_models_loaded.length === 0, "idle eviction", 5000);
    await waitFor(() => !isAlive(pid), "the idle engine to exit");
  });
});

describe("concurrency and faults", () => {
  test("ten concurrent first requests to an unloaded model start exactly one llama-server", async () => {
    const s = await start({ LEMONADE_LOG_LEVEL: "info" });
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        fetch(`${s.url}/v1/chat/completions`, json({ model: "extra.tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 2 })),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    const loads = s.ctx.logger.snapshot().filter((e) => e.line.includes("Loading tiny-chat on llama.cpp"));
    expect(loads).toHaveLength(1);
    const pgrep = Bun.spawnSync(["pgrep", "-f", `${s.ctx.config.extraModelsDir}/tiny-chat.gguf`]);
    expect(pgrep.stdout.toString().trim().split("\n")).toHaveLength(1);
  });

  test("two chat models with max_loaded_models 1, 16 alternating concurrent requests: all 200, one engine start per model", async () => {
    const s = await start({ LEMONADE_LOG_LEVEL: "info" });
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        fetch(`${s.url}/v1/chat/completions`, {
          ...json({ model: i % 2 ? "extra.tiny-chat-b" : "extra.tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 4 }),
          signal: AbortSignal.timeout(30_000),
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(16).fill(200));
    const starts = s.ctx.logger.snapshot().filter((e) => /Loading tiny-chat(-b)? on llama\.cpp/.test(e.line)).length;
    expect(starts).toBe(2);
  });

  test("a killed engine is noticed and logged; the next request reloads it; the server stays up", async () => {
    const s = await start({ LEMONADE_LOG_LEVEL: "info" });
    await load(s, { model_name: "extra.tiny-chat" });
    const pid = (await health(s)).all_models_loaded[0].pid;
    process.kill(pid, "SIGKILL");
    await waitFor(async () => (await health(s)).all_models_loaded.length === 0, "the crash to be noticed");
    const crash = s.ctx.logger.snapshot().find((e) => e.severity === "Error" && e.line.includes("exited unexpectedly"));
    expect(crash?.line).toContain(String(pid));

    const res = await fetch(
      `${s.url}/v1/chat/completions`,
      { ...json({ model: "extra.tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }), signal: AbortSignal.timeout(30_000) },
    );
    expect(res.status).toBe(200);
    const newPid = (await health(s)).all_models_loaded[0].pid;
    expect(newPid).not.toBe(pid);
    expect(isAlive(newPid)).toBe(true);
  });

  test("killing the engine mid-stream ends the stream with an error event, not a hang", async () => {
    const s = await start();
    await load(s, { model_name: "extra.tiny-chat" });
    const pid = (await health(s)).all_models_loaded[0].pid;
    const res = await fetch(`${s.url}/v1/chat/completions`, {
      ...json({ model: "extra.tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 100000, ignore_eos: true, stream: true }),
      signal: AbortSignal.timeout(30_000),
    });
    const reader = res.body!.getReader();
    // Past the opening keep-alive, to the engine's first tokens: from then on it cannot be replayed.
    let text = "";
    while (!text.includes("data: ")) text += new TextDecoder().decode((await reader.read()).value);
    process.kill(pid, "SIGKILL");
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    const last = text.trim().split("\n\n").at(-1)!;
    expect(last).not.toContain("[DONE]");
    const event = JSON.parse(last.replace(/^data: /, ""));
    expect(event.error.type).toBe("backend_error");
    expect(event.error.status_code).toBe(502);
    expect((await fetch(`${s.url}/live`)).status).toBe(200);
  });
});

describe("catalog and options", () => {
  test("models list: downloaded by default, the catalog with show_all, extras classified by their metadata", async () => {
    const s = await start();
    await fetch(`${s.url}/internal/aliases`, json({ alias: "my-chat", target: "extra.tiny-chat" }));
    const list = await (await fetch(`${s.url}/v1/models`)).json();
    const ids = list.data.map((m: any) => m.id);
    // The extra models are listed by their bare names, which nothing else holds.
    expect(ids).toEqual(expect.arrayContaining(["tiny-chat", "tiny-embed", "tiny-rerank", "my-chat"]));
    expect(ids).not.toContain("Qwen3-0.6B-GGUF");
    const byId = Object.fromEntries(list.data.map((m: any) => [m.id, m]));
    // Each is `custom` first, as Lemonade labels an imported model, then its kind from its metadata.
    expect(byId["tiny-embed"].labels).toEqual(["custom", "embeddings"]);
    expect(byId["tiny-rerank"].labels).toEqual(["custom", "reranking"]);
    expect(byId["tiny-chat"]).toMatchObject({ labels: ["custom", "chat"], downloaded: true, source: "extra_models_dir", max_context_window: 4096 });
    expect(byId["my-chat"].checkpoint).toBe(byId["tiny-chat"].checkpoint);

    const all = await (await fetch(`${s.url}/v1/models?show_all=true`)).json();
    const qwen = all.data.find((m: any) => m.id === "Qwen3-0.6B-GGUF");
    expect(qwen).toMatchObject({ downloaded: false, recipe: "llamacpp", checkpoint: "unsloth/Qwen3-0.6B-GGUF:Q4_0", registry_source: "huggingface" });
    // Image models are listed wherever Lemonade lists them, even where sd-server cannot be had.
    expect(all.data.find((m: any) => m.id === "SD-Turbo")).toMatchObject({ recipe: "sd-cpp", downloaded: false });

    const one = await (await fetch(`${s.url}/v1/models/extra.tiny-chat:latest`)).json();
    expect(one.id).toBe("tiny-chat");
    const missing = await fetch(`${s.url}/v1/models/nope`);
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.code).toBe("model_not_found");

    const files = await (await fetch(`${s.url}/v1/models/extra.tiny-chat/files?include_paths=true`)).json();
    expect(files.files[0]).toMatchObject({ name: "tiny-chat.gguf", role: "main", exists: true });
    expect(files.files[0].size_bytes).toBeGreaterThan(1_000_000);
    expect(files.files[0].path).toEndWith("/tiny-chat.gguf");
  });

  test("a catalog model whose files are in the Hugging Face cache is downloaded and loads", async () => {
    const hf = tempDir("lemonade-hf-");
    const repo = join(hf, "models--unsloth--Qwen3-0.6B-GGUF");
    mkdirSync(join(repo, "snapshots", "abc123"), { recursive: true });
    mkdirSync(join(repo, "refs"), { recursive: true });
    writeFileSync(join(repo, "refs", "main"), "abc123");
    copyFileSync(join(models, MODELS.chat), join(repo, "snapshots", "abc123", "Qwen3-0.6B-Q4_0.gguf"));
    const s = await start({ HF_HUB_CACHE: hf });
    const m = await (await fetch(`${s.url}/v1/models/Qwen3-0.6B-GGUF`)).json();
    expect(m.downloaded).toBe(true);
    expect(m.checkpoint_status).toEqual([{ type: "main", present: true, required: true, registry: "huggingface" }]);
    expect((await load(s, { model_name: "Qwen3-0.6B-GGUF" })).status).toBe(200);
    const tags = await (await fetch(`${s.url}/api/tags`)).json();
    const tag = tags.models.find((t: any) => t.name === "Qwen3-0.6B-GGUF:latest");
    expect(tag.details).toMatchObject({ family: "llamacpp", parameter_size: "0.6B", quantization_level: "Q4_0" });
    const ps = await (await fetch(`${s.url}/api/ps`)).json();
    expect(ps.models.map((p: any) => p.name)).toEqual(["Qwen3-0.6B-GGUF:latest"]);
  });

  test("options: read by layer, save, dry run, reset, and load with save_options", async () => {
    const s = await start();
    const url = `${s.url}/v1/models/extra.tiny-chat/options`;
    const initial = await (await fetch(url)).json();
    expect(initial).toMatchObject({ model_name: "extra.tiny-chat", recipe: "llamacpp", saved: {} });
    expect(initial.effective.ctx_size).toBe(4096);
    expect(initial.resolved_ctx_size).toBe(4096);

    const dry = await (await fetch(url, json({ ctx_size: 2048, dry_run: true }))).json();
    expect(dry.effective.ctx_size).toBe(2048);
    expect(dry.saved).toEqual({});

    const saved = await (await fetch(url, json({ ctx_size: 2048, llamacpp_args: "--parallel 1" }))).json();
    expect(saved.saved).toEqual({ ctx_size: 2048, llamacpp_args: "--parallel 1" });
    expect(saved.defaults.ctx_size).toBe(4096);

    for (const bad of [{ pinned: true }, { ctx_size: 0 }, { whispercpp_args: "x" }, { ctx_size: 1.5 }]) {
      const res = await fetch(url, json(bad));
      expect(res.status).toBe(400);
    }
    // The saved options reach the engine's command line on the next load.
    await load(s, { model_name: "extra.tiny-chat" });
    expect((await health(s)).all_models_loaded[0].recipe_options.ctx_size).toBe(2048);

    // A request-layer null ignores the saved value for this load only.
    await load(s, { model_name: "extra.tiny-chat", ctx_size: null });
    expect((await health(s)).all_models_loaded[0].recipe_options.ctx_size).toBe(4096);
    expect((await (await fetch(url)).json()).saved.ctx_size).toBe(2048);

    await load(s, { model_name: "extra.tiny-chat", ctx_size: 1024, save_options: true });
    expect((await (await fetch(url)).json()).saved).toEqual({ ctx_size: 1024 });
    const file = JSON.parse(await Bun.file(join(s.cacheDir, "recipe_options.json")).text());
    expect(file).toEqual({ "extra.tiny-chat": { ctx_size: 1024 } });

    const reset = await (await fetch(url, { method: "DELETE" })).json();
    expect(reset.saved).toEqual({});
    expect(await Bun.file(join(s.cacheDir, "recipe_options.json")).json()).toEqual({});
  });
});
