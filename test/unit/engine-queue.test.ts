// The queue in front of an engine: as many requests at once as it has slots, the rest in arrival
// order up to max_queue, then 503 server_busy with Retry-After; depth in /v1/health and /metrics.
import { expect, test } from "bun:test";
import { EngineQueue } from "../../runtime/engine-queue.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";

test("slots go in arrival order, a freed slot passes to the next waiter, a leaver leaves the line", async () => {
  const q = new EngineQueue(1, () => 10, () => "m");
  const order: string[] = [];
  const a = q.join();
  const b = q.join();
  const left = new AbortController();
  const c = q.join(left.signal);
  const d = q.join();
  expect(q.depth).toBe(3);
  for (const [name, t] of [["b", b], ["d", d]] as const) void t.ready.then(() => order.push(name));
  const cOutcome = c.ready.then(() => "served", (e) => e.code);
  left.abort();
  expect(await cOutcome).toBe("client_closed");
  expect(q.depth).toBe(2);
  await a.ready;
  a.leave();
  await b.ready;
  b.leave();
  await d.ready;
  expect(order).toEqual(["b", "d"]);
  d.leave();
  expect(q.depth).toBe(0);
  const e = q.join();
  await e.ready;
});

test("a full queue refuses at once with 503 server_busy and Retry-After", () => {
  const q = new EngineQueue(1, () => 1, () => "m");
  q.join();
  q.join();
  let err: any;
  try {
    q.join();
  } catch (e) {
    err = e;
  }
  expect(err).toMatchObject({ status: 503, code: "server_busy", message: "m has 1 requests waiting already; try again shortly" });
  expect(err.extras).toMatchObject({ retryable: true, retryAfterS: 1 });
});

test("over HTTP: one slot (--parallel 1), max_queue 2: two wait (shown in /v1/health and /metrics), the next is 503, all others 200 in order", async () => {
  const server = await startFakeServer(["a"], { LEMONADE_MAX_QUEUE: "2" }, { llamacpp_args: "--parallel 1" });
  try {
    const chat = (stream: boolean, token_ms = 0) =>
      fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ model: "extra.a", stream, max_tokens: 10, messages: [{ role: "user", content: "hi" }], fake: { token_ms } }),
      });
    expect((await chat(false)).status).toBe(200);
    const finished: number[] = [];
    // The first holds the slot for 10 tokens of 30 ms while the queue is looked at; the two behind it need not be slow.
    const running = [0, 1, 2].map((i) => chat(false, i === 0 ? 30 : 0).then(async (r) => (await r.arrayBuffer(), finished.push(i), r.status)));
    // Until the three have reached the engine's queue (a failure shows as the test's timeout).
    let health = await (await fetch(`${server.url}/v1/health`)).json();
    while (health.all_models_loaded[0].queue_depth < 2) health = await (await fetch(`${server.url}/v1/health`)).json();
    // One request holds the one slot, two wait for it.
    expect(health.all_models_loaded[0]).toMatchObject({ queue_depth: 2, slots: 1, slots_in_use: 1 });
    expect(await (await fetch(`${server.url}/metrics`)).text()).toContain('lemonade_queued_requests{model="a"} 2');
    const busy = await chat(false);
    expect(busy.status).toBe(503);
    expect(busy.headers.get("retry-after")).toBe("1");
    // Named by its listed id (the extra model's bare name).
    expect((await busy.json()).error).toMatchObject({ code: "server_busy", message: "a has 2 requests waiting already; try again shortly" });
    const busyStream = await chat(true);
    expect(busyStream.status).toBe(503);
    await busyStream.arrayBuffer();
    expect(await Promise.all(running)).toEqual([200, 200, 200]);
    expect(finished).toEqual([0, 1, 2]);
    expect((await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded[0].slots_in_use).toBe(0);
  } finally {
    await server.close();
  }
});

test("a client that is already gone is refused at once; a granted slot stays taken until its request ends", async () => {
  const q = new EngineQueue(1, () => 10, () => "m");
  const gone = new AbortController();
  gone.abort();
  expect(() => q.join(gone.signal)).toThrow(/closed/);
  const leaving = new AbortController();
  const a = q.join(leaving.signal);
  await a.ready;
  const b = q.join();
  let bReady = false;
  void b.ready.then(() => (bReady = true));
  // The engine still works on a's request after its client left: b waits until a's request ends.
  leaving.abort();
  await Bun.sleep(10);
  expect(bReady).toBe(false);
  a.leave();
  await b.ready;
  expect(bReady).toBe(true);
});
