// The routing-helper pool (multi-model guide, "Router and Classifier Dependencies") on the in-memory
// engine: a model a collection's routing runs on counts in a pool of its own, so it neither takes
// nor loses a standard slot; a model moves between the pools in place (one process) as its use
// changes, under the destination pool's admission and pinning.
import { expect, test } from "bun:test";
import { ApiError } from "../../lib/api-error.ts";
import type { SchedulableModel } from "../../runtime/scheduler.ts";
import { memoryScheduler } from "../helpers/memory-engine.ts";

const model = (id: string): SchedulableModel => ({ id, type: "llm" });
const helper = { residency: "routing_helper" as const };

const pools = (s: ReturnType<typeof memoryScheduler>["scheduler"]) => Object.fromEntries(s.list().map((i) => [i.model.id, i.residency]));

test("with max_loaded_models=1 a router's helper and a standard candidate stay loaded together; another candidate evicts the candidate, not the helper", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  (await scheduler.acquire(model("judge"), helper)).release();
  (await scheduler.acquire(model("a"))).release();
  expect(pools(scheduler)).toEqual({ judge: "routing_helper", a: "standard" });
  expect(engines.stopsAsked).toEqual([]);
  (await scheduler.acquire(model("b"))).release();
  expect(engines.stopsAsked).toEqual(["a"]);
  expect(pools(scheduler)).toEqual({ judge: "routing_helper", b: "standard" });
});

test("the router's own model as the candidate: promoted for routing, demoted for the inference in the same request, with one process", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  (await scheduler.acquire(model("a"))).release();
  const routing = await scheduler.acquire(model("judge"), helper);
  routing.release();
  const inference = await scheduler.acquire(model("judge"));
  expect(inference.instance).toBe(routing.instance);
  expect(inference.instance.residency).toBe("standard");
  inference.release();
  // Demoted into a full standard pool: its resident goes, as a load would have made it go.
  expect(engines.stopsAsked).toEqual(["a"]);
  expect(engines.startsAsked).toEqual(["a", "judge"]);
  expect(pools(scheduler)).toEqual({ judge: "standard" });
});

test("a standard model used for routing is promoted in place and frees its standard slot", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  (await scheduler.acquire(model("judge"))).release();
  (await scheduler.acquire(model("judge"), helper)).release();
  (await scheduler.acquire(model("a"))).release();
  expect(engines.stopsAsked).toEqual([]);
  expect(pools(scheduler)).toEqual({ judge: "routing_helper", a: "standard" });
});

test("pinning is pool-local: a pinned candidate does not block the helper; demoting into a pool of pinned models is 409 and the helper stays", async () => {
  const { scheduler, engines } = memoryScheduler(1);
  engines.autoStart = true;
  await scheduler.load(model("a"), { pinned: true });
  (await scheduler.acquire(model("judge"), helper)).release();
  expect(pools(scheduler)).toEqual({ a: "standard", judge: "routing_helper" });
  const refused = await scheduler.acquire(model("judge")).catch((err: ApiError) => err);
  expect(refused).toBeInstanceOf(ApiError);
  expect((refused as ApiError).status).toBe(409);
  expect(pools(scheduler)).toEqual({ a: "standard", judge: "routing_helper" });
  expect(engines.stopsAsked).toEqual([]);
});
