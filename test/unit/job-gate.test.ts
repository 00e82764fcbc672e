// The exclusive gate a running job holds (runtime/job-gate.ts): the holder's own calls pass, every
// other caller waits until it opens, and a caller that gives up stops waiting.
import { expect, test } from "bun:test";
import { ExclusiveGate } from "../../runtime/job-gate.ts";

test("an open gate lets everyone through", async () => {
  const gate = new ExclusiveGate();
  await gate.pass();
  expect(gate.holder).toBeNull();
});

test("the holder passes, through its async calls too; others wait until it opens", async () => {
  const gate = new ExclusiveGate();
  gate.close("job-1");
  const order: string[] = [];
  const outside = gate.pass().then(() => order.push("outside"));
  await gate.as("job-1", async () => {
    await Promise.resolve();
    await gate.pass();
    order.push("holder");
  });
  const other = gate.as("job-2", () => gate.pass().then(() => order.push("other job")));
  await Promise.resolve();
  expect(order).toEqual(["holder"]);
  gate.open();
  await Promise.all([outside, other]);
  expect(order).toEqual(["holder", "outside", "other job"]);
});

test("a waiter whose signal aborts stops waiting with client_closed", async () => {
  const gate = new ExclusiveGate();
  gate.close("job-1");
  const abort = new AbortController();
  const waiting = gate.pass(abort.signal);
  abort.abort();
  await expect(waiting).rejects.toMatchObject({ code: "client_closed" });
});
