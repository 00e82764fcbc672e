// A pool of two real llama-server processes (the tiny chat model, on loopback ports) installed as
// one cloud provider: requests spread over both, one member killed mid-run (the next requests
// succeed on the other, /v1/health shows it down), started again on its port (back up after its
// probe), one stopped (SIGSTOP: found by the hang check), and both gone (a 503 naming them).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { llamaServerBinary, MODELS, testModelsDir } from "../helpers/engines.ts";
import { freePort } from "../../engines/process.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const KEY = "sk-pool-member-7731";

interface Member {
  port: number;
  url: string;
  proc?: ReturnType<typeof Bun.spawn>;
}

/** Starts (or starts again) llama-server on the member's port, as a user runs it on another box;
 * `--metrics` lets the test read how many tokens each member generated. */
async function start(member: Member): Promise<void> {
  member.proc = Bun.spawn(
    [llamaServerBinary(), "-m", join(testModelsDir(), MODELS.chat), "--alias", "tiny", "--port", String(member.port), "--host", "127.0.0.1", "-c", "1024", "-np", "2", "--metrics"],
    { stdout: "ignore", stderr: "ignore" },
  );
  for (let i = 0; i < 400; i++) {
    if (await fetch(`${member.url}/health`).then((r) => r.ok, () => false)) return;
    await Bun.sleep(50);
  }
  throw new Error(`llama-server on ${member.url} did not start`);
}

async function kill(member: Member): Promise<void> {
  member.proc!.kill("SIGKILL");
  await member.proc!.exited;
}

/** Tokens the member generated since it started (llama-server's own counter). */
async function generated(member: Member): Promise<number> {
  const text = await (await fetch(`${member.url}/metrics`)).text();
  return Number(/^llamacpp:tokens_predicted_total (\d+)/m.exec(text)?.[1] ?? Number.NaN);
}

const members: Member[] = [0, 1].map(() => {
  const port = freePort();
  return { port, url: `http://127.0.0.1:${port}` };
});
const [a, b] = members as [Member, Member];
let server: TestServer;
let client: OpenAI;

const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const pools = async () => (await (await fetch(`${server.url}/v1/health`)).json()).pools as { model_name: string; provider: string; members: { url: string; state: string; in_flight: number; last_error: string | null; next_retry: number | null }[] }[];
const memberState = async () => (await pools())[0]!.members.map((m) => m.state);
const chat = (max_tokens = 4) => client.chat.completions.create({ model: "farm.tiny", messages: [{ role: "user", content: "hi" }], max_tokens });
async function streamed(max_tokens = 6): Promise<string> {
  const res = await post("/v1/chat/completions", { model: "farm.tiny", messages: [{ role: "user", content: "hi" }], max_tokens, stream: true });
  expect(res.status).toBe(200);
  return res.text();
}

/** A stream whose first tokens have arrived; `rest` reads it to its end. */
async function openStream(max_tokens: number): Promise<{ rest(): Promise<string> }> {
  const res = await post("/v1/chat/completions", { model: "farm.tiny", messages: [{ role: "user", content: "tell me a story" }], max_tokens, stream: true });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes('"choices"')) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return {
    async rest() {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return text;
        text += decoder.decode(value, { stream: true });
      }
    },
  };
}

beforeAll(async () => {
  await Promise.all(members.map(start));
  // A hung member is found after three failed checks, half a second apart.
  server = await startTestServer({ LEMONADE_HANG_CHECK_MS: "500", LEMONADE_LOG_LEVEL: "debug" });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused" });
  // llama-server asks for no key; a cloud provider needs one to be asked at all, over http:// only with the opt-in.
  const install = await post("/v1/install", { backend: "cloud", provider: "farm", members: members.map((m) => ({ base_url: `${m.url}/v1` })), api_key: KEY, allow_insecure_http: true });
  expect(install.status).toBe(200);
  expect(await install.json()).toMatchObject({ provider: "farm", models_discovered: 1, members: members.map((m) => `${m.url}/v1`) });
});

afterAll(async () => {
  await server?.close();
  for (const m of members) m.proc?.kill("SIGKILL");
});

test("the pool is one model; requests spread over both members, streaming and not, chat and text completions", async () => {
  const listed = (await (await fetch(`${server.url}/v1/models`)).json()).data.filter((m: { id: string }) => m.id.startsWith("farm."));
  expect(listed.map((m: { id: string }) => m.id)).toEqual(["farm.tiny"]);
  const before = await Promise.all(members.map(generated));
  // Sequential requests tie at none in flight, so they take the members in turn.
  for (let i = 0; i < 2; i++) {
    const answer = await chat();
    expect(answer.model).toBe("farm.tiny");
    expect(answer.usage!.completion_tokens).toBe(4);
  }
  const [da, db] = (await Promise.all(members.map(generated))).map((n, i) => n - before[i]!);
  expect([da, db]).toEqual([4, 4]);
  // Concurrent streams: each goes to the member with fewer in flight.
  const texts = await Promise.all([1, 2, 3, 4].map(() => streamed()));
  for (const text of texts) expect(text.trim().endsWith("data: [DONE]")).toBe(true);
  const after = await Promise.all(members.map(generated));
  expect(after[0]! - before[0]!).toBeGreaterThan(4);
  expect(after[1]! - before[1]!).toBeGreaterThan(4);
  const completion = await client.completions.create({ model: "farm.tiny", prompt: "Once upon", max_tokens: 3 });
  expect(completion.usage!.completion_tokens).toBe(3);
  expect(await pools()).toEqual([
    {
      model_name: "farm.tiny",
      provider: "farm",
      members: members.map((m) => ({ url: `${m.url}/v1`, state: "up", in_flight: 0, last_error: null, next_retry: null })),
    },
  ]);
});

test("a member killed mid-run: its streams end with one error event, the other's whole; the next requests succeed on the other; /v1/health shows it down", async () => {
  // Four streams, two on each member (each takes the one with fewer in flight), all under way
  // (their first tokens read) when a is killed.
  const running = await Promise.all([1, 2, 3, 4].map(() => openStream(80)));
  await kill(a);
  const texts = await Promise.all(running.map((r) => r.rest()));
  const cut = texts.filter((text) => !text.trim().endsWith("data: [DONE]"));
  expect(cut).toHaveLength(2);
  for (const text of cut) {
    // Cut off after its first bytes: one error event, never a retry with a second answer glued on.
    expect(text.split("\n\n").filter((e) => e.startsWith("data: ") && e.includes('"error"'))).toHaveLength(1);
    expect(text).not.toContain("[DONE]");
  }
  const onB = await generated(b);
  for (let i = 0; i < 3; i++) expect((await chat()).usage!.completion_tokens).toBe(4);
  expect((await streamed()).trim().endsWith("data: [DONE]")).toBe(true);
  expect((await client.completions.create({ model: "farm.tiny", prompt: "Once upon", max_tokens: 3 })).usage!.completion_tokens).toBe(3);
  expect((await generated(b)) - onB).toBe(4 * 3 + 6 + 3);
  const [down, up] = (await pools())[0]!.members;
  expect(down).toMatchObject({ url: `${a.url}/v1`, state: "down", in_flight: 0 });
  expect(down!.last_error).toContain("could not be reached");
  expect(down!.next_retry).toBeGreaterThan(Date.now() / 1000 - 1);
  expect(up).toMatchObject({ url: `${b.url}/v1`, state: "up", in_flight: 0 });
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toContain(`lemonade_pool_member_up{provider="farm",member="${a.url}/v1"} 0`);
  expect(metrics).toContain(`lemonade_pool_member_up{provider="farm",member="${b.url}/v1"} 1`);
  expect(metrics).toContain(`lemonade_pool_member_in_flight{provider="farm",member="${b.url}/v1"} 0`);
  expect(server.ctx.logger.snapshot().some((e) => e.line.includes(`member ${a.url}/v1 is down`))).toBe(true);
});

test("the killed member started again is back up after its probe, and takes requests again", async () => {
  await start(a);
  // Its probe runs on the back-off (1 s, doubling while it failed): polled, not timed.
  for (let i = 0; i < 300 && (await memberState())[0] !== "up"; i++) await Bun.sleep(100);
  expect(await memberState()).toEqual(["up", "up"]);
  const onA = await generated(a);
  for (let i = 0; i < 2; i++) await chat();
  expect((await generated(a)) - onA).toBe(4);
});

test("a member that hangs (stopped) is found by the hang check and left for the other; continued, it is back up", async () => {
  a.proc!.kill("SIGSTOP");
  try {
    // Ties take the members in turn: one of the two goes to the stopped member first.
    for (let i = 0; i < 2; i++) expect((await chat()).usage!.completion_tokens).toBe(4);
    const [hung, up] = (await pools())[0]!.members;
    expect(hung).toMatchObject({ state: "down", in_flight: 0 });
    // Its own probe, a second on, may have timed out by now too.
    expect(hung!.last_error).toMatch(/stopped answering its health checks|timed out/);
    expect(up).toMatchObject({ state: "up", in_flight: 0 });
  } finally {
    a.proc!.kill("SIGCONT");
  }
  for (let i = 0; i < 300 && (await memberState())[0] !== "up"; i++) await Bun.sleep(100);
  expect(await memberState()).toEqual(["up", "up"]);
});

test("every member gone: a retryable 503 naming them, for a stream too (refused before it starts)", async () => {
  await Promise.all(members.map(kill));
  const res = await post("/v1/chat/completions", { model: "farm.tiny", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
  expect(res.status).toBe(503);
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  const { error } = await res.json();
  expect(error).toMatchObject({ code: "pool_unavailable", type: "backend_error", retryable: true });
  for (const m of members) expect(error.message).toContain(`${m.url}/v1 (down:`);
  expect(JSON.stringify(error)).not.toContain(KEY);
  expect(await memberState()).toEqual(["down", "down"]);
  const stream = await post("/v1/chat/completions", { model: "farm.tiny", messages: [{ role: "user", content: "hi" }], max_tokens: 2, stream: true });
  expect(stream.status).toBe(503);
  expect((await stream.json()).error.code).toBe("pool_unavailable");
});

test("the key reached no log line (at debug), health, system-info or config.json", async () => {
  const everything = [
    JSON.stringify(server.ctx.logger.snapshot()),
    await (await fetch(`${server.url}/v1/health`)).text(),
    await (await fetch(`${server.url}/v1/system-info`)).text(),
    readFileSync(join(server.cacheDir, "config.json"), "utf8"),
  ].join("\n");
  expect(everything).toContain("farm");
  expect(everything).not.toContain(KEY);
});
