// The server's view of its RPC workers (runtime/rpc-workers.ts), on workers that cannot be used:
// each view says why, and the memory a model's `rpc` option may count is unknown until every
// worker it names has been checked, then only what ready workers report.
import { expect, test } from "bun:test";
import net from "node:net";
import { RpcWorkers } from "../../runtime/rpc-workers.ts";

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
  const workers = new RpcWorkers({ workers: [`127.0.0.1:${port}`, "no-port-here"], secret: "s3cret-s3cret-s3cret", timeoutMs: 1000 });
  await workers.refresh();
  const [closed, bad] = workers.list();
  expect(closed).toMatchObject({ address: `127.0.0.1:${port}`, state: "unavailable", devices: [], busy: false });
  expect(closed!.error).toContain("is unreachable");
  expect(bad!.error).toContain("'no-port-here' is not host:port");
  expect(workers.freeBytes("all")).toBe(0);
  expect(workers.freeBytes(`127.0.0.1:${port}`)).toBe(0);
});

test("until its first check ends a worker is `checking`, and the memory it may add is unknown", () => {
  const workers = new RpcWorkers({ workers: ["10.255.255.1:50052"], secret: "s3cret-s3cret-s3cret", timeoutMs: 1000 });
  expect(workers.list()[0]!.state).toBe("checking");
  expect(workers.freeBytes("all")).toBeNull();
  // A model naming no configured worker adds nothing.
  expect(workers.freeBytes("10.0.0.9:1")).toBe(0);
});

test("without the secret no worker is contacted", async () => {
  const workers = new RpcWorkers({ workers: ["127.0.0.1:1"], secret: null, timeoutMs: 1000 });
  await workers.refresh();
  expect(workers.list()[0]!.error).toContain("no secret is set");
});
