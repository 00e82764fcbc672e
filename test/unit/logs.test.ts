import { afterAll, beforeAll, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { operations } from "../../spec/index.ts";
import { LOG_RETENTION, Logger } from "../../observability/logger.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ LEMONADE_LOG_LEVEL: "info" });
});
afterAll(() => server.close());

/** A log-stream client that queues every message it receives. */
async function connect() {
  const ws = new WebSocket(server.url.replace("http", "ws") + "/logs/stream");
  const queue: any[] = [];
  const waiters: ((m: any) => void)[] = [];
  ws.onmessage = (ev) => {
    const msg = JSON.parse(String(ev.data));
    expect(Value.Check(operations.LogsServerMessage, msg)).toBe(true);
    const w = waiters.shift();
    w ? w(msg) : queue.push(msg);
  };
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  return {
    send: (m: unknown) => ws.send(typeof m === "string" ? m : JSON.stringify(m)),
    next: () =>
      queue.length
        ? Promise.resolve(queue.shift())
        : Promise.race([
            new Promise<any>((r) => waiters.push(r)),
            Bun.sleep(5000).then(() => Promise.reject(new Error("no message within 5 s"))),
          ]),
    close: () => ws.close(),
  };
}

test("subscribe sends a snapshot with the server's start-up lines, then live entries", async () => {
  const c = await connect();
  c.send({ type: "logs.subscribe", after_seq: null });
  const snap = await c.next();
  expect(snap.type).toBe("logs.snapshot");
  expect(snap.entries.some((e: any) => e.line.includes("listening on"))).toBe(true);
  const seqs = snap.entries.map((e: any) => e.seq);
  expect(seqs).toEqual([...seqs].sort((a: number, b: number) => a - b));

  await fetch(`${server.url}/internal/aliases`, { method: "POST", body: JSON.stringify({ alias: "live-a", target: "m" }) });
  const live = await c.next();
  expect(live.type).toBe("logs.entry");
  expect(live.entry.line).toContain("live-a");
  expect(live.entry.seq).toBeGreaterThan(Math.max(...seqs));
  expect(live.entry.severity).toBe("Info");
  c.close();
});

test("after_seq resumes with only the entries logged since", async () => {
  const first = await connect();
  first.send({ type: "logs.subscribe" });
  const all = (await first.next()).entries;
  const last = all[all.length - 1].seq;
  first.close();

  await fetch(`${server.url}/internal/aliases`, { method: "POST", body: JSON.stringify({ alias: "while-away", target: "m" }) });

  const again = await connect();
  again.send({ type: "logs.subscribe", after_seq: last });
  const resumed = (await again.next()).entries;
  expect(resumed.length).toBe(1);
  expect(resumed[0].seq).toBe(last + 1);
  expect(resumed[0].line).toContain("while-away");
  again.close();
});

test("an invalid message is answered with an error message", async () => {
  const c = await connect();
  c.send("not json");
  expect((await c.next()).type).toBe("error");
  c.send({ type: "logs.subscribe", after_seq: "yesterday" });
  expect((await c.next()).type).toBe("error");
  c.close();
});

test("the buffer keeps the last 5000 entries", () => {
  const logger = new Logger("Info", () => {});
  for (let i = 0; i < LOG_RETENTION + 10; i++) logger.info("Test", `line ${i}`);
  const snap = logger.snapshot();
  expect(snap.length).toBe(5000);
  expect(snap[0]!.seq).toBe(11);
  expect(snap.at(-1)!.line).toContain(`line ${LOG_RETENTION + 9}`);
  expect(logger.snapshot(LOG_RETENTION + 8).map((e) => e.seq)).toEqual([LOG_RETENTION + 9, LOG_RETENTION + 10]);
});

test("the default echo writes each line whole, Info and Debug to stdout, Warning and Error to stderr, in local time from TZ", () => {
  const logger = JSON.stringify(import.meta.resolve("../../observability/logger.ts"));
  const code = `const { Logger } = await import(${logger}); const l = new Logger("Debug");
l.debug("T", "d %s 100%"); l.info("T", "i"); l.warn("T", "w"); l.error("T", "e"); process.kill(process.pid, "SIGKILL");`;
  const run = Bun.spawnSync([process.execPath, "-e", code], { env: { ...process.env, TZ: "Asia/Kolkata" } });
  const lines = (s: Buffer) => s.toString().split("\n").filter(Boolean);
  const stamp = /^(\d{4}-\d\d-\d\d \d\d:\d\d):\d\d\.\d{3} /;
  // Written before the process was killed: nothing waits in a buffer.
  expect(lines(run.stdout).map((l) => l.replace(stamp, ""))).toEqual(["[Debug] (T) d %s 100%", "[Info] (T) i"]);
  expect(lines(run.stderr).map((l) => l.replace(stamp, ""))).toEqual(["[Warning] (T) w", "[Error] (T) e"]);
  // India is 5:30 ahead of UTC all year.
  const utc = new Date(Date.now() + 19_800_000).toISOString().slice(0, 16).replace("T", " ");
  const logged = stamp.exec(lines(run.stdout)[0]!)![1]!;
  expect(Math.abs(Date.parse(`${logged}Z`) - Date.parse(`${utc}Z`))).toBeLessThanOrEqual(60_000);
});
