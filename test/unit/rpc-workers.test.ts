// The server's view of its RPC workers (runtime/rpc-workers.ts), on workers that cannot be used:
// each view says why, and the memory a model's `rpc` option may count is unknown until every
// worker it names has been checked, then only what ready workers report. And a load's grace for
// a worker still serving the engine it replaces, on a fake clock.
import { describe, expect, test } from "bun:test";
import net from "node:net";
import { RpcWorkers } from "../../runtime/rpc-workers.ts";
import { workerStatusAfterGrace } from "../../engines/llamacpp.ts";
import type { WorkerStatus } from "../../engines/rpc-address.ts";
import { FakeClock } from "../helpers/fake-clock.ts";
import { systemClock } from "../../lib/clock.ts";

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test("unusable workers are listed with the reason, and count no memory once checked", async () => {
  const port = await closedPort();
  const workers = new RpcWorkers({ workers: [`127.0.0.1:${port}`, "no-port-here"], secret: "s3cret-s3cret-s3cret", timeoutMs: 1000 }, systemClock);
  await workers.refresh();
  const [closed, bad] = workers.list();
  expect(closed).toMatchObject({ address: `127.0.0.1:${port}`, state: "unavailable", devices: [], busy: false });
  expect(closed!.error).toContain("is unreachable");
  expect(bad!.error).toContain("'no-port-here' is not host:port");
  expect(workers.freeBytes("all")).toBe(0);
  expect(workers.freeBytes(`127.0.0.1:${port}`)).toBe(0);
});

test("until its first check ends a worker is `checking`, and the memory it may add is unknown", () => {
  const workers = new RpcWorkers({ workers: ["10.255.255.1:50052"], secret: "s3cret-s3cret-s3cret", timeoutMs: 1000 }, systemClock);
  expect(workers.list()[0]!.state).toBe("checking");
  expect(workers.freeBytes("all")).toBeNull();
  // A model naming no configured worker adds nothing.
  expect(workers.freeBytes("10.0.0.9:1")).toBe(0);
});

test("without the secret no worker is contacted", async () => {
  const workers = new RpcWorkers({ workers: ["127.0.0.1:1"], secret: null, timeoutMs: 1000 }, systemClock);
  await workers.refresh();
  expect(workers.list()[0]!.error).toContain("no secret is set");
});

describe("a load's 2 s grace for a worker still serving the engine it replaces (fake clock)", () => {
  /** A worker that serves a client until `freeAt` (clock time), answering each probe. */
  function worker(clock: FakeClock, freeAt: number) {
    const probes: number[] = [];
    const probe = async (): Promise<WorkerStatus> => {
      probes.push(clock.now());
      return { protocol: "3.0.0", devices: [], clients: clock.now() >= freeAt ? 0 : 1 };
    };
    return { probes, probe };
  }

  test("freed within the grace, the worker is taken once it answers free: asked every 100 ms until then", async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const w = worker(clock, start + 450);
    let status: WorkerStatus | undefined;
    void workerStatusAfterGrace(w.probe, true, clock).then((s) => (status = s));
    await clock.advance(400);
    expect(status).toBeUndefined();
    await clock.advance(100);
    expect(status?.clients).toBe(0);
    expect(w.probes.map((t) => t - start)).toEqual([0, 100, 200, 300, 400, 500]);
  });

  test("still serving when the grace is over, its busy status is the answer (the load refuses it)", async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const w = worker(clock, Infinity);
    let status: WorkerStatus | undefined;
    void workerStatusAfterGrace(w.probe, true, clock).then((s) => (status = s));
    await clock.advance(1900);
    expect(status).toBeUndefined();
    await clock.advance(100);
    expect(status?.clients).toBe(1);
    expect(w.probes.at(-1)! - start).toBe(2000);
    expect(w.probes).toHaveLength(21);
  });

  test("where serving does not rule a worker out (the check before a load queues), the first answer is taken", async () => {
    const clock = new FakeClock();
    const w = worker(clock, Infinity);
    expect((await workerStatusAfterGrace(w.probe, false, clock)).clients).toBe(1);
    expect(w.probes).toHaveLength(1);
  });
});

test("a view's checked_at is the server clock's time of its check", async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const port = await closedPort();
  const workers = new RpcWorkers({ workers: [`127.0.0.1:${port}`], secret: "s3cret-s3cret-s3cret", timeoutMs: 1000 }, clock);
  await workers.refresh();
  expect(workers.list()[0]!.checked_at).toBe(1_700_000_000);
  await clock.advance(5000);
  await workers.refresh();
  expect(workers.list()[0]!.checked_at).toBe(1_700_000_005);
});
