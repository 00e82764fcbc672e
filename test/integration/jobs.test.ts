// The Job Engine API (lemonade.md "Job Engine API", docs/dev/job-system.md) on a server whose
// llama.cpp models run on the FAKE llama-server: steps passing data forward, branches, skips and
// recoveries, pause / interrupt / resume / delete, the exclusive gate, the job cap, model custody,
// and durability across a restart and a `kill -9`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { jobs as spec } from "../../spec/index.ts";
import { freePort } from "../../engines/process.ts";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { FAKE_DIR, startFakeServer } from "../helpers/fake-engine.ts";
import { expectMatches, startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

type Any = Record<string, any>;

function client(url: string) {
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Any }> => {
    const res = await fetch(url + path, { method, ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}) });
    return { status: res.status, body: (await res.json()) as Any };
  };
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 15000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

const slowChat = (ms: number) => ({ model: "extra.a", messages: [{ role: "user", content: "hi" }], max_tokens: 4, fake: { ttft_ms: ms } });

describe("jobs on one server", () => {
  let server: TestServer;
  let call: ReturnType<typeof client>;
  const job = (id: string) => call("GET", `/v1/jobs/${id}`).then((r) => r.body);
  const stepOf = (j: Any, id: string) => j.steps.find((s: Any) => s.id === id);
  // Health names each model by its listed id: these extra models' bare names.
  const loaded = async () => ((await call("GET", "/v1/health")).body.all_models_loaded as Any[]).map((m) => ({ model: m.model_name, pinned: m.pinned === true }));
  const settled = (id: string, status: string) => until(`job ${id} ${status}`, async () => ((await job(id)).status === status ? job(id) : undefined));
  const create = async (body: unknown) => {
    const r = await call("POST", "/v1/jobs", body);
    expect(r.status).toBe(202);
    return r.body.id as string;
  };

  beforeAll(async () => {
    server = await startFakeServer(["a", "b"], { LEMONADE_MAX_LOADED_MODELS: "3" });
    call = client(server.url);
  });
  afterAll(() => server.close());

  test("steps pass data forward, branch, skip and recover; progress counts the handled failure", async () => {
    const id = await create({
      name: "flow",
      inputs: { model: "extra.a", ctx: 2048, floor: 1 },
      definition: {
        steps: [
          { id: "info", op: "system_info", extract: { cores: "devices.cpu.cores" } },
          { id: "load", op: "load", params: { model: "${inputs.model}", ctx_size: "${inputs.ctx}" } },
          { id: "run", op: "chat", params: { model: "${inputs.model}", messages: [{ role: "user", content: "ctx ${inputs.ctx}" }], max_tokens: 3 }, extract: { tps: "timings.predicted_per_second", text: "choices.0.message.content" } },
          { id: "tok", op: "tokenize", params: { content: "${text}" }, extract: { ntok: "tokens" } },
          { id: "fast", op: "sleep", params: { ms: 1 }, branch: [{ when: "${tps} > ${inputs.floor}", goto: "bad_load" }] },
          { id: "never", op: "sleep", params: { ms: 1 } },
          { id: "bad_load", op: "load", params: { model: "no-such-model" }, on_fail: "recover" },
          { id: "skipped", op: "sleep", params: { ms: 1 }, when: "${tps} < 0" },
          { id: "recover", op: "models", params: { id: "${inputs.model}" } },
          { id: "guarded", op: "sleep", params: { ms: 1 }, when: "${recover.id} == 'extra.a'" },
        ],
      },
    });
    expect(id).toMatch(/^job-\d{8}-\d{6}-\d{6}$/);
    const done = await settled(id, "completed");
    expectMatches(spec.jobsGet.response, done);
    expect(typeof done.context.cores).toBe("number");
    expect(done.context.inputs).toEqual({ model: "extra.a", ctx: 2048, floor: 1 });
    expect(stepOf(done, "load").output).toMatchObject({ loaded: true, model: "extra.a", ctx_size: 2048 });
    expect(typeof done.context.tps).toBe("number");
    expect(done.context.text).toBe(stepOf(done, "run").output.choices[0].message.content);
    expect(stepOf(done, "run").output.timings).toBeDefined();
    expect(Array.isArray(done.context.ntok)).toBe(true);
    expect(stepOf(done, "never").status).toBe("skipped");
    expect(stepOf(done, "bad_load")).toMatchObject({ status: "failed", failure_handled: true });
    expect(stepOf(done, "bad_load").error).toContain("no-such-model");
    expect(stepOf(done, "skipped").status).toBe("skipped");
    expect(stepOf(done, "recover").output.id).toBe("extra.a");
    expect(stepOf(done, "guarded").status).toBe("completed");
    expect(done.cursor).toBe("");

    const list = await call("GET", "/v1/jobs");
    expectMatches(spec.jobsList.response, list.body);
    const mine = list.body.jobs.find((j: Any) => j.id === id);
    expect(mine.progress).toEqual({ cursor: "", completed: 10, step_count: 10 });
    // The job committed its load: the model stays.
    expect((await loaded()).map((m) => m.model)).toContain("a");
  });

  test("every API prefix answers, and a failed step without on_fail fails the job", async () => {
    const r = await call("POST", "/api/v1/jobs", { steps: [{ id: "s", op: "sleep", params: { ms: 1 } }, { id: "bad", op: "chat", params: { model: "no-such-model", messages: [] } }] });
    expect(r.status).toBe(202);
    const failed = await settled(r.body.id, "failed");
    expect(failed.error).toContain("no-such-model");
    expect((await call("GET", `/v0/jobs/${r.body.id}`)).status).toBe(200);
    expect(failed.finished_at).toBeDefined();
  });

  test("an invalid step graph is a 400; an unknown job a 404", async () => {
    const bad = [
      { steps: [] },
      {},
      { steps: [{ id: "a", op: "fly" }] },
      { steps: [{ id: "a", op: "sleep" }, { id: "b", op: "sleep", on_done: "a" }] },
      { steps: [{ id: "a", op: "sleep", when: "1 < 2 < 3" }] },
      { steps: [{ id: "a", op: "sleep" }, { id: "a", op: "sleep" }] },
      { steps: [{ id: "a", op: "sleep", on_fail: "zz" }] },
    ];
    for (const body of bad) {
      const r = await call("POST", "/v1/jobs", body);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe("invalid_job");
    }
    for (const [method, path] of [["GET", ""], ["POST", "/pause"], ["POST", "/interrupt"], ["POST", "/resume"], ["DELETE", ""]] as const) {
      const r = await call(method, `/v1/jobs/job-nope${path}`);
      expect(r.status).toBe(404);
      expect(r.body.code).toBe("job_not_found");
    }
  });

  test("pause stops after the current step; resume goes on with the next", async () => {
    const id = await create({ steps: [{ id: "one", op: "sleep", params: { ms: 400 } }, { id: "two", op: "sleep", params: { ms: 1 } }] });
    await until("step one running", async () => stepOf(await job(id), "one").status === "running");
    expect((await call("POST", `/v1/jobs/${id}/pause`)).body).toEqual({ status: "pausing" });
    const paused = await settled(id, "paused");
    expect(stepOf(paused, "one").status).toBe("completed");
    expect(stepOf(paused, "two").status).toBe("pending");
    expect(paused.cursor).toBe("two");
    expect((await call("POST", `/v1/jobs/${id}/pause`)).status).toBe(404);
    expect((await call("POST", `/v1/jobs/${id}/resume`)).body).toEqual({ status: "resuming" });
    await settled(id, "completed");
    expect((await call("POST", `/v1/jobs/${id}/resume`)).body.code).toBe("job_not_resumable");
  });

  test("a tokenize waits behind an exclusive job, and runs once it ends", async () => {
    const id = await create({ steps: [{ id: "load", op: "load", params: { model: "extra.a" } }, { id: "chat", op: "chat", params: slowChat(1500) }] });
    await until("the chat step running", async () => stepOf(await job(id), "chat").status === "running");
    const tokenized = await call("POST", "/v1/tokenize", { content: "hello world" });
    expect(tokenized.status).toBe(200);
    // The tokenize was answered only after the job had let go of the model slot.
    expect((await job(id)).status).toBe("completed");
  });

  test("interrupt cancels the step now and unloads only what the job loaded; a pinned model stays; resume loads it again", async () => {
    await call("POST", "/v1/unload", {});
    expect((await call("POST", "/v1/load", { model_name: "extra.b", pinned: true })).status).toBe(200);
    const id = await create({ steps: [{ id: "load", op: "load", params: { model: "extra.a" } }, { id: "chat", op: "chat", params: slowChat(1500) }] });
    await until("the chat step running", async () => stepOf(await job(id), "chat").status === "running");
    expect((await call("POST", `/v1/jobs/${id}/interrupt`)).body).toEqual({ status: "interrupting" });
    const interrupted = await settled(id, "interrupted");
    expect(stepOf(interrupted, "chat").status).toBe("pending");
    expect(interrupted.cursor).toBe("chat");
    await until("extra.a unloaded", async () => !(await loaded()).some((m) => m.model === "a"));
    expect(await loaded()).toEqual([{ model: "b", pinned: true }]);

    await call("POST", `/v1/jobs/${id}/resume`);
    const done = await settled(id, "completed");
    expect(stepOf(done, "chat").output.choices).toBeDefined();
    expect((await loaded()).map((m) => m.model).sort()).toEqual(["a", "b"]);
  });

  test("a same-named model loaded outside the job while it is interrupted is adopted on resume, and survives the job's next interrupt", async () => {
    await call("POST", "/v1/unload", {});
    const id = await create({ steps: [{ id: "load", op: "load", params: { model: "extra.a" } }, { id: "c1", op: "chat", params: slowChat(1500) }, { id: "c2", op: "chat", params: slowChat(1500) }] });
    await until("c1 running", async () => stepOf(await job(id), "c1").status === "running");
    await call("POST", `/v1/jobs/${id}/interrupt`);
    await settled(id, "interrupted");
    await until("extra.a unloaded", async () => !(await loaded()).some((m) => m.model === "a"));
    // Someone else loads it meanwhile.
    expect((await call("POST", "/v1/load", { model_name: "extra.a" })).status).toBe(200);
    const pid = (await call("GET", "/v1/health")).body.all_models_loaded[0].pid;
    await call("POST", `/v1/jobs/${id}/resume`);
    await until("c2 running", async () => stepOf(await job(id), "c2").status === "running");
    await call("POST", `/v1/jobs/${id}/interrupt`);
    await settled(id, "interrupted");
    const after = (await call("GET", "/v1/health")).body.all_models_loaded;
    expect(after.map((m: Any) => [m.model_name, m.pid])).toEqual([["a", pid]]);
    await call("DELETE", `/v1/jobs/${id}`);
  });

  test("pause keeps the job's model loaded; deleting the paused job unloads it", async () => {
    await call("POST", "/v1/unload", {});
    const id = await create({ steps: [{ id: "load", op: "load", params: { model: "extra.a" } }, { id: "wait", op: "sleep", params: { ms: 400 } }, { id: "end", op: "sleep", params: { ms: 1 } }] });
    await until("the wait step running", async () => stepOf(await job(id), "wait").status === "running");
    await call("POST", `/v1/jobs/${id}/pause`);
    await settled(id, "paused");
    expect((await loaded()).map((m) => m.model)).toEqual(["a"]);
    await call("DELETE", `/v1/jobs/${id}`);
    expect((await call("GET", `/v1/jobs/${id}`)).status).toBe(404);
    await until("extra.a unloaded", async () => (await loaded()).length === 0);
  });

  test("deleting an active job hides it at once and unloads the model it loaded", async () => {
    await call("POST", "/v1/unload", {});
    const id = await create({ steps: [{ id: "load", op: "load", params: { model: "extra.a" } }, { id: "chat", op: "chat", params: slowChat(3000) }] });
    await until("the chat step running", async () => stepOf(await job(id), "chat").status === "running");
    expect((await call("DELETE", `/v1/jobs/${id}`)).body).toEqual({ status: "deleted" });
    expect((await call("GET", `/v1/jobs/${id}`)).status).toBe(404);
    expect((await call("GET", "/v1/jobs")).body.jobs.some((j: Any) => j.id === id)).toBe(false);
    await until("extra.a unloaded", async () => (await loaded()).length === 0);
  });

  test("a full store of active jobs refuses a new one with 429 until one goes", async () => {
    const live = (await call("GET", "/v1/jobs")).body.jobs.filter((j: Any) => j.status !== "completed" && j.status !== "failed").length;
    expect(live).toBe(0);
    // Finished jobs are evicted to make room; active ones are not.
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await create({ steps: [{ id: "wait", op: "sleep", params: { ms: 60000 } }] }));
    const refused = await call("POST", "/v1/jobs", { steps: [{ id: "s", op: "sleep" }] });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe("job_limit");
    expect((await call("GET", "/v1/jobs")).body.jobs).toHaveLength(50);
    // A queued job deleted makes room.
    await call("DELETE", `/v1/jobs/${ids[49]}`);
    const next = await create({ steps: [{ id: "s", op: "sleep", params: { ms: 1 } }] });
    for (const id of [...ids.slice(0, 49), next]) await call("DELETE", `/v1/jobs/${id}`);
    expect((await call("GET", "/v1/jobs")).body.jobs).toHaveLength(0);
  });
});

describe("durability", () => {
  test("a restart keeps every job; the one running is interrupted at its step and resumes from there", async () => {
    const first = await startTestServer({}, undefined, { engines: false });
    const call = client(first.url);
    const created = await call("POST", "/v1/jobs", { name: "long", steps: [{ id: "one", op: "sleep", params: { ms: 1 } }, { id: "two", op: "sleep", params: { ms: 60000 } }, { id: "three", op: "sleep", params: { ms: 1 } }] });
    const done = await call("POST", "/v1/jobs", { steps: [{ id: "x", op: "sleep", params: { ms: 1 } }] });
    const id = created.body.id;
    await until("step two running", async () => (await call("GET", `/v1/jobs/${id}`)).body.steps[1].status === "running");
    await first.close(true);

    const second = await startTestServer({}, first.cacheDir, { engines: false });
    try {
      const again = client(second.url);
      const job = (await again("GET", `/v1/jobs/${id}`)).body;
      expect(job.status).toBe("interrupted");
      expect(job.cursor).toBe("two");
      expect(job.steps.map((s: Any) => s.status)).toEqual(["completed", "pending", "pending"]);
      expect((await again("GET", "/v1/jobs")).body.jobs.map((j: Any) => j.id)).toContain(done.body.id);
      await again("POST", `/v1/jobs/${id}/resume`);
      await until("step two running again", async () => (await again("GET", `/v1/jobs/${id}`)).body.steps[1].status === "running");
      await again("DELETE", `/v1/jobs/${id}`);
    } finally {
      await second.close();
    }
  });

  test("a tombstoned job in jobs.json is dropped at start", async () => {
    const server = await startTestServer({}, undefined, { engines: false });
    const cacheDir = server.cacheDir;
    await server.close(true);
    const step = { id: "s", op: "sleep", params: {}, status: "running", duration_ms: 0 };
    const rec = (id: string, extra: Any) => ({ id, name: "", status: "running", inputs: {}, context: { inputs: {} }, steps: [step], cursor: "s", created_at: "2026-01-01T00:00:00.000Z", ...extra });
    writeFileSync(join(cacheDir, "jobs.json"), JSON.stringify({ version: 1, jobs: [rec("job-gone", { deleted: true }), rec("job-kept", {})] }));
    const again = await startTestServer({}, cacheDir, { engines: false });
    try {
      const list = (await client(again.url)("GET", "/v1/jobs")).body.jobs;
      expect(list.map((j: Any) => [j.id, j.status])).toEqual([["job-kept", "interrupted"]]);
      const file = JSON.parse(await Bun.file(join(cacheDir, "jobs.json")).text());
      expect(file.jobs.map((j: Any) => j.id)).toEqual(["job-kept"]);
    } finally {
      await again.close();
    }
  });

  test("after a kill -9 mid-job the job is interrupted and resumable, and a job deleted while active stays deleted", async () => {
    const root = join(import.meta.dir, "..", "..");
    const cacheDir = tempDir();
    const serve = (port: number) =>
      Bun.spawn([process.execPath, "cli/main.ts", "serve", "--port", String(port)], {
        cwd: root,
        env: { ...process.env, LEMONADE_CACHE_DIR: cacheDir, HF_ENDPOINT: "http://127.0.0.1:9", PATH: `${FAKE_DIR}:${process.env.PATH ?? ""}` },
        stdout: "ignore",
        stderr: "pipe",
      });
    const port = freePort();
    const first = serve(port);
    const url = `http://127.0.0.1:${port}`;
    await until("the server", async () => (await fetch(`${url}/live`).catch(() => null))?.ok, 20000);
    const call = client(url);
    const kept = (await call("POST", "/v1/jobs", { steps: [{ id: "a", op: "sleep", params: { ms: 1 } }, { id: "b", op: "sleep", params: { ms: 60000 } }] })).body.id;
    const gone = (await call("POST", "/v1/jobs", { steps: [{ id: "q", op: "sleep", params: { ms: 60000 } }] })).body.id;
    await until("step b running", async () => (await call("GET", `/v1/jobs/${kept}`)).body.steps[1].status === "running");
    // The queued job is paused (durable at once), then deleted: a tombstone, then the worker's erase.
    await call("POST", `/v1/jobs/${gone}/pause`);
    expect((await call("DELETE", `/v1/jobs/${gone}`)).status).toBe(200);
    first.kill("SIGKILL");
    await first.exited;

    const port2 = freePort();
    const second = serve(port2);
    try {
      const url2 = `http://127.0.0.1:${port2}`;
      await until("the second server", async () => (await fetch(`${url2}/live`).catch(() => null))?.ok, 20000);
      const again = client(url2);
      const list = (await again("GET", "/v1/jobs")).body.jobs;
      expect(list.map((j: Any) => j.id)).toEqual([kept]);
      const job = (await again("GET", `/v1/jobs/${kept}`)).body;
      expect(job.status).toBe("interrupted");
      expect(job.error).toContain("restarted");
      expect(job.cursor).toBe("b");
      expect((await again("GET", `/v1/jobs/${gone}`)).status).toBe(404);
      expect((await again("POST", `/v1/jobs/${kept}/resume`)).status).toBe(200);
      await until("b running again", async () => (await again("GET", `/v1/jobs/${kept}`)).body.steps[1].status === "running");
    } finally {
      second.kill("SIGTERM");
      await second.exited;
    }
  });
});

describe("on the real engine", () => {
  test("a chat step on the tiny model passes its timings on, and an embeddings step runs", async () => {
    const extra = tempDir("lemonade-extra-");
    for (const f of [MODELS.chat, MODELS.embed]) copyFileSync(join(testModelsDir(), f), join(extra, f));
    const server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MAX_LOADED_MODELS: "-1" });
    try {
      const call = client(server.url);
      const created = await call("POST", "/v1/jobs", {
        inputs: { model: "extra.tiny-chat" },
        steps: [
          { id: "load", op: "load", params: { model: "${inputs.model}", ctx_size: 512 } },
          { id: "run", op: "chat", params: { model: "${inputs.model}", messages: [{ role: "user", content: "hi" }], max_completion_tokens: 4, temperature: 0 }, extract: { n: "usage.completion_tokens", tps: "timings.predicted_per_second" } },
          { id: "emb", op: "embeddings", params: { model: "extra.tiny-embed", input: "hello" }, when: "${n} > 0", extract: { vec: "data.0.embedding" } },
        ],
      });
      expect(created.status).toBe(202);
      const job = await until("the job", async () => {
        const j = (await call("GET", `/v1/jobs/${created.body.id}`)).body;
        return j.status === "completed" || j.status === "failed" ? j : undefined;
      }, 60000);
      expect(job.error).toBeUndefined();
      expect(job.status).toBe("completed");
      expect(job.context.n).toBeGreaterThan(0);
      expect(typeof job.context.tps).toBe("number");
      expect(job.context.vec.length).toBeGreaterThan(0);
      expect(job.steps[0].output.ctx_size).toBe(512);
    } finally {
      await server.close();
    }
  }, 90000);
});
