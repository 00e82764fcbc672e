// Dynamic VRAM management (multi-model guide) on the in-memory engine and a fake clock: tiered
// degradation (downsize after downsize_idle_timeout, evict after evict_idle_timeout), pinned models
// left alone, a request interrupting a downsize or an eviction, and VRAM-pressure eviction by the
// load-time weighted score from an injected GPU memory sampler. No sleeps: the clock moves by hand.
import { expect, test } from "bun:test";
import type { LoadSpec } from "../../models/recipe-options.ts";
import type { Instance, PressureMonitor, SchedulableModel } from "../../runtime/scheduler.ts";
import { settle } from "../helpers/fake-clock.ts";
import { memoryScheduler } from "../helpers/memory-engine.ts";

const model = (id: string): SchedulableModel => ({ id, type: "llm" });
const auto = (over: Record<string, unknown> = {}): LoadSpec => ({
  options: { auto_evict: true, downsize_idle_timeout: 60, evict_idle_timeout: 300, evict_weight_factor: 1, ...over },
  ctxSize: 4096,
});

/** A downsize effect the test sees and may hold: each call is recorded with its abort signal. */
function downsizer(hold = false) {
  const calls: { id: string; signal: AbortSignal; finish: () => void; fail: (err: Error) => void }[] = [];
  const downsize = (instance: Instance, signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ id: instance.model.id, signal, finish: resolve, fail: reject });
      if (!hold) resolve();
    });
  return { calls, downsize };
}

/** A GPU memory sampler returning what the test sets, counting its reads. */
function sampler(enabled = true, threshold = 0.9) {
  const state = { used: 0.5 as number | undefined, reads: 0, enabled };
  const pressure: PressureMonitor = {
    enabled: () => state.enabled,
    threshold: () => threshold,
    sample: async () => (state.reads++, state.used),
    everyMs: 2000,
  };
  return { state, pressure };
}

const status = (i: Instance | undefined) => (i ? (i.state !== "ready" ? "evicting" : i.tier) : "unloaded");

test("idle past downsize_idle_timeout a model is downsized (weights kept), past evict_idle_timeout it is unloaded", async () => {
  const d = downsizer();
  const { scheduler, engines, clock } = memoryScheduler(1, { resolve: () => auto() }, { downsize: d.downsize });
  engines.autoStart = true;
  await scheduler.load(model("a"));
  await clock.advance(59_000);
  expect(d.calls).toEqual([]);
  await clock.advance(2_000);
  expect(d.calls.map((c) => c.id)).toEqual(["a"]);
  expect(status(scheduler.list()[0])).toBe("downsized");
  expect(engines.stopsAsked).toEqual([]);
  // Downsized once: idle longer does not downsize again.
  await clock.advance(200_000);
  expect(d.calls).toHaveLength(1);
  await clock.advance(40_000);
  expect(engines.stopsAsked).toEqual(["a"]);
  await settle();
  expect(scheduler.list()).toEqual([]);
});

test("the next request after a downsize is served by the same engine, which is whole again and may be downsized anew", async () => {
  const d = downsizer();
  const { scheduler, engines, clock, logs } = memoryScheduler(1, { resolve: () => auto() }, { downsize: d.downsize });
  engines.autoStart = true;
  const loaded = await scheduler.load(model("a"));
  await clock.advance(61_000);
  expect(loaded.tier).toBe("downsized");
  const lease = await scheduler.acquire(model("a"));
  expect(lease.instance).toBe(loaded);
  expect(loaded.tier).toBe("full");
  expect(scheduler.starts).toBe(1);
  expect(logs).toContain("Restoring a from its downsized state");
  lease.release();
  await clock.advance(61_000);
  expect(d.calls).toHaveLength(2);
  expect(loaded.tier).toBe("downsized");
});

test("with auto_evict off (the default) a model is neither downsized nor evicted when idle", async () => {
  const d = downsizer();
  const { scheduler, engines, clock } = memoryScheduler(1, { resolve: () => auto({ auto_evict: null }) }, { downsize: d.downsize });
  engines.autoStart = true;
  await scheduler.load(model("a"));
  await clock.advance(900_000);
  expect(d.calls).toEqual([]);
  expect(engines.stopsAsked).toEqual([]);
  expect(status(scheduler.list()[0])).toBe("full");
});

test("a timeout of 0 is no 'never': at 0 a model is downsized, or evicted, at the first idle check (lemond's eviction engine reads it so)", async () => {
  const d = downsizer();
  const specs: Record<string, LoadSpec> = { soft: auto({ downsize_idle_timeout: 0 }), hard: auto({ evict_idle_timeout: 0 }) };
  const { scheduler, engines, clock } = memoryScheduler(-1, { resolve: (m) => specs[m.id]! }, { downsize: d.downsize });
  engines.autoStart = true;
  await scheduler.load(model("soft"));
  await scheduler.load(model("hard"));
  await clock.advance(1_000);
  expect(d.calls.map((c) => c.id)).toEqual(["soft"]);
  expect(engines.stopsAsked).toEqual(["hard"]);
});

test("a pinned model bypasses the idle downsize and eviction; unpinned, it degrades again", async () => {
  const d = downsizer();
  const { scheduler, engines, clock } = memoryScheduler(1, { resolve: () => auto() }, { downsize: d.downsize });
  engines.autoStart = true;
  await scheduler.load(model("a"), { pinned: true });
  await clock.advance(900_000);
  expect(d.calls).toEqual([]);
  expect(engines.stopsAsked).toEqual([]);
  scheduler.setPinned("a", false);
  await clock.advance(1_000);
  expect(d.calls.map((c) => c.id)).toEqual([]);
  // Idle time counts from its last use, long past both timeouts: it is evicted at once.
  expect(engines.stopsAsked).toEqual(["a"]);
});

test("a request that arrives mid-downsize interrupts it and is served at once by the engine there", async () => {
  const d = downsizer(true);
  const { scheduler, engines, clock, logs } = memoryScheduler(1, { resolve: () => auto() }, { downsize: d.downsize });
  engines.autoStart = true;
  const loaded = await scheduler.load(model("a"));
  await clock.advance(61_000);
  expect(loaded.tier).toBe("downsizing");
  const lease = await scheduler.acquire(model("a"));
  expect(lease.instance).toBe(loaded);
  expect(d.calls[0]!.signal.aborted).toBe(true);
  expect(loaded.tier).toBe("full");
  expect(logs).toContain("A request for a interrupted its downsize");
  // The interrupted effect settling later leaves the model whole.
  d.calls[0]!.fail(new Error("aborted"));
  await settle();
  expect(loaded.tier).toBe("full");
  expect(logs.some((l) => l.startsWith("Could not downsize"))).toBe(false);
  expect(scheduler.starts).toBe(1);
  lease.release();
});

test("a downsize that fails leaves the model whole, logged, and is not retried until the model is used", async () => {
  const d = downsizer(true);
  const { scheduler, engines, clock, logs } = memoryScheduler(1, { resolve: () => auto() }, { downsize: d.downsize });
  engines.autoStart = true;
  const loaded = await scheduler.load(model("a"));
  await clock.advance(61_000);
  d.calls[0]!.fail(new Error("slot erase answered 500"));
  await settle();
  expect(loaded.tier).toBe("full");
  expect(logs).toContain("Could not downsize a: slot erase answered 500; it stays whole");
  await clock.advance(60_000);
  expect(d.calls).toHaveLength(1);
  (await scheduler.acquire(model("a"))).release();
  await clock.advance(61_000);
  expect(d.calls).toHaveLength(2);
});

test("a request that arrives mid-eviction (its state being saved) takes the model back: no stop, no second start", async () => {
  const saving = Promise.withResolvers<void>();
  let saves = 0;
  const save = () => (saves++, saving.promise);
  const { scheduler, engines, clock, logs } = memoryScheduler(1, { resolve: () => auto({ downsize_idle_timeout: 3600 }) }, { save });
  engines.autoStart = true;
  const loaded = await scheduler.load(model("a"));
  await clock.advance(301_000);
  expect(saves).toBe(1);
  expect(loaded.state).toBe("stopping");
  const lease = await scheduler.acquire(model("a"));
  expect(lease.instance).toBe(loaded);
  expect(loaded.state).toBe("ready");
  expect(logs).toContain("A request for a interrupted its eviction; it stays loaded");
  saving.resolve();
  await settle();
  expect(engines.stopsAsked).toEqual([]);
  expect(scheduler.list()).toEqual([loaded]);
  expect(scheduler.starts).toBe(1);
  lease.release();
  // Idle again, it is evicted again.
  await clock.advance(301_000);
  await settle();
  expect(engines.stopsAsked).toEqual(["a"]);
});

test("an eviction that makes room for another model is not taken back: the request waits and loads the model again", async () => {
  const saving = Promise.withResolvers<void>();
  const { scheduler, engines } = memoryScheduler(1, { resolve: () => auto() }, { save: () => saving.promise });
  engines.autoStart = true;
  const first = await scheduler.load(model("a"));
  const b = scheduler.load(model("b"));
  await settle();
  expect(first.state).toBe("stopping");
  const again = scheduler.acquire(model("a"));
  await settle();
  expect(first.state).toBe("stopping");
  saving.resolve();
  await b;
  const lease = await again;
  expect(lease.instance).not.toBe(first);
  expect(engines.startsAsked).toEqual(["a", "b", "a"]);
  lease.release();
});

test("VRAM pressure: at the threshold the most disposable idle model goes, by idle time over load time x evict_weight_factor", async () => {
  const { state, pressure } = sampler(true, 0.9);
  const specs: Record<string, LoadSpec> = {
    slow: auto({ downsize_idle_timeout: 3600, evict_idle_timeout: 3600 }),
    quick: auto({ downsize_idle_timeout: 3600, evict_idle_timeout: 3600 }),
    guarded: auto({ downsize_idle_timeout: 3600, evict_idle_timeout: 3600, evict_weight_factor: 1000 }),
  };
  const { scheduler, engines, clock, logs } = memoryScheduler(-1, { resolve: (m) => specs[m.id]!, pressure });
  // slow takes 20 s to load; quick and guarded 1 s, but guarded's weight protects it.
  for (const [id, ms] of [["slow", 20_000], ["quick", 1_000], ["guarded", 1_000]] as const) {
    const loading = scheduler.load(model(id));
    await settle();
    await clock.advance(ms);
    engines.starting(id).ready();
    await loading;
  }
  await clock.advance(10_000);
  expect(state.reads).toBeGreaterThan(0);
  expect(engines.stopsAsked).toEqual([]);
  state.used = 0.9;
  await clock.advance(2_000);
  expect(engines.stopsAsked).toEqual(["quick"]);
  expect(logs).toContain("Unloading quick: GPU memory is 90% used, at or past auto_evict_threshold_pct 90%");
  await settle();
  // Still under pressure: the next most disposable, one per sample.
  await clock.advance(2_000);
  expect(engines.stopsAsked).toEqual(["quick", "slow"]);
  state.used = 0.4;
  await clock.advance(20_000);
  expect(engines.stopsAsked).toEqual(["quick", "slow"]);
  expect(scheduler.list().map((i) => i.model.id)).toEqual(["guarded"]);
});

test("VRAM pressure spares pinned models, models in use and models without auto_evict", async () => {
  const { state, pressure } = sampler(true, 0.8);
  const specs: Record<string, LoadSpec> = {
    pinned: auto({ downsize_idle_timeout: 3600, evict_idle_timeout: 3600 }),
    busy: auto({ downsize_idle_timeout: 3600, evict_idle_timeout: 3600 }),
    manual: auto({ auto_evict: false, downsize_idle_timeout: 3600, evict_idle_timeout: 3600 }),
  };
  const { scheduler, engines, clock } = memoryScheduler(-1, { resolve: (m) => specs[m.id]!, pressure });
  engines.autoStart = true;
  await scheduler.load(model("pinned"), { pinned: true });
  await scheduler.load(model("busy"));
  await scheduler.load(model("manual"));
  const lease = await scheduler.acquire(model("busy"));
  state.used = 0.99;
  await clock.advance(60_000);
  expect(engines.stopsAsked).toEqual([]);
  lease.release();
  await clock.advance(2_000);
  expect(engines.stopsAsked).toEqual(["busy"]);
});

test("with the server-wide auto_evict off, GPU memory is never sampled", async () => {
  const { state, pressure } = sampler(false);
  const { scheduler, engines, clock } = memoryScheduler(1, { resolve: () => auto(), pressure });
  engines.autoStart = true;
  await scheduler.load(model("a"));
  state.used = 1;
  await clock.advance(30_000);
  expect(state.reads).toBe(0);
  state.enabled = true;
  await clock.advance(2_000);
  expect(state.reads).toBe(1);
  expect(engines.stopsAsked).toEqual(["a"]);
});
