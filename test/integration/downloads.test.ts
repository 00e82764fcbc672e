// Model downloads with the real download code against a Hugging Face-compatible hub on loopback.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { sha256, startFakeHub, type FakeHub, type HubRepo } from "../helpers/fake-hub.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let hub: FakeHub;
let hubRepos: Record<string, HubRepo>;
let chat: Uint8Array;
const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 7919) % 251);
const mmproj = new Uint8Array(200_000).map((_, i) => i % 13);

beforeAll(() => {
  chat = new Uint8Array(readFileSync(join(testModelsDir(), MODELS.chat)));
  hubRepos = {
    "test-org/tiny-GGUF": {
      sha: "a".repeat(40),
      files: { "tiny-Q4_0.gguf": chat, "tiny-Q8_0.gguf": big, "mmproj-tiny-f16.gguf": mmproj, "README.md": new TextEncoder().encode("# tiny") },
    },
    // A hostile hub: names that would leave the cache if they were used as paths.
    // The built-in Qwen3-0.6B-GGUF's repository, so that a built-in downloads from this hub too.
    "unsloth/Qwen3-0.6B-GGUF": { sha: "c".repeat(40), files: { "Qwen3-0.6B-Q4_0.gguf": big } },
    "evil-org/commit-GGUF": { sha: "../../../../escaped-commit", files: { "m-Q4_0.gguf": chat } },
    "evil-org/file-GGUF": { sha: "b".repeat(40), files: { "../../../../escaped-Q4_0.gguf": chat } },
  };
  hub = startFakeHub(hubRepos);
});
afterAll(() => hub.stop());

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  hub.dropOnce.clear();
  hub.wrongHash.clear();
  hub.ranges.clear();
  hub.claimedSize.clear();
  hub.delayMs = 0;
});

async function start(env: Record<string, string> = {}) {
  server = await startTestServer({ HF_ENDPOINT: hub.url, LEMONADE_MAX_LOADED_MODELS: "-1", ...env });
  return server;
}

const post = (path: string, body: unknown) =>
  fetch(`${server!.url}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

const repoDir = (s: TestServer) => join(s.cacheDir, "hf", "models--test-org--tiny-GGUF");

/** The SSE events of a streamed pull, parsed. */
async function events(res: Response): Promise<{ event: string; data: any }[]> {
  return (await res.text())
    .trim()
    .split("\n\n")
    .map((block) => {
      const [e, d] = block.split("\n");
      return { event: e!.replace("event: ", ""), data: JSON.parse(d!.replace("data: ", "")) };
    });
}

describe("pull", () => {
  test("register and pull a two-file model: progress sums to the file sizes, files land in the HF layout", async () => {
    const s = await start();
    const res = await post("/v1/pull", {
      model_name: "user.Tiny",
      checkpoint: "test-org/tiny-GGUF:Q8_0",
      mmproj: "mmproj-tiny-f16.gguf",
      recipe: "llamacpp",
      vision: true,
      stream: true,
    });
    const evs = await events(res);
    expect(evs.at(-1)!.event).toBe("complete");
    const progress = evs.filter((e) => e.event === "progress").map((e) => e.data);
    const finalPerFile = new Map<string, number>();
    for (const p of progress) finalPerFile.set(p.file, p.bytes_downloaded);
    expect(Object.fromEntries(finalPerFile)).toEqual({ "tiny-Q8_0.gguf": big.length, "mmproj-tiny-f16.gguf": mmproj.length });
    expect(progress.every((p) => p.total_files === 2)).toBe(true);
    expect(progress.at(-1).percent).toBe(100);

    const snap = join(repoDir(s), "snapshots", "a".repeat(40));
    expect(readFileSync(join(snap, "tiny-Q8_0.gguf"))).toEqual(Buffer.from(big));
    expect(readFileSync(join(repoDir(s), "refs", "main"), "utf8")).toBe("a".repeat(40));
    expect(readdirSync(join(repoDir(s), "blobs")).sort()).toEqual([sha256(big), sha256(mmproj)].sort());

    const model = await (await fetch(`${s.url}/v1/models/user.Tiny`)).json();
    expect(model).toMatchObject({ downloaded: true, labels: ["chat", "custom", "vision"], checkpoints: { main: "test-org/tiny-GGUF:Q8_0", mmproj: "test-org/tiny-GGUF:mmproj-tiny-f16.gguf" } });
    expect(JSON.parse(readFileSync(join(s.cacheDir, "user_models.json"), "utf8")).Tiny.checkpoint).toBe("test-org/tiny-GGUF:Q8_0");
  });

  test("pull, load and chat on the downloaded model", async () => {
    await start();
    const pulled = await post("/v1/pull", { model_name: "user.TinyChat", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" });
    expect(await pulled.json()).toEqual({ status: "success", message: "Installed model: user.TinyChat", model_name: "user.TinyChat" });
    const res = await post("/v1/chat/completions", { model: "user.TinyChat", messages: [{ role: "user", content: "hi" }], max_tokens: 3 });
    expect(res.status).toBe(200);
    expect((await res.json()).usage.completion_tokens).toBe(3);
  });

  test("a request for a registered model that is not downloaded downloads it first", async () => {
    await start();
    await post("/v1/models/register", { model_name: "user.Auto", recipe: "llamacpp", checkpoint: "test-org/tiny-GGUF:Q4_0" });
    const res = await post("/v1/chat/completions", { model: "user.Auto", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
    expect(res.status).toBe(200);
    expect((await (await fetch(`${server!.url}/v1/models/user.Auto`)).json()).downloaded).toBe(true);
  });

  test("a connection dropped mid-file resumes without fetching the finished part again", async () => {
    const s = await start();
    hub.dropOnce.set("tiny-Q8_0.gguf", 1_000_000);
    const body = { model_name: "user.Resume", checkpoint: "test-org/tiny-GGUF:Q8_0", recipe: "llamacpp" };
    const first = await post("/v1/pull", body);
    expect(first.status).toBe(500);
    expect((await first.json()).code).toBe("download_failed");
    const partial = readdirSync(join(repoDir(s), "blobs")).find((f) => f.endsWith(".incomplete"))!;
    const kept = readFileSync(join(repoDir(s), "blobs", partial)).length;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(1_000_000);
    expect((await (await fetch(`${s.url}/v1/models/user.Resume`)).json()).downloaded).toBe(false);

    expect((await post("/v1/pull", body)).status).toBe(200);
    expect(hub.ranges.get("tiny-Q8_0.gguf")).toEqual(["", `bytes=${kept}-`]);
    expect(readFileSync(join(repoDir(s), "blobs", sha256(big)))).toEqual(Buffer.from(big));
    expect(readdirSync(join(repoDir(s), "blobs")).some((f) => f.endsWith(".incomplete"))).toBe(false);
  });

  test("a wrong hash fails the pull and leaves nothing that counts as downloaded", async () => {
    const s = await start();
    hub.wrongHash.add("tiny-Q8_0.gguf");
    const res = await post("/v1/pull", { model_name: "user.Bad", checkpoint: "test-org/tiny-GGUF:Q8_0", recipe: "llamacpp" });
    expect(res.status).toBe(500);
    expect((await res.json()).message).toContain("sha256");
    expect(existsSync(join(repoDir(s), "snapshots", "a".repeat(40), "tiny-Q8_0.gguf"))).toBe(false);
    expect(readdirSync(join(repoDir(s), "blobs"))).toEqual([]);
    expect((await (await fetch(`${s.url}/v1/models/user.Bad`)).json()).downloaded).toBe(false);
  });

  test("names from a hostile hub never become paths: the pull fails and nothing is written outside the cache", async () => {
    const s = await start();
    for (const [name, checkpoint] of [["user.EvilCommit", "evil-org/commit-GGUF:Q4_0"], ["user.EvilFile", "evil-org/file-GGUF:Q4_0"]] as const) {
      const res = await post("/v1/pull", { model_name: name, checkpoint, recipe: "llamacpp" });
      expect(res.status, name).toBeGreaterThanOrEqual(400);
      expect((await res.json()).message).toContain("unsafe");
    }
    const outside = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith("escaped")) : []);
    for (const dir of [s.cacheDir, join(s.cacheDir, ".."), join(s.cacheDir, "hf")]) expect(outside(dir)).toEqual([]);
    expect(existsSync(join(s.cacheDir, "hf", "models--evil-org--file-GGUF", "blobs"))).toBe(false);
  });

  test("checkpoints and names with control or path characters are refused at registration with 400", async () => {
    const s = await start();
    for (const body of [
      { model_name: "user.Nul", checkpoint: "test-org/tiny-GGUF\u0000:Q4_0" },
      { model_name: "user.Dots", checkpoint: "../../etc/passwd:Q4_0" },
      { model_name: "user.Up", checkpoint: "test-org/tiny-GGUF:../../x.gguf" },
      { model_name: "user.../x", checkpoint: "test-org/tiny-GGUF:Q4_0" },
    ]) {
      const res = await fetch(`${s.url}/v1/models/register`, { method: "POST", body: JSON.stringify({ ...body, recipe: "llamacpp" }) });
      expect(res.status, body.model_name).toBe(400);
      expect(JSON.stringify(await res.json())).not.toContain(s.cacheDir);
    }
    expect(existsSync(join(s.cacheDir, "user_models.json"))).toBe(false);
  });

  test("label rules refuse a registration and register nothing", async () => {
    const s = await start();
    const two = await post("/v1/pull", { model_name: "user.Both", recipe: "llamacpp", checkpoint: "test-org/tiny-GGUF:Q4_0", labels: ["chat", "embeddings"] });
    expect(two.status).toBe(400);
    expect((await two.json()).error).toBe(
      "Model 'user.Both': a model deploys in exactly one mode, but these labels name two: 'chat' and 'embeddings'. Register one model per mode.",
    );
    const clf = await post("/v1/pull", { model_name: "user.Clf", recipe: "llamacpp", checkpoint: "test-org/tiny-GGUF:Q4_0", labels: ["classification"] });
    expect((await clf.json()).error).toBe(
      "Model 'user.Clf': recipe 'llamacpp' cannot serve 'classification'. It serves 'chat', 'embeddings', 'reranking'. Omit the label to deploy as 'chat'.",
    );
    const flags = await post("/v1/pull", { model_name: "user.Flags", recipe: "llamacpp", checkpoint: "test-org/tiny-GGUF:Q4_0", embedding: true, reranking: true });
    expect(flags.status).toBe(400);
    const bare = await post("/v1/models/register", { model_name: "NoNamespace", recipe: "llamacpp", checkpoint: "x/y" });
    expect(bare.status).toBe(400);
    expect(existsSync(join(s.cacheDir, "user_models.json"))).toBe(false);
  });

  test("offline mode refuses downloads with lemond_offline", async () => {
    await start({ LEMONADE_OFFLINE: "true" });
    const res = await post("/v1/pull", { model_name: "Qwen3-0.6B-GGUF" });
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe("lemond_offline");
    const ollama = await post("/api/pull", { model: "Qwen3-0.6B-GGUF", stream: false });
    expect(ollama.status).toBe(400);
  });

  test("Ollama's /api/pull streams NDJSON progress; /api/delete removes the files", async () => {
    const s = await start();
    await post("/v1/models/register", { model_name: "user.Olla", recipe: "llamacpp", checkpoint: "test-org/tiny-GGUF:Q4_0" });
    const res = await post("/api/pull", { model: "user.Olla" });
    const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines[0]).toEqual({ status: "pulling manifest" });
    expect(lines.slice(-2)).toEqual([{ status: "success" }, { status: "success" }]);
    const last = lines.filter((l) => l.status.startsWith("downloading")).at(-1);
    expect(last).toMatchObject({ completed: chat.length, total: chat.length });

    const del = await fetch(`${s.url}/api/delete`, { method: "DELETE", body: JSON.stringify({ model: "user.Olla" }) });
    expect(del.status).toBe(200);
    expect(await del.text()).toBe("");
    expect(existsSync(repoDir(s))).toBe(false);
    expect((await fetch(`${s.url}/api/delete`, { method: "DELETE", body: JSON.stringify({ model: "nope" }) })).status).toBe(404);
  });
});

describe("discovery and updates", () => {
  test("variants group a repository's GGUF files, with mmproj and suggestions", async () => {
    await start();
    const res = await (await fetch(`${server!.url}/v1/pull/variants?checkpoint=test-org/tiny-GGUF`)).json();
    expect(res).toMatchObject({ recipe: "llamacpp", suggested_name: "tiny-GGUF", suggested_labels: ["vision"], mmproj_files: ["mmproj-tiny-f16.gguf"] });
    expect(res.variants.map((v: any) => v.name)).toEqual(["Q8_0", "Q4_0"]);
    expect(res.variants[0]).toEqual({ name: "Q8_0", primary_file: "tiny-Q8_0.gguf", files: ["tiny-Q8_0.gguf"], sharded: false, size_bytes: big.length });
    expect((await fetch(`${server!.url}/v1/pull/variants?checkpoint=noslash`)).status).toBe(400);
    expect((await fetch(`${server!.url}/v1/pull/variants?checkpoint=test-org/missing`)).status).toBe(404);
    // A Hugging Face URL names the same repository; another source is refused by name.
    const byUrl = await (await fetch(`${server!.url}/v1/pull/variants?checkpoint=${encodeURIComponent("https://huggingface.co/test-org/tiny-GGUF")}`)).json();
    expect(byUrl.variants.map((v: any) => v.name)).toEqual(["Q8_0", "Q4_0"]);
    const other = await fetch(`${server!.url}/v1/pull/variants?checkpoint=test-org/tiny-GGUF&source=elsewhere`);
    expect(other.status).toBe(400);
    expect((await other.json()).message).toContain("Unsupported model source");
  });

  test("a checkpoint given as a Hugging Face URL registers and pulls as org/repo:variant", async () => {
    const s = await start();
    const res = await post("/v1/pull", { model_name: "user.ByUrl", checkpoint: "hf.co/test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" });
    expect(res.status).toBe(200);
    const model = await (await fetch(`${s.url}/v1/models/user.ByUrl`)).json();
    expect(model).toMatchObject({ checkpoint: "test-org/tiny-GGUF:Q4_0", downloaded: true });
  });

  test("a checkpoint URL of one registry with a `source` naming another is a 400 naming both; nothing is fetched", async () => {
    const s = await start();
    const res = await post("/v1/pull", { model_name: "user.Mixed", checkpoint: "https://modelscope.cn/models/test-org/tiny-GGUF:Q4_0", recipe: "llamacpp", source: "huggingface" });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body).toMatchObject({ param: "source", type: "invalid_request_error" });
    expect(body.message).toContain("modelscope.cn");
    expect((await fetch(`${s.url}/v1/models/user.Mixed`)).status).toBe(404);
    const variants = await fetch(`${s.url}/v1/pull/variants?checkpoint=${encodeURIComponent("https://huggingface.co/test-org/tiny-GGUF")}&source=modelscope`);
    expect(variants.status).toBe(400);
    expect(hub.ranges.size).toBe(0);
  });

  test("the variants error for a checkpoint that is no repository names the form owner/name", async () => {
    await start();
    const res = await fetch(`${server!.url}/v1/pull/variants?checkpoint=noslash`);
    expect(res.status).toBe(400);
    expect((await res.json()).message).toContain("owner/name");
  });

  test("a pull records the repository's registry and commit, and what the model selected from it, in .lemonade_registry.json", async () => {
    const s = await start();
    expect((await post("/v1/pull", { model_name: "user.Prov", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" })).status).toBe(200);
    const provenance = JSON.parse(readFileSync(join(repoDir(s), ".lemonade_registry.json"), "utf8"));
    expect(provenance).toEqual({
      source: "huggingface",
      repo_id: "test-org/tiny-GGUF",
      revision: "main",
      snapshot_id: "a".repeat(40),
      processed_models: { "user.Prov": { selection: "llamacpp\nmain=test-org/tiny-GGUF:Q4_0", snapshot_id: "a".repeat(40) } },
    });
  });

  test("a cached blob damaged on disk fails its sha256 on the next pull and is downloaded again", async () => {
    const s = await start();
    const pull = () => post("/v1/pull", { model_name: "user.Damaged", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" });
    expect((await pull()).status).toBe(200);
    const blob = join(repoDir(s), "blobs", sha256(chat));
    const damaged = readFileSync(blob);
    damaged[damaged.length - 1]! ^= 0xff;
    writeFileSync(blob, damaged);
    expect((await pull()).status).toBe(200);
    expect(sha256(readFileSync(blob))).toBe(sha256(chat));
  });

  test("stream: true, subscribe: false answers a job snapshot on every prefix, and the job is listed there", async () => {
    await start();
    for (const prefix of ["/api/v0", "/api/v1", "/v0", "/v1"]) {
      const name = `user.Sub${prefix.replace(/\//g, "")}`;
      const res = await post(`${prefix}/pull`, { model_name: name, checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp", stream: true, subscribe: false });
      expect(res.headers.get("content-type"), prefix).toContain("application/json");
      expect(await res.json(), prefix).toMatchObject({ id: `model:${name}`, model_name: name, type: "model" });
      const listed = (await (await fetch(`${server!.url}${prefix}/downloads`)).json()) as any[];
      expect(listed.map((j) => j.model_name), prefix).toContain(name);
    }
  });

  test("registry search finds repositories on the hub", async () => {
    await start();
    const res = await (await fetch(`${server!.url}/v1/registry/search?query=tiny&format=gguf`)).json();
    expect(res).toMatchObject({ query: "tiny", source: "huggingface", format: "gguf", total: 1 });
    expect(res.results[0]).toMatchObject({ repository_id: "test-org/tiny-GGUF", has_gguf: true });
    expect((await fetch(`${server!.url}/v1/registry/search?query=ab`)).status).toBe(400);
  });

  test("check-updates flags a model whose repository moved on, until it is pulled again", async () => {
    const s = await start();
    await post("/v1/pull", { model_name: "user.Upd", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" });
    expect(await (await post("/v1/models/check-updates", {})).json()).toEqual({ status: "success", updates_available: 0, models: [] });
    hubRepos["test-org/tiny-GGUF"]!.sha = "b".repeat(40);
    try {
      expect(await (await post("/v1/models/check-updates", {})).json()).toEqual({ status: "success", updates_available: 1, models: ["user.Upd"] });
      expect((await (await fetch(`${s.url}/v1/models/user.Upd`)).json()).update_available).toBe(true);
      await post("/v1/pull", { model_name: "user.Upd" });
      expect((await (await fetch(`${s.url}/v1/models/user.Upd`)).json()).update_available).toBe(false);
      expect(readFileSync(join(repoDir(s), "refs", "main"), "utf8")).toBe("b".repeat(40));
    } finally {
      hubRepos["test-org/tiny-GGUF"]!.sha = "a".repeat(40);
    }
  });

  test("a variant in an older snapshot still counts as downloaded after refs/main moved on", async () => {
    const s = await start();
    await post("/v1/pull", { model_name: "user.OldQ4", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" });
    hubRepos["test-org/tiny-GGUF"]!.sha = "b".repeat(40);
    try {
      await post("/v1/pull", { model_name: "user.NewQ8", checkpoint: "test-org/tiny-GGUF:Q8_0", recipe: "llamacpp" });
      expect(readFileSync(join(repoDir(s), "refs", "main"), "utf8")).toBe("b".repeat(40));
      expect((await (await fetch(`${s.url}/v1/models/user.OldQ4`)).json()).downloaded).toBe(true);
      expect((await (await fetch(`${s.url}/v1/models/user.NewQ8`)).json()).downloaded).toBe(true);
    } finally {
      hubRepos["test-org/tiny-GGUF"]!.sha = "a".repeat(40);
    }
  });

  test("a server-owned job for a model that cannot be downloaded ends in error and stays visible", async () => {
    const s = await start();
    const res = await post("/v1/pull", { model_name: "user.Missing", checkpoint: "test-org/not-there-GGUF:Q4_0", recipe: "llamacpp", stream: true, subscribe: false });
    expect((await res.json()).status).toBe("downloading");
    let job: any;
    for (let i = 0; i < 100 && job?.status !== "error"; i++) {
      job = ((await (await fetch(`${s.url}/v1/downloads`)).json()) as any[]).find((j) => j.model_name === "user.Missing");
      if (job?.status !== "error") await Bun.sleep(20);
    }
    expect(job).toMatchObject({ status: "error", running: false });
    expect(job.error).toContain("404");
  });

  test("offline: check-updates is 409", async () => {
    await start({ LEMONADE_OFFLINE: "1" });
    const res = await post("/v1/models/check-updates", {});
    expect(res.status).toBe(409);
    expect((await res.json()).code).toBe("lemond_offline");
  });
});

describe("server-owned jobs", () => {
  const job = () => post("/v1/pull", { model_name: "user.Job", checkpoint: "test-org/tiny-GGUF:Q8_0", recipe: "llamacpp", stream: true, subscribe: false });
  const jobs = async () => (await (await fetch(`${server!.url}/v1/downloads`)).json()) as any[];
  const waitFor = async (cond: (j: any) => boolean) => {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const j = (await jobs())[0];
      if (j && cond(j)) return j;
      await Bun.sleep(20);
    }
    throw new Error("job never reached the state");
  };

  test("pause keeps the partial file and a new pull resumes it; the job completes", async () => {
    await start();
    hub.delayMs = 10;
    const first = await (await job()).json();
    expect(first).toMatchObject({ id: "model:user.Job", status: "downloading", running: true });
    await waitFor((j) => j.bytes_downloaded > 200_000);
    const paused = await (await post("/v1/downloads/control", { id: "model:user.Job", action: "pause" })).json();
    expect(paused).toMatchObject({ status: "paused", running: false });
    const at = paused.bytes_downloaded;
    expect(at).toBeGreaterThan(0);
    expect(at).toBeLessThan(big.length);

    hub.delayMs = 0;
    await job();
    const done = await waitFor((j) => j.status === "completed");
    expect(done).toMatchObject({ complete: true, percent: 100, bytes_downloaded: big.length, total_download_size: big.length });
    const resumedFrom = Number(/bytes=(\d+)-/.exec(hub.ranges.get("tiny-Q8_0.gguf")!.at(-1)!)![1]);
    expect(resumedFrom).toBeGreaterThanOrEqual(at - 65536 * 4);
    expect(resumedFrom).toBeGreaterThan(0);
    expect(done.bytes_previously_downloaded).toBe(resumedFrom);
  });

  test("cancel stops the job and deletes its partial file; remove forgets it", async () => {
    const s = await start();
    hub.delayMs = 10;
    await job();
    await waitFor((j) => j.bytes_downloaded > 100_000);
    const cancelled = await (await post("/v1/downloads/control", { id: "model:user.Job", action: "cancel" })).json();
    expect(cancelled).toMatchObject({ status: "cancelled", running: false, complete: false });
    expect(readdirSync(join(repoDir(s), "blobs"))).toEqual([]);
    expect(await (await post("/v1/downloads/control", { id: "model:user.Job", action: "remove" })).json()).toEqual({ status: "ok" });
    expect(await jobs()).toEqual([]);
    expect(await (await post("/v1/downloads/control", { id: "model:user.Job", action: "remove" })).json()).toEqual({ status: "ok", missing: true });
    expect((await post("/v1/downloads/control", { id: "model:nope", action: "pause" })).status).toBe(404);
  });
  test("a cancel ends the pulls sharing the download with no error: Ollama's NDJSON and /v1/pull's events just stop", async () => {
    const s = await start();
    hub.delayMs = 50;
    await job();
    // Both join the job's download of the same model.
    const ollamaRaw = post("/api/pull", { model: "user.Job" }).then((r) => r.text());
    const sse = post("/v1/pull", { model_name: "user.Job", stream: true }).then(events);
    const client = (async () => {
      const seen: any[] = [];
      try {
        for await (const part of await new Ollama({ host: s.url }).pull({ model: "user.Job", stream: true })) seen.push(part);
        return { seen, thrown: "" };
      } catch (err) {
        return { seen, thrown: (err as Error).message };
      }
    })();
    await waitFor((j) => j.bytes_downloaded > 100_000);
    expect((await (await post("/v1/downloads/control", { id: "model:user.Job", action: "cancel" })).json()).status).toBe("cancelled");

    const lines = (await ollamaRaw).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines[0]).toEqual({ status: "pulling manifest" });
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.slice(1).every((l) => Object.keys(l).sort().join() === "completed,digest,status,total" && l.status === "downloading tiny-Q8_0.gguf")).toBe(true);
    expect(lines.at(-1).completed).toBeLessThan(big.length);
    // The official client, given no error line, reports only that the stream ended early.
    const { seen, thrown } = await client;
    expect(thrown).toBe("Did not receive done or success response in stream.");
    expect(seen.some((p) => p.status === "success")).toBe(false);
    const evs = await sse;
    expect(evs.length).toBeGreaterThan(0);
    expect(evs.every((e) => e.event === "progress")).toBe(true);
    expect((await (await fetch(`${s.url}/v1/models/user.Job`)).json()).downloaded).toBe(false);
  });
});

describe("a shadowed built-in, by its builtin. name", () => {
  const BUILTIN = "Qwen3-0.6B-GGUF";
  const builtinDir = (s: TestServer) => join(s.cacheDir, "hf", "models--unsloth--Qwen3-0.6B-GGUF");
  const jobs = async () => (await (await fetch(`${server!.url}/v1/downloads`)).json()) as any[];

  test("a paused download of the built-in goes on by Range under builtin.NAME once a registration holds NAME; /v1/pull refuses the prefix as lemond does; delete takes only the built-in's files", async () => {
    const s = await start();
    hub.delayMs = 10;
    await post("/v1/pull", { model_name: BUILTIN, stream: true, subscribe: false });
    const deadline = Date.now() + 10_000;
    while (((await jobs())[0]?.bytes_downloaded ?? 0) < 200_000 && Date.now() < deadline) await Bun.sleep(20);
    const paused = await (await post("/v1/downloads/control", { id: `model:${BUILTIN}`, action: "pause" })).json();
    expect(paused).toMatchObject({ status: "paused", canonical_id: `builtin.${BUILTIN}` });
    hub.delayMs = 0;

    // A registration now holds the bare name: NAME is the user's model, the built-in is builtin.NAME.
    expect((await post("/v1/pull", { model_name: `user.${BUILTIN}`, checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" })).status).toBe(200);
    expect((await (await fetch(`${s.url}/v1/models/${BUILTIN}`)).json()).canonical_id).toBe(`user.${BUILTIN}`);

    // lemond's /pull checks every name against the reserved prefixes, with or without a definition.
    for (const name of [`builtin.${BUILTIN}`, `extra.${BUILTIN}`]) {
      const refused = await post("/v1/pull", { model_name: name });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(await refused.json())).toContain("reserved");
    }
    // Any other dotted prefix is part of a bare name, which names nothing here.
    const unknown = await post("/v1/pull", { model_name: `local.${BUILTIN}` });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(await unknown.json())).toContain("unknown_model");

    // Ollama's pull takes any name a model answers to: builtin.NAME reaches the built-in, from where it stopped.
    const ranges = hub.ranges.get("Qwen3-0.6B-Q4_0.gguf")!.length;
    const lines = (await (await post("/api/pull", { model: `builtin.${BUILTIN}` })).text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.at(-1)).toEqual({ status: "success" });
    const resumed = hub.ranges.get("Qwen3-0.6B-Q4_0.gguf")!.slice(ranges);
    expect(resumed).toHaveLength(1);
    expect(Number(/bytes=(\d+)-/.exec(resumed[0]!)![1])).toBeGreaterThan(0);
    expect(readFileSync(join(builtinDir(s), "blobs", sha256(big)))).toEqual(Buffer.from(big));
    expect((await (await fetch(`${s.url}/v1/models/builtin.${BUILTIN}`)).json()).downloaded).toBe(true);
    expect(hub.ranges.get("tiny-Q4_0.gguf")).toHaveLength(1);

    const del = await post("/v1/delete", { model_name: `builtin.${BUILTIN}` });
    expect(del.status).toBe(200);
    expect(existsSync(builtinDir(s))).toBe(false);
    expect(readFileSync(join(repoDir(s), "blobs", sha256(chat)))).toEqual(Buffer.from(chat));
    expect((await (await fetch(`${s.url}/v1/models/${BUILTIN}`)).json()).downloaded).toBe(true);
  });
});

describe("a full disk", () => {
  const pullBig = () => post("/v1/pull", { model_name: "user.Big", checkpoint: "test-org/tiny-GGUF:Q8_0", recipe: "llamacpp" });

  test("a download larger than the free space is refused before a byte is written: 507 naming needed and free bytes", async () => {
    const s = await start();
    hub.claimedSize.set("tiny-Q8_0.gguf", 2 ** 52);
    const res = await pullBig();
    expect(res.status).toBe(507);
    const error = await res.json();
    expect(error.code).toBe("insufficient_storage");
    expect(error.message).toMatch(/needs \d+ more bytes and \d+ are free/);
    expect(hub.ranges.get("tiny-Q8_0.gguf")).toBeUndefined();
    expect(existsSync(join(repoDir(s), "blobs")) ? readdirSync(join(repoDir(s), "blobs")) : []).toEqual([]);
  });

  test("the disk filling up mid-download is a 507, the partial is removed, and the next pull succeeds", async () => {
    const s = await start();
    // The partial file is a link to /dev/full, where every write fails with ENOSPC.
    const blobs = join(repoDir(s), "blobs");
    mkdirSync(blobs, { recursive: true });
    const partial = join(blobs, `${sha256(big)}.incomplete`);
    symlinkSync("/dev/full", partial);
    const res = await pullBig();
    expect(res.status).toBe(507);
    expect((await res.json()).code).toBe("insufficient_storage");
    expect(existsSync(partial) || lstatExists(partial)).toBe(false);
    expect((await pullBig()).status).toBe(200);
    expect((await (await fetch(`${s.url}/v1/models/user.Big`)).json()).downloaded).toBe(true);
  });

  test("cancel deletes the partial of a job that already stopped on an error", async () => {
    const s = await start();
    hub.dropOnce.set("tiny-Q8_0.gguf", 500_000);
    await post("/v1/pull", { model_name: "user.Job", checkpoint: "test-org/tiny-GGUF:Q8_0", recipe: "llamacpp", stream: true, subscribe: false });
    const deadline = Date.now() + 10_000;
    let status = "";
    while (Date.now() < deadline && status !== "error") {
      status = (await (await fetch(`${s.url}/v1/downloads`)).json())[0]?.status;
      await Bun.sleep(20);
    }
    expect(status).toBe("error");
    expect(readdirSync(join(repoDir(s), "blobs")).some((f) => f.endsWith(".incomplete"))).toBe(true);
    const cancelled = await (await post("/v1/downloads/control", { id: "model:user.Job", action: "cancel" })).json();
    expect(cancelled.status).toBe("cancelled");
    expect(readdirSync(join(repoDir(s), "blobs"))).toEqual([]);
  });
});

function lstatExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

describe("state files", () => {
  test("a corrupt user_models.json stops start-up with a message and is left as it was", async () => {
    const cacheDir = tempDir();
    writeFileSync(join(cacheDir, "user_models.json"), '{"Tiny": {"checkpoint": ');
    await expect(startTestServer({ HF_ENDPOINT: hub.url }, cacheDir)).rejects.toThrow(/user_models\.json is not valid JSON/);
    expect(readFileSync(join(cacheDir, "user_models.json"), "utf8")).toBe('{"Tiny": {"checkpoint": ');
  });

  test("delete removes a user model's files and its registration", async () => {
    const s = await start();
    await post("/v1/pull", { model_name: "user.Gone", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" });
    await post("/v1/load", { model_name: "user.Gone" });
    const res = await post("/v1/delete", { model_name: "user.Gone" });
    expect(await res.json()).toEqual({ status: "success", message: "Deleted model: user.Gone" });
    expect((await (await fetch(`${s.url}/v1/health`)).json()).all_models_loaded).toEqual([]);
    expect(existsSync(repoDir(s))).toBe(false);
    expect((await fetch(`${s.url}/v1/models/user.Gone`)).status).toBe(404);
    expect(JSON.parse(readFileSync(join(s.cacheDir, "user_models.json"), "utf8"))).toEqual({});
  });
});
