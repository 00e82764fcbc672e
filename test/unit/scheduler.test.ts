// The scheduler on the in-memory engine and a fake clock (test/helpers/memory-engine.ts): ordering
// and batching under contention, draining, pinning, clients that leave, crashes, slow and failing
// starts, idle eviction and memory admission. Every start, stop and tick happens when the test
// says; `settle` lets the scheduler reach a rest before the test looks. The same rules on FAKE
// engine processes are test/integration/scheduler-processes.test.ts.
import { expect, test } from "bun:test";
import { ApiError } from "../../lib/api-error.ts";
import type { LoadSpec } from "../../models/recipe-options.ts";
import type { Lease, SchedulableModel } from "../../runtime/scheduler.ts";
import { settle } from "../helpers/fake-clock.ts";
import { memoryScheduler } from "../helpers/memory-engine.ts";

const model = (id: string, type = "llm"): SchedulableModel => ({ id, type });
const GB = 1024 ** 3;

/** Claims a model and notes, in `granted`, the order in which leases are handed out. */
function claimer(granted: string[]) {
  return (s: ReturnType<typeof memoryScheduler>["scheduler"], m: SchedulableModel, signal?: AbortSignal) =>
    s.acquire(m, { signal }).then((lease) => (granted.push(m.id), lease));
}

test("two models, one room, 16 alternating requests: a's batch, then b's, with two starts", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  const granted: string[] = [];
  const claim = claimer(granted);
  const [a, b] = [model("a"), model("b")];
  const leases = Array.from({ length: 16 }, (_, i) => claim(scheduler, i % 2 ? b : a));
  await settle();
  expect(engines.startsAsked).toEqual(["a"]);
  engines.starting("a").ready();
  await settle();
  // Every request for a gets its lease at once; b waits for a to drain.
  expect(granted).toEqual(Array(8).fill("a"));
  expect(scheduler.list().map((s) => [s.model.id, s.state])).toEqual([["a", "draining"]]);
  const aLeases = await Promise.all(leases.filter((_, i) => i % 2 === 0));
  aLeases.slice(1).forEach((l) => l.release());
  await settle();
  // One request still in flight: eviction never aborts it.
  expect(engines.stopsAsked).toEqual([]);
  aLeases[0]!.release();
  await settle();
  expect(engines.stopsAsked).toEqual(["a"]);
  engines.starting("b").ready();
  await settle();
  expect(granted).toEqual([...Array(8).fill("a"), ...Array(8).fill("b")]);
  expect(scheduler.starts).toBe(2);
});

test("three models, one room, 30 requests: one start per model, in arrival order", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  const models = [model("a"), model("b"), model("c")];
  const leases = Array.from({ length: 30 }, (_, i) =>
    scheduler.acquire(models[i % 3]!).then((lease) => {
      // Each request ends once the next turn of the loop comes, as a short answer would.
      void settle().then(() => lease.release());
      return lease.instance.model.id;
    }),
  );
  expect((await Promise.all(leases)).sort()).toEqual([...Array(10).fill("a"), ...Array(10).fill("b"), ...Array(10).fill("c")]);
  expect(engines.startsAsked).toEqual(["a", "b", "c"]);
});

test("requests arriving while a model is evicted wait behind the model that evicts it", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  const granted: string[] = [];
  const claim = claimer(granted);
  const [a, b] = [model("a"), model("b")];
  const first = scheduler.acquire(a);
  await settle();
  engines.starting("a").ready();
  const held = await first;
  const forB = claim(scheduler, b);
  await settle();
  // a is draining for b: a new request for a must not extend a's turn.
  const againA = claim(scheduler, a);
  await settle();
  expect(granted).toEqual([]);
  expect(scheduler.list().map((s) => [s.model.id, s.state])).toEqual([["a", "draining"]]);
  held.release();
  await settle();
  engines.starting("b").ready();
  const leaseB = await forB;
  expect(granted).toEqual(["b"]);
  leaseB.release();
  await settle();
  engines.starting("a").ready();
  (await againA).release();
  expect(granted).toEqual(["b", "a"]);
  expect(engines.startsAsked).toEqual(["a", "b", "a"]);
});

test("a load waits until the model it evicts has stopped", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  (await scheduler.acquire(model("a"))).release();
  engines.holdStops = true;
  const forB = scheduler.acquire(model("b"));
  await settle();
  expect(engines.stopsAsked).toEqual(["a"]);
  expect(engines.startsAsked).toEqual(["a"]);
  engines.heldStops[0]!.finishStop();
  (await forB).release();
  expect(engines.startsAsked).toEqual(["a", "b"]);
});

test("a request whose client leaves while it waits starts no load", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  const held = await scheduler.acquire(model("a"));
  const client = new AbortController();
  const waiting = scheduler.acquire(model("b"), { signal: client.signal });
  await settle();
  expect(scheduler.queued).toBe(1);
  client.abort();
  const err = await waiting.catch((e) => e);
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe("client_closed");
  expect(scheduler.queued).toBe(0);
  held.release();
  await settle();
  expect(engines.startsAsked).toEqual(["a"]);
});

test("when every resident model is pinned a load is refused with 409, and the pinned model stays", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  await scheduler.load(model("a"), { pinned: true });
  const err = await scheduler.acquire(model("b")).catch((e) => e);
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).status).toBe(409);
  expect((err as ApiError).code).toBe("slots_pinned_error");
  expect(scheduler.list().map((s) => s.model.id)).toEqual(["a"]);
  expect(engines.startsAsked).toEqual(["a"]);
});

test("types have their own room: an embedding model loads beside an LLM with max_loaded_models=1", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  await scheduler.load(model("chat"));
  await scheduler.load(model("embed", "embedding"));
  expect(scheduler.list().map((s) => s.model.id).sort()).toEqual(["chat", "embed"]);
  expect(engines.stopsAsked).toEqual([]);
});

test("unlimited (-1): every model stays loaded", async () => {
  const { scheduler, engines } = memoryScheduler(-1);
  engines.autoStart = true;
  for (const id of ["a", "b", "c"]) await scheduler.load(model(id));
  expect(scheduler.list().map((s) => s.model.id)).toEqual(["a", "b", "c"]);
});

test("an engine that dies is forgotten and logged, and the next request starts a new one", async () => {
  const { scheduler, engines, logs } = memoryScheduler(1);
  engines.autoStart = true;
  const instance = await scheduler.load(model("a"));
  engines.running.get("a")!.crash(139);
  await instance.gone.promise;
  expect(scheduler.list()).toEqual([]);
  expect(logs.some((l) => l.includes("exited unexpectedly with code 139"))).toBe(true);
  const lease = await scheduler.acquire(model("a"));
  expect(lease.instance.engine.pid).not.toBe(instance.engine.pid);
  expect(engines.startsAsked).toEqual(["a", "a"]);
});

test("a lease that fails (engine dead or hung) stops the engine at once, and the next request starts it again", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  const lease = await scheduler.acquire(model("a"));
  const other = await scheduler.acquire(model("a"));
  await lease.fail();
  expect(engines.stopsAsked).toEqual(["a"]);
  expect(scheduler.list()).toEqual([]);
  other.release();
  (await scheduler.acquire(model("a"))).release();
  expect(engines.startsAsked).toEqual(["a", "a"]);
});

test("requests for a model that starts slowly all wait for its one load", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  const granted: string[] = [];
  const claim = claimer(granted);
  const leases = Array.from({ length: 5 }, () => claim(scheduler, model("slow")));
  await settle();
  expect(scheduler.isLoading("slow")).toBe(true);
  expect(granted).toEqual([]);
  engines.starting("slow").ready();
  expect((await Promise.all(leases)).map((l) => l.instance.model.id)).toEqual(Array(5).fill("slow"));
  expect(engines.startsAsked).toEqual(["slow"]);
});

test("a start that fails fails every request waiting for it, and the scheduler goes on", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  const results = Promise.allSettled([scheduler.acquire(model("sick")), scheduler.acquire(model("sick"))]);
  await settle();
  engines.starting("sick").fail(new Error("sick is not ready"));
  const settled = await results;
  expect(settled.map((r) => r.status)).toEqual(["rejected", "rejected"]);
  expect(String((settled[0] as PromiseRejectedResult).reason)).toContain("not ready");
  expect(scheduler.list()).toEqual([]);
  engines.autoStart = true;
  expect((await scheduler.acquire(model("well"))).instance.model.id).toBe("well");
});

test("an explicit load with other options reloads the model; with the same ones it keeps the engine", async () => {
  let ctx = 4096;
  const { scheduler, engines } = memoryScheduler(1, { resolve: () => ({ options: {}, ctxSize: ctx }) });
  engines.autoStart = true;
  const first = await scheduler.load(model("a"));
  expect((await scheduler.load(model("a"))).engine.pid).toBe(first.engine.pid);
  ctx = 2048;
  const second = await scheduler.load(model("a"));
  expect(second.engine.pid).not.toBe(first.engine.pid);
  expect(second.spec.ctxSize).toBe(2048);
  expect(engines.startsAsked).toEqual(["a", "a"]);
});

const idleSpec = (autoEvict: boolean | null): (() => LoadSpec) => () => ({ options: { evict_idle_timeout: 60, auto_evict: autoEvict }, ctxSize: 4096 });

test("the idle and pressure checks tick only while a model is resident: none before the first load, none once the last one left, by unload or crash", async () => {
  let samples = 0;
  const pressure = { enabled: () => true, threshold: () => 0.9, sample: async () => (samples++, 0.1), everyMs: 2000 };
  const { scheduler, engines, clock } = memoryScheduler(2, { idleCheckMs: 1000, pressure });
  engines.autoStart = true;
  await clock.advance(10_000);
  expect([clock.repeating, samples]).toEqual([0, 0]);
  await scheduler.load(model("a"));
  await scheduler.load(model("b"));
  expect(clock.repeating).toBe(2);
  await clock.advance(4_000);
  expect(samples).toBe(2);
  await scheduler.unloadWhere((s) => s.model.id === "a");
  expect(clock.repeating).toBe(2);
  await scheduler.unloadWhere();
  expect(clock.repeating).toBe(0);
  await clock.advance(10_000);
  expect(samples).toBe(2);
  await scheduler.load(model("a"));
  expect(clock.repeating).toBe(2);
  engines.running.get("a")!.crash();
  await settle();
  expect(clock.repeating).toBe(0);
});

test("with auto_evict off (the default) an idle model stays loaded past evict_idle_timeout", async () => {
  const { scheduler, engines, clock } = memoryScheduler(1, { resolve: idleSpec(null), idleCheckMs: 1000 });
  engines.autoStart = true;
  await scheduler.load(model("a"));
  await clock.advance(600_000);
  await settle();
  expect(scheduler.list()).toHaveLength(1);
  expect(engines.stopsAsked).toEqual([]);
});

test("with auto_evict on, a model idle past evict_idle_timeout is unloaded on the scheduler's clock, not while in use", async () => {
  const { scheduler, engines, clock } = memoryScheduler(1, { resolve: idleSpec(true), idleCheckMs: 1000 });
  engines.autoStart = true;
  await scheduler.load(model("a"));
  await clock.advance(59_000);
  expect(engines.stopsAsked).toEqual([]);
  const lease = await scheduler.acquire(model("a"));
  await clock.advance(120_000);
  // A request in flight keeps it: idle time counts from the request's end.
  expect(engines.stopsAsked).toEqual([]);
  lease.release();
  await clock.advance(59_000);
  expect(engines.stopsAsked).toEqual([]);
  await clock.advance(2_000);
  expect(engines.stopsAsked).toEqual(["a"]);
  await settle();
  expect(scheduler.list()).toEqual([]);
});

test("eviction picks the model idle longest for its load time (evict_idle_timeout aside)", async () => {
  const { scheduler, engines, clock } = memoryScheduler(2);
  const loadIn = async (id: string, ms: number) => {
    const loading = scheduler.load(model(id));
    await settle();
    await clock.advance(ms);
    engines.starting(id).ready();
    await loading;
  };
  // slow took 60 s to load, quick 1 s; slow has been idle longer, but loading it again costs more.
  await loadIn("slow", 60_000);
  await clock.advance(10_000);
  await loadIn("quick", 1_000);
  await clock.advance(5_000);
  const third = scheduler.load(model("third"));
  await settle();
  expect(engines.stopsAsked).toEqual(["quick"]);
  engines.starting("third").ready();
  await third;
  expect(scheduler.list().map((s) => s.model.id).sort()).toEqual(["slow", "third"]);
});

/** Memory of 10 GB shared by every type; each model's need by id. */
function memoryBound(needGb: Record<string, number>, autoEvict: boolean, max = -1) {
  const setup = memoryScheduler(max, {
    resolve: () => ({ options: { auto_evict: autoEvict }, ctxSize: 4096 }),
    memory: (m) => ({
      need: needGb[m.id]! * GB,
      free: (10 - setup.scheduler.list().filter((s) => s.model.id !== m.id).reduce((n, s) => n + needGb[s.model.id]!, 0)) * GB,
    }),
  });
  setup.engines.autoStart = true;
  return setup;
}

test("a load that does not fit in memory is refused with 507 model_load_error naming the GB, and the resident model stays", async () => {
  const { scheduler, engines } = memoryBound({ a: 6, b: 6 }, false);
  await scheduler.load(model("a"));
  const err = await scheduler.acquire(model("b")).catch((e) => e);
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).status).toBe(507);
  expect((err as ApiError).code).toBe("model_load_error");
  expect((err as ApiError).message).toBe("b needs 6.00 GB of memory and 4.00 GB is free; unload a model, or load with auto_evict on to let one be evicted");
  expect(scheduler.list().map((s) => s.model.id)).toEqual(["a"]);
  expect(engines.startsAsked).toEqual(["a"]);
});

test("with auto_evict on, a load that does not fit evicts a model of any type, one at a time, until it fits", async () => {
  const { scheduler, engines, clock } = memoryBound({ a: 4, e: 4, b: 6 }, true);
  await scheduler.load(model("a"));
  await clock.advance(1000);
  await scheduler.load(model("e", "embedding"));
  engines.holdStops = true;
  const forB = scheduler.load(model("b"));
  await settle();
  // a is idle longest; e stays until a's leaving shows whether b fits (it does).
  expect(engines.stopsAsked).toEqual(["a"]);
  engines.heldStops[0]!.finishStop();
  await forB;
  expect(scheduler.list().map((s) => s.model.id).sort()).toEqual(["b", "e"]);
  expect(engines.stopsAsked).toEqual(["a"]);
});

test("a load that cannot fit even with every other model gone is refused once nothing is left to evict", async () => {
  const { scheduler } = memoryBound({ a: 4, huge: 12 }, true);
  await scheduler.load(model("a"));
  const err = await scheduler.load(model("huge")).catch((e) => e);
  expect((err as ApiError).status).toBe(507);
  expect((err as ApiError).message).toBe("huge needs 12.00 GB of memory and 10.00 GB is free");
  expect(scheduler.list()).toEqual([]);
});

test("shutdown fails waiting requests with 503 and stops every engine", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  const held = scheduler.acquire(model("a"));
  await settle();
  engines.starting("a").ready();
  await held;
  const waiting = scheduler.acquire(model("b")).catch((e) => e);
  await settle();
  await scheduler.shutdown();
  expect(((await waiting) as ApiError).status).toBe(503);
  expect(engines.stopsAsked).toEqual(["a"]);
  expect(engines.running.size).toBe(0);
});

test("a lease's release is idempotent and only the last one lets a draining model go", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  const leases: Lease[] = [await scheduler.acquire(model("a")), await scheduler.acquire(model("a"))];
  const forB = scheduler.acquire(model("b"));
  await settle();
  leases[0]!.release();
  leases[0]!.release();
  await settle();
  expect(engines.stopsAsked).toEqual([]);
  leases[1]!.release();
  (await forB).release();
  expect(engines.stopsAsked).toEqual(["a"]);
});

test("an evicted engine's state is saved before it stops; a crash, a failed lease and shutdown save nothing", async () => {
  const saves: string[] = [];
  let finishSave = () => {};
  const { scheduler, engines } = memoryScheduler(1, {}, {
    save: (instance) => {
      saves.push(instance.model.id);
      return new Promise<void>((resolve) => (finishSave = resolve));
    },
  });
  engines.autoStart = true;
  (await scheduler.acquire(model("a"))).release();
  const forB = scheduler.acquire(model("b"));
  await settle();
  // The save runs while a's engine still answers, and b's start waits for the stop after it.
  expect(saves).toEqual(["a"]);
  expect(engines.stopsAsked).toEqual([]);
  expect(engines.startsAsked).toEqual(["a"]);
  finishSave();
  (await forB).release();
  expect(engines.stopsAsked).toEqual(["a"]);
  expect(engines.startsAsked).toEqual(["a", "b"]);
  engines.running.get("b")!.crash();
  await settle();
  await (await scheduler.acquire(model("b"))).fail();
  const lease = await scheduler.acquire(model("b"));
  lease.release();
  await scheduler.shutdown();
  expect(saves).toEqual(["a"]);
});

test("a save that fails is logged and the eviction goes on", async () => {
  const { scheduler, engines, logs } = memoryScheduler(1, {}, { save: async () => Promise.reject(new Error("disk full")) });
  engines.autoStart = true;
  (await scheduler.acquire(model("a"))).release();
  (await scheduler.acquire(model("b"))).release();
  expect(engines.stopsAsked).toEqual(["a"]);
  expect(logs.some((l) => l.includes("Could not save the state of a before unloading it: disk full"))).toBe(true);
});
