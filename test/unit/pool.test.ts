// A pool of remote servers as one cloud provider: the member choice and the back-off on a fake
// clock (no test sleeps), then the proxy forwarding to a pool through in-process members, with the
// real provider registry (its key from the environment, so nothing is asked over the network).
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Catalog, CatalogModel } from "../../models/catalog.ts";
import { CloudProviders } from "../../models/cloud.ts";
import { Logger } from "../../observability/logger.ts";
import { Metrics } from "../../observability/metrics.ts";
import { GenerationStats } from "../../observability/stats.ts";
import { chatStream } from "../../protocols/openai.ts";
import { EngineProxy } from "../../runtime/proxy.ts";
import { Pool, Pools } from "../../runtime/pool.ts";
import type { ProxyRequest } from "../../runtime/request.ts";
import type { Scheduler } from "../../runtime/scheduler.ts";
import { chatRequest } from "../helpers/proxy-request.ts";
import { FakeClock } from "../helpers/fake-clock.ts";
import { tempDir } from "../helpers/server.ts";

const quiet = { info() {}, warn() {} };

function pool(urls: string[], probe: (url: string) => Promise<void> = async () => {}) {
  const clock = new FakeClock();
  const probes: string[] = [];
  const p = new Pool("farm", {
    clock,
    log: quiet,
    probe: (url) => {
      probes.push(url);
      return probe(url);
    },
  });
  p.sync(urls);
  return { pool: p, clock, probes };
}

const state = (p: Pool) => Object.fromEntries(p.health().map((m) => [m.url, `${m.state} ${m.in_flight}`]));

describe("the member choice", () => {
  test("the member with the fewest requests in flight takes the next; ties go in turn", () => {
    const { pool: p } = pool(["a", "b", "c"]);
    const first = [p.pick()!, p.pick()!, p.pick()!];
    expect(first.map((c) => c.url)).toEqual(["a", "b", "c"]);
    expect(state(p)).toEqual({ a: "up 1", b: "up 1", c: "up 1" });
    first[1]!.done();
    first[1]!.done();
    // b is the least busy (done twice counts once).
    expect(p.pick()!.url).toBe("b");
    first[0]!.done();
    first[2]!.done();
    // a and c tie at 0: the turn goes on from after b.
    expect(p.pick()!.url).toBe("c");
    expect(p.pick()!.url).toBe("a");
  });

  test("a member already tried for a request is not picked again for it; none left is undefined", () => {
    const { pool: p } = pool(["a", "b"]);
    const tried = new Set(["a"]);
    expect(p.pick(tried)!.url).toBe("b");
    tried.add("b");
    expect(p.pick(tried)).toBeUndefined();
  });
});

describe("a member that fails", () => {
  test("is down and skipped; probed after 1 s, then 2 s, 4 s while it keeps failing; up again once it answers", async () => {
    let answers = false;
    const { pool: p, clock, probes } = pool(["a", "b"], async () => {
      if (!answers) throw new Error("could not be reached (refused)");
    });
    const claim = p.pick()!;
    expect(claim.url).toBe("a");
    claim.failed("answered HTTP 502");
    claim.done();
    expect(p.health()[0]).toEqual({ url: "a", state: "down", in_flight: 0, last_error: "answered HTTP 502", next_retry: (clock.now() + 1000) / 1000 });
    expect([p.pick()!.url, p.pick()!.url]).toEqual(["b", "b"]);

    await clock.advance(999);
    expect(probes).toEqual([]);
    await clock.advance(1);
    expect(probes).toEqual(["a"]);
    expect(p.health()[0]).toMatchObject({ state: "down", last_error: "could not be reached (refused)", next_retry: (clock.now() + 2000) / 1000 });
    await clock.advance(2000);
    expect(probes).toEqual(["a", "a"]);
    expect(p.health()[0]!.next_retry).toBe((clock.now() + 4000) / 1000);
    answers = true;
    await clock.advance(3999);
    expect(p.health()[0]!.state).toBe("down");
    await clock.advance(1);
    expect(p.health()[0]).toMatchObject({ state: "up", next_retry: null, last_error: "could not be reached (refused)" });
    // Back up with none in flight, it is the least busy.
    expect(p.pick()!.url).toBe("a");
    // Its next failure starts the back-off again from 1 s.
    p.pick(new Set(["b"]))!.failed("answered HTTP 500");
    expect(p.health()[0]!.next_retry).toBe((clock.now() + 1000) / 1000);
  });

  test("the back-off stops doubling at 60 s", async () => {
    const { pool: p, clock, probes } = pool(["a", "b"], async () => {
      throw new Error("refused");
    });
    p.pick()!.failed("refused");
    for (const wait of [1, 2, 4, 8, 16, 32, 60, 60]) await clock.advance(wait * 1000);
    expect(probes).toHaveLength(8);
    expect(p.health()[0]!.next_retry).toBe((clock.now() + 60_000) / 1000);
  });

  test("two requests failing on one member at once start one back-off", async () => {
    const { pool: p, clock, probes } = pool(["a", "b"], async () => {});
    const [x, y] = [p.pick()!, p.pick(new Set(["b"]))!];
    x.failed("first");
    await clock.advance(500);
    y.failed("second");
    expect(p.health()[0]).toMatchObject({ last_error: "second", next_retry: (clock.now() + 500) / 1000 });
    await clock.advance(500);
    expect(probes).toEqual(["a"]);
    expect(p.health()[0]!.state).toBe("up");
  });

  test("every member down: a retryable 503 naming each with its error, Retry-After the soonest probe", async () => {
    const { pool: p, clock } = pool(["http://a/v1", "http://b/v1"], async () => {
      throw new Error("still refused");
    });
    p.pick()!.failed("could not be reached (refused)");
    await clock.advance(400);
    p.pick()!.failed("answered HTTP 503");
    expect(p.pick()).toBeUndefined();
    const err = p.unavailable("farm.tiny");
    expect(err).toMatchObject({ status: 503, code: "pool_unavailable", type: "backend_error", extras: { retryable: true, retryAfterS: 1 } });
    expect(err.message).toBe("No member of the farm pool can serve farm.tiny now: http://a/v1 (down: could not be reached (refused)), http://b/v1 (down: answered HTTP 503); try again");
  });

  test("a member removed from the pool is not probed; the others keep their state", async () => {
    const { pool: p, clock, probes } = pool(["a", "b", "c"]);
    p.pick()!.failed("x");
    p.pick()!;
    p.sync(["b", "c"]);
    await clock.advance(10_000);
    expect(probes).toEqual([]);
    expect(state(p)).toEqual({ b: "up 1", c: "up 0" });
  });

  test("the pools follow the provider: none for one that is not a pool, and an uninstalled one's down members are not probed", async () => {
    const clock = new FakeClock();
    let members: string[] | undefined = ["a", "b"];
    const probes: string[] = [];
    const pools = new Pools({ clock, log: quiet, members: () => members, probe: async (_p, url) => void probes.push(url) });
    const farm = pools.of("farm")!;
    expect(pools.of("farm")).toBe(farm);
    farm.pick()!.failed("x");
    members = undefined;
    await clock.advance(1000);
    expect(probes).toEqual([]);
    expect(pools.of("farm")).toBeUndefined();
  });
});

describe("the proxy and a pool", () => {
  const A = "http://a.test/v1";
  const B = "http://b.test/v1";
  type Member = (init: RequestInit) => Promise<Response>;

  /** A pool provider `farm` of two in-process members, installed as config.json keeps it. */
  function setup(members: Record<string, Member>, hangCheckMs = 0) {
    const cacheDir = tempDir();
    writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ cloud_providers: [{ provider: "farm", base_url: A, members: [A, B], allow_insecure_http: true }] }));
    const cloud = new CloudProviders({ cacheDir, env: { LEMONADE_FARM_API_KEY: "sk-farm" }, log: quiet });
    const clock = new FakeClock();
    const model = { id: "farm.tiny", recipe: "cloud", type: "llm", labels: [], checkpoints: {}, cloud: { provider: "farm", upstreamId: "tiny", wire: "openai", available: true } } as unknown as CatalogModel;
    const sent: string[] = [];
    const logger = new Logger("Info", () => {});
    const proxy = new EngineProxy({
      scheduler: { ready: () => undefined } as unknown as Scheduler<CatalogModel>,
      catalog: { get: () => model, publicId: (m: CatalogModel) => m.id, isShadowedBuiltIn: () => false } as unknown as Catalog,
      metrics: new Metrics("test"),
      stats: new GenerationStats(),
      logger,
      clock,
      hangCheckMs,
      cloud,
      cloudTimeoutS: () => 30,
      fetch: (async (url: string, init: RequestInit) => {
        const base = url.startsWith(A) ? A : B;
        sent.push(`${base === A ? "a" : "b"} ${url.slice(base.length)} ${(init.headers as Record<string, string>).authorization}`);
        return members[base === A ? "a" : "b"]!(init);
      }) as typeof fetch,
    });
    return { proxy, clock, sent, logger, health: () => proxy.pools.of("farm")!.health() };
  }

  const request = (extra: Partial<ProxyRequest> = {}) => chatRequest("farm.tiny", extra);

  const refused: Member = async () => {
    throw new Error("Unable to connect");
  };
  const answers = (name: string): Member => async () => Response.json({ model: "tiny", choices: [{ message: { content: name } }] });
  const sse = (...events: string[]) => new Response(events.map((e) => `data: ${e}\n\n`).join(""), { headers: { "content-type": "text/event-stream" } });

  test("requests spread over both members, each with the key, named by the upstream id", async () => {
    const t = setup({ a: answers("a"), b: answers("b") });
    const texts = [];
    for (let i = 0; i < 4; i++) texts.push((await (await t.proxy.toModel(request())).json()).choices[0].message.content);
    expect(texts).toEqual(["a", "b", "a", "b"]);
    expect(t.sent).toEqual(["a /chat/completions Bearer sk-farm", "b /chat/completions Bearer sk-farm", "a /chat/completions Bearer sk-farm", "b /chat/completions Bearer sk-farm"]);
    expect(t.health().map((m) => [m.state, m.in_flight])).toEqual([["up", 0], ["up", 0]]);
  });

  test("a cloud model a request used is loaded, with its last use, on the proxy's clock (/v1/health's last_use)", async () => {
    const t = setup({ a: answers("a"), b: answers("b") });
    const start = t.clock.now();
    await (await t.proxy.toModel(request())).json();
    expect(t.proxy.loadedCloud().map((c) => [c.model.id, c.lastUse, c.inflight])).toEqual([["farm.tiny", start, 0]]);
    await t.clock.advance(5000);
    await (await t.proxy.toModel(request())).json();
    expect(t.proxy.loadedCloud()[0]!.lastUse).toBe(start + 5000);
  });

  test("a member that cannot be reached is marked down and the request goes to the other; the next skip it until its probe answers", async () => {
    let aUp = false;
    const t = setup({ a: async (init) => (aUp ? answers("a")(init) : refused(init)), b: answers("b") });
    const res = await t.proxy.toModel(request());
    expect((await res.json()).choices[0].message.content).toBe("b");
    expect(t.health()[0]).toMatchObject({ url: A, state: "down", in_flight: 0 });
    expect(t.health()[0]!.last_error).toContain("could not be reached (Unable to connect)");
    expect(t.logger.snapshot().some((e) => e.line.includes("sending the request to the pool's next member"))).toBe(true);
    await t.proxy.toModel(request());
    expect(t.sent.map((s) => s[0])).toEqual(["a", "b", "b"]);
    aUp = true;
    await t.clock.advance(1000);
    // The probe asked a's /models with its key.
    expect(t.sent.at(-1)).toBe("a /models Bearer sk-farm");
    expect(t.health()[0]!.state).toBe("up");
    expect((await (await t.proxy.toModel(request())).json()).choices[0].message.content).toBe("a");
  });

  test("a 502/503/504 before any byte fails over, whole answers and streams alike; a 400 or a 500 is the client's answer and marks nothing down", async () => {
    let aStatus = 502;
    const t = setup({
      a: async () => Response.json({ error: { message: "bad gateway" } }, { status: aStatus }),
      b: async (init) => (JSON.parse(String(init.body)).stream ? sse('{"choices":[{"delta":{"content":"b"}}]}', "[DONE]") : answers("b")(init)),
    });
    expect((await (await t.proxy.toModel(request())).json()).choices[0].message.content).toBe("b");
    expect(t.health()[0]).toMatchObject({ state: "down", last_error: "answered HTTP 502" });
    await t.clock.advance(1000);
    expect(t.health()[0]!.state).toBe("down");
    expect(t.health()[0]!.last_error).toBe("answered HTTP 502");
    aStatus = 500;
    // Its probe (a's /models) answers 500 too: still down, asked again 2 s on.
    await t.clock.advance(2000);
    aStatus = 400;
    await t.clock.advance(4000);
    expect(t.health()[0]!.state).toBe("up");
    aStatus = 503;
    const streamed = await (await t.proxy.toModel(request({ stream: chatStream, body: { messages: [], stream: true } }))).text();
    expect(streamed).toContain('"content":"b"');
    expect(streamed).toContain("[DONE]");
    expect(t.health()[0]).toMatchObject({ state: "down", last_error: "answered HTTP 503" });
    expect(t.sent.filter((s) => s.includes("/chat/")).map((s) => s[0])).toEqual(["a", "b", "a", "b"]);
    await t.clock.advance(1000);
    aStatus = 400;
    await t.clock.advance(2000);
    expect(t.health()[0]!.state).toBe("up");
    await expect(t.proxy.toModel(request())).rejects.toMatchObject({ status: 400 });
    expect((await t.proxy.toModel(request())).status).toBe(200);
    aStatus = 500;
    await expect(t.proxy.toModel(request())).rejects.toMatchObject({ status: 500, message: "bad gateway" });
    expect(t.health()[0]!.state).toBe("up");
    expect(t.sent.filter((s) => s.includes("/chat/")).map((s) => s[0])).toEqual(["a", "b", "a", "b", "a", "b", "a"]);
  });

  test("a member that hangs is found by the hang check (three failed probes while it is silent), marked down, and the request goes to the other", async () => {
    const hangs: Member = (init) =>
      init.body === undefined
        ? refused(init)
        : new Promise<Response>((_, reject) => init.signal?.addEventListener("abort", () => reject(new Error("aborted"))));
    const t = setup({ a: hangs, b: answers("b") }, 5000);
    let settled = false;
    const answer = t.proxy.toModel(request()).finally(() => (settled = true));
    await t.clock.advance(14_999);
    expect(settled).toBe(false);
    expect(t.sent.filter((s) => s.startsWith("a /models"))).toHaveLength(2);
    await t.clock.advance(1);
    expect((await (await answer).json()).choices[0].message.content).toBe("b");
    expect(t.health()[0]).toMatchObject({ state: "down", last_error: "stopped answering its health checks", in_flight: 0 });
    expect(t.health()[1]).toMatchObject({ state: "up", in_flight: 0 });
  });

  test("a slow member that answers its probes is waited for, never left for the other", async () => {
    let answer: ((res: Response) => void) | undefined;
    const slow: Member = (init) => (init.body === undefined ? answers("a")(init) : new Promise<Response>((resolve) => (answer = resolve)));
    const t = setup({ a: slow, b: answers("b") }, 5000);
    const pending = t.proxy.toModel(request());
    await t.clock.advance(60_000);
    expect(t.sent.filter((s) => s.startsWith("a /models"))).toHaveLength(12);
    answer!(Response.json({ choices: [{ message: { content: "a, at last" } }] }));
    expect((await (await pending).json()).choices[0].message.content).toBe("a, at last");
    expect(t.sent.some((s) => s.startsWith("b "))).toBe(false);
    expect(t.health()[0]!.state).toBe("up");
  });

  test("a stream that breaks after its first bytes is not sent again: one error event, and the member is still up", async () => {
    const t = setup({
      a: async () => {
        const enc = new TextEncoder();
        let pulls = 0;
        const body = new ReadableStream<Uint8Array>({
          pull(c) {
            if (pulls++ === 0) c.enqueue(enc.encode('data: {"choices":[{"delta":{"content":"hel"}}]}\n\n'));
            else c.error(new Error("connection reset"));
          },
        });
        return new Response(body, { headers: { "content-type": "text/event-stream" } });
      },
      b: answers("b"),
    });
    const text = await (await t.proxy.toModel(request({ stream: chatStream, body: { messages: [], stream: true } }))).text();
    expect(text).toContain('"content":"hel"');
    expect(text.split("\n\n").filter((e) => e.includes('"error"'))).toHaveLength(1);
    expect(text).not.toContain("[DONE]");
    expect(t.sent.map((s) => s[0])).toEqual(["a"]);
    expect(t.health().map((m) => [m.state, m.in_flight])).toEqual([["up", 0], ["up", 0]]);
  });

  test("both members failing: a 503 pool_unavailable naming both; while both are down the next is refused at once", async () => {
    const t = setup({ a: refused, b: async () => new Response("overloaded", { status: 503 }) });
    const err = await t.proxy.toModel(request()).catch((e) => e);
    expect(err).toMatchObject({ status: 503, code: "pool_unavailable", extras: { retryable: true, retryAfterS: 1 } });
    expect(err.message).toContain(`${A} (down: could not be reached (Unable to connect))`);
    expect(err.message).toContain(`${B} (down: answered HTTP 503)`);
    expect(JSON.stringify(err)).not.toContain("sk-farm");
    const sent = t.sent.length;
    await expect(t.proxy.toModel(request())).rejects.toMatchObject({ code: "pool_unavailable" });
    expect(t.sent.length).toBe(sent);
    expect(t.health().map((m) => m.state)).toEqual(["down", "down"]);
  });
});
