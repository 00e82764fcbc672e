// Tiered degradation on FAKE llama-server processes (multi-model guide, "Dynamic VRAM Management"):
// the downsize erases the engine's slots, a request that arrives while the erase is still running
// is served by the same engine, and /v1/health reports the state as Lemonade's `status` does. The
// timing rules themselves are test/unit/degradation.test.ts, on a fake clock.
import { afterEach, expect, test } from "bun:test";
import { systemClock } from "../../lib/clock.ts";
import { eraseSlots } from "../../runtime/downsize.ts";
import type { Scheduler } from "../../runtime/scheduler.ts";
import { fakeScheduler, startFakeServer, type FakeModel } from "../helpers/fake-engine.ts";
import { tempDir, type TestServer } from "../helpers/server.ts";

let scheduler: Scheduler<FakeModel> | undefined;
let server: TestServer | undefined;
afterEach(async () => {
  await scheduler?.shutdown();
  await server?.close();
  scheduler = server = undefined;
});

/** Polls until `done` holds (a process answers on its own time), failing after 10 s. */
async function until(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await done()) return;
    await Bun.sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const engineRequests = async (url: string): Promise<string[]> => (await fetch(`${url}/fake/requests`)).json();

test("a request that arrives mid-downsize (the slot erase still running) is answered by the same engine, and the downsize ends", async () => {
  let now = 1_000_000;
  const m: FakeModel = { id: "a", type: "llm", flags: ["--slot-save-path", tempDir(), "--fake-erase-ms", "20000"] };
  scheduler = fakeScheduler(
    1,
    { resolve: () => ({ options: { auto_evict: true, downsize_idle_timeout: 60, evict_idle_timeout: 300 }, ctxSize: 4096 }), idleCheckMs: 10 },
    // The fake speaks llama-server's /slots, as the llamacpp recipe's engine does.
    { clock: { ...systemClock, now: () => now }, downsize: (instance, signal) => eraseSlots({ ...instance, model: { ...instance.model, recipe: "llamacpp" } }, signal) },
  );
  const instance = await scheduler.load(m);
  now += 61_000;
  await until("the erase to reach the engine", async () => (await engineRequests(instance.engine.url)).includes("POST /slots/0"));
  expect(instance.tier).toBe("downsizing");
  const lease = await scheduler.acquire(m);
  expect(lease.instance).toBe(instance);
  expect(instance.tier).toBe("full");
  const res = await fetch(`${lease.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ stream: true, max_tokens: 3 }) });
  expect(await res.text()).toContain("[DONE]");
  lease.release();
  expect(scheduler.starts).toBe(1);
  expect(scheduler.list()).toEqual([instance]);
});

test("/v1/health reports an idle auto_evict model as downsized after downsize_idle_timeout (its slots erased); the next request is served without a reload", async () => {
  server = await startFakeServer(["ds"], {}, { auto_evict: true, downsize_idle_timeout: 1, evict_idle_timeout: 3600 });
  const chat = () =>
    fetch(`${server!.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "extra.ds", messages: [{ role: "user", content: "hi" }], max_tokens: 3 }) });
  const entry = async () => (await (await fetch(`${server!.url}/v1/health`)).json()).all_models_loaded[0];
  expect((await chat()).status).toBe(200);
  await until("the downsize", async () => (await entry())?.status === "downsized");
  const downsized = await entry();
  expect(downsized).toMatchObject({ model_name: "ds", status: "downsized", is_busy: false });
  expect(await engineRequests(downsized.backend_url.replace(/\/v1$/, ""))).toEqual(expect.arrayContaining(["GET /slots", "POST /slots/0"]));
  expect((await chat()).status).toBe(200);
  const after = await entry();
  // Served by the engine that was downsized: no reload.
  expect(after.pid).toBe(downsized.pid);
  expect(after.last_use).toBeGreaterThan(downsized.last_use);
});
