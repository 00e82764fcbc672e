// The scheduler on FAKE engines (real processes of scripts/fake-engine/llama-server): ordering and
// batching under contention, draining, pinning, clients that leave, crashes, slow and failing starts.
// The same rules on an in-memory engine and a fake clock are test/unit/scheduler.test.ts.
import { afterEach, expect, test } from "bun:test";
import { ApiError } from "../../lib/api-error.ts";
import { systemClock } from "../../lib/clock.ts";
import type { Scheduler } from "../../runtime/scheduler.ts";
import { fakeScheduler, launchFake, type FakeModel } from "../helpers/fake-engine.ts";

let scheduler: Scheduler<FakeModel> | undefined;
afterEach(async () => {
  await scheduler?.shutdown();
  scheduler = undefined;
});

const model = (id: string, type = "llm", flags?: string[]): FakeModel => ({ id, type, flags });

/** One request as the proxy makes it: claim the model, stream a short answer, release. */
async function request(s: Scheduler<FakeModel>, m: FakeModel, tokens = 5): Promise<string> {
  const lease = await s.acquire(m);
  try {
    const res = await fetch(`${lease.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ stream: true, max_tokens: tokens, fake: { token_ms: 2 } }),
    });
    const text = await res.text();
    if (!text.includes("[DONE]")) throw new Error(`stream from ${m.id} ended early`);
    return m.id;
  } finally {
    lease.release();
  }
}

test("two models, one instance, 16 alternating concurrent requests: all answer, in batches, with few engine starts", async () => {
  scheduler = fakeScheduler(1);
  const [a, b] = [model("a"), model("b")];
  const started = performance.now();
  const done = await Promise.all(Array.from({ length: 16 }, (_, i) => request(scheduler!, i % 2 ? b : a)));
  expect(done.filter((id) => id === "a")).toHaveLength(8);
  expect(done.filter((id) => id === "b")).toHaveLength(8);
  // The arrival order forces one switch: a's batch, then b's.
  expect(scheduler.starts).toBe(2);
  expect(performance.now() - started).toBeLessThan(15_000);
  console.log(`2 models x 16 requests: ${scheduler.starts} engine starts in ${Math.round(performance.now() - started)} ms`);
});

test("three models, one instance, 30 concurrent requests: all answer with one start per model", async () => {
  scheduler = fakeScheduler(1);
  const models = [model("a"), model("b"), model("c")];
  const started = performance.now();
  const done = await Promise.all(Array.from({ length: 30 }, (_, i) => request(scheduler!, models[i % 3]!)));
  expect(done).toHaveLength(30);
  expect(scheduler.starts).toBe(3);
  console.log(`3 models x 30 requests: ${scheduler.starts} engine starts in ${Math.round(performance.now() - started)} ms`);
});

test("requests arriving while a model is evicted wait behind the model that evicts it", async () => {
  scheduler = fakeScheduler(1);
  const [a, b] = [model("a"), model("b")];
  const first = await scheduler.acquire(a);
  const order: string[] = [];
  const forB = scheduler.acquire(b).then((l) => (order.push("b"), l));
  await Bun.sleep(20);
  // a is draining for b: a new request for a must not extend a's turn.
  const againA = scheduler.acquire(a).then((l) => (order.push("a"), l));
  await Bun.sleep(50);
  expect(order).toEqual([]);
  expect(scheduler.list().map((s) => [s.model.id, s.state])).toEqual([["a", "draining"]]);
  first.release();
  const leaseB = await forB;
  expect(order).toEqual(["b"]);
  leaseB.release();
  (await againA).release();
  expect(order).toEqual(["b", "a"]);
  expect(scheduler.starts).toBe(3);
});

test("a request whose client leaves while it waits starts no load", async () => {
  scheduler = fakeScheduler(1);
  const held = await scheduler.acquire(model("a"));
  const client = new AbortController();
  const waiting = scheduler.acquire(model("b"), { signal: client.signal });
  await Bun.sleep(20);
  client.abort();
  const err = await waiting.catch((e) => e);
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe("client_closed");
  expect(scheduler.queued).toBe(0);
  held.release();
  await Bun.sleep(100);
  expect(scheduler.starts).toBe(1);
});

test("when every resident model is pinned a load is refused with 409, and the pinned model stays", async () => {
  scheduler = fakeScheduler(1);
  await scheduler.load(model("a"), { pinned: true });
  const err = await scheduler.acquire(model("b")).catch((e) => e);
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).status).toBe(409);
  expect((err as ApiError).code).toBe("slots_pinned_error");
  expect(scheduler.list().map((s) => s.model.id)).toEqual(["a"]);
});

test("types have their own room: an embedding model loads beside an LLM with max_loaded_models=1", async () => {
  scheduler = fakeScheduler(1);
  await scheduler.load(model("chat"));
  await scheduler.load(model("embed", "embedding"));
  expect(scheduler.list().map((s) => s.model.id).sort()).toEqual(["chat", "embed"]);
});

test("an engine that dies is forgotten, and the next request starts a new one", async () => {
  scheduler = fakeScheduler(1);
  const instance = await scheduler.load(model("a"));
  const pid = instance.engine.pid;
  process.kill(pid, "SIGKILL");
  await instance.gone.promise;
  expect(scheduler.list()).toEqual([]);
  expect(await request(scheduler, model("a"))).toBe("a");
  expect(scheduler.list()[0]!.engine.pid).not.toBe(pid);
  expect(scheduler.starts).toBe(2);
});

test("requests for a model that starts slowly wait for its one load", async () => {
  scheduler = fakeScheduler(1);
  const slow = model("slow", "llm", ["--fake-start-ms", "400"]);
  const started = performance.now();
  const done = await Promise.all(Array.from({ length: 5 }, () => request(scheduler!, slow)));
  expect(done).toEqual(Array(5).fill("slow"));
  expect(performance.now() - started).toBeGreaterThanOrEqual(400);
  expect(scheduler.starts).toBe(1);
});

test("an engine that never passes its health check fails every waiting request, and the scheduler goes on", async () => {
  scheduler = fakeScheduler(1, {}, { start: (m) => launchFake(m, 600) });
  const sick = model("sick", "llm", ["--fake-health-fail"]);
  const results = await Promise.allSettled([scheduler.acquire(sick), scheduler.acquire(sick)]);
  expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
  expect(String((results[0] as PromiseRejectedResult).reason)).toContain("not ready");
  expect(scheduler.list()).toEqual([]);
  expect(await request(scheduler, model("well"))).toBe("well");
});

test("an explicit load with other options reloads the model; with the same ones it keeps the engine", async () => {
  let ctx = 4096;
  scheduler = fakeScheduler(1, { resolve: () => ({ options: {}, ctxSize: ctx }) });
  const first = await scheduler.load(model("a"));
  expect((await scheduler.load(model("a"))).engine.pid).toBe(first.engine.pid);
  ctx = 2048;
  const second = await scheduler.load(model("a"));
  expect(second.engine.pid).not.toBe(first.engine.pid);
  expect(second.spec.ctxSize).toBe(2048);
  expect(scheduler.starts).toBe(2);
});

test("with auto_evict off (the default) an idle model stays loaded past evict_idle_timeout", async () => {
  let now = 1_000_000;
  scheduler = fakeScheduler(1, {
    resolve: () => ({ options: { evict_idle_timeout: 60, auto_evict: null }, ctxSize: 4096 }),
    idleCheckMs: 10,
  }, { clock: { ...systemClock, now: () => now } });
  await scheduler.load(model("a"));
  now += 61_000;
  await Bun.sleep(60);
  expect(scheduler.list()).toHaveLength(1);
});

test("with auto_evict on, a model idle past evict_idle_timeout is unloaded on the scheduler's clock", async () => {
  let now = 1_000_000;
  scheduler = fakeScheduler(1, {
    resolve: () => ({ options: { evict_idle_timeout: 60, auto_evict: true }, ctxSize: 4096 }),
    idleCheckMs: 10,
  }, { clock: { ...systemClock, now: () => now } });
  const instance = await scheduler.load(model("a"));
  await Bun.sleep(50);
  expect(scheduler.list()).toHaveLength(1);
  now += 61_000;
  await instance.gone.promise;
  expect(scheduler.list()).toEqual([]);
});
