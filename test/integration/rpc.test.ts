// A model split across machines on llama.cpp's RPC engine, on loopback: two `lemonade worker`s
// (real ggml-rpc-server processes behind the project's TLS link) and the tiny chat model split
// across them and the local CPU. The greedy answer equals the same model's answer run locally;
// a wrong secret, an unreachable worker and one of another RPC protocol version are clear
// errors at load with nothing left running; a worker killed mid-stream ends the stream with one
// error event, and the next request loads the model again on the worker that answers.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { defaultCacheDir } from "../../config/config.ts";
import { isAlive } from "../../engines/process.ts";
import { rpcServerBinary, runWorker, type RunningWorker } from "../../app/worker.ts";
import { operations } from "../../spec/index.ts";
import { linkEngines, MODELS, testModelsDir } from "../helpers/engines.ts";
import { expectMatches, startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const SECRET = "correct-horse-battery-staple-42";
const ROOT = join(import.meta.dir, "..", "..");
const MODEL = "extra.tiny-chat";
const built = rpcServerBinary(defaultCacheDir());
if (!built) console.warn("SKIPPED test/integration/rpc.test.ts: ggml-rpc-server is not built (run `npx bun scripts/build-engines.ts llamacpp`)");

interface WorkerProcess {
  child: Subprocess<"ignore", "pipe", "pipe">;
  address: string;
  rpcPid: number;
  /** Everything it logged so far. */
  log: string[];
}

/** `lemonade worker` as a user starts it, on a loopback port of its choosing. */
async function startWorkerProcess(secret = SECRET, cacheDir = tempDir("lemonade-worker-")): Promise<WorkerProcess> {
  linkEngines(cacheDir);
  const child = Bun.spawn(["bun", join(ROOT, "cli", "main.ts"), "worker", "--host", "127.0.0.1", "--port", "0", "--threads", "1"], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, LEMONADE_CACHE_DIR: cacheDir, LEMONADE_RPC_SECRET: secret },
  });
  const log: string[] = [];
  void (async () => {
    for await (const chunk of child.stderr) log.push(new TextDecoder().decode(chunk));
  })();
  const reader = child.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`lemonade worker exited before it listened:\n${log.join("")}`);
    text += new TextDecoder().decode(value);
  }
  const ready = JSON.parse(text.split("\n")[0]!);
  return { child, address: `127.0.0.1:${ready.port}`, rpcPid: ready.rpc_server_pid, log };
}

/** A machine that dies: the worker and its rpc-server, at once. */
function killWorker(w: WorkerProcess): void {
  for (const pid of [w.child.pid, w.rpcPid]) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

const post = (server: TestServer, path: string, body: Record<string, unknown>) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const greedy = { max_tokens: 24, temperature: 0, seed: 7, ignore_eos: true };
const prompt = [{ role: "user", content: "Tell me about lighthouses." }];

async function answer(server: TestServer): Promise<string> {
  const res = await post(server, "/api/v1/chat/completions", { model: MODEL, messages: prompt, ...greedy });
  expect(res.status).toBe(200);
  return (await res.json()).choices[0].message.content;
}

const health = async (server: TestServer) => (await fetch(`${server.url}/api/v1/health`)).json();
/** The loaded models, each with its launch command as one line to search. */
const loaded = async (server: TestServer) =>
  ((await health(server)).all_models_loaded as { model_name: string; launch_command: string[]; rpc?: Record<string, any> }[]).map((m) => ({ ...m, launch_command: m.launch_command.join(" ") }));

/** The server's workers as system-info lists them, after a fresh health check of each. */
async function workersChecked(server: TestServer): Promise<any[]> {
  await server.ctx.rpcWorkers.refresh();
  return (await (await fetch(`${server.url}/api/v1/system-info`)).json()).rpc_workers;
}

/** A loopback port that accepts and never answers: a worker stuck in its handshake. */
function silentPort(): Promise<{ port: number; close(): void }> {
  const held: net.Socket[] = [];
  const server = net.createServer((s) => void held.push(s));
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: (server.address() as net.AddressInfo).port,
        close: () => {
          for (const s of held) s.destroy();
          server.close();
        },
      }),
    ),
  );
}

test("`lemonade worker --help` explains the loopback port and the secret; without a secret it is a usage error", async () => {
  const run = async (args: string[], env: Record<string, string | undefined>) => {
    const child = Bun.spawn(["bun", join(ROOT, "cli", "main.ts"), "worker", ...args], { stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
    const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
    return { code: await child.exited, out, err };
  };
  const help = await run(["--help"], {});
  expect(help.code).toBe(0);
  expect(help.out).toContain("Usage: lemonade worker");
  expect(help.out).toContain("listens on loopback only");
  expect(help.out).toContain("LEMONADE_RPC_SECRET");
  const bare = await run([], { LEMONADE_RPC_SECRET: "" });
  expect(bare.code).toBe(2);
  expect(bare.err).toContain("needs a shared secret");
});

describe.skipIf(!built)("models split across RPC workers", () => {
  let a: WorkerProcess;
  let b: WorkerProcess;
  let server: TestServer;
  let extra: string;

  beforeAll(async () => {
    const models = testModelsDir();
    extra = tempDir("lemonade-extra-");
    for (const f of [MODELS.chat, MODELS.chatB]) copyFileSync(join(models, f), join(extra, f));
    [a, b] = await Promise.all([startWorkerProcess(), startWorkerProcess()]);
    server = await startTestServer({
      LEMONADE_EXTRA_MODELS_DIR: extra,
      LEMONADE_MAX_LOADED_MODELS: "-1",
      LEMONADE_RPC_WORKERS: `${a.address},${b.address}`,
      LEMONADE_RPC_SECRET: SECRET,
      LEMONADE_LOG_LEVEL: "info",
      // The split engine computes the whole answer: no KV cache saved by the local one is restored.
      LEMONADE_KV_CACHE_SWAP: "0",
    });
  });
  afterAll(async () => {
    await server?.close();
    for (const w of [a, b]) if (w) killWorker(w);
  });

  test("system-info lists each worker with its devices and free memory, as its rpc-server reports them", async () => {
    const workers = await workersChecked(server);
    expect(workers.map((w) => w.address)).toEqual([a.address, b.address]);
    for (const w of workers) {
      expect(w).toMatchObject({ state: "ready", busy: false, protocol: expect.stringMatching(/^6\.0\.\d+$/) });
      expect(w.devices[0].name).toBe("CPU");
      expect(w.devices[0].free_bytes).toBeGreaterThan(0);
      expect(w.devices[0].total_bytes).toBeGreaterThanOrEqual(w.devices[0].free_bytes);
    }
    expectMatches(operations.systemInfo.response, await (await fetch(`${server.url}/api/v1/system-info`)).json());
  });

  test("split across both workers and the local CPU, the greedy answer is the local one, token for token", async () => {
    const local = await answer(server);
    const load = await post(server, "/api/v1/load", { model_name: MODEL, rpc: "all", save_options: true });
    expect(load.status).toBe(200);
    const [entry] = await loaded(server);
    // The server sets --rpc to its own loopback tunnel ports, and offloads every layer.
    expect(entry!.launch_command).toMatch(/--rpc 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+ -ngl all/);
    expect(entry!.launch_command).not.toContain(a.address);
    expect(await answer(server)).toBe(local);
    const split = (await loaded(server))[0]!.rpc!;
    expect(split.workers.map((w: { address: string }) => w.address)).toEqual([a.address, b.address]);
    for (const w of split.workers) {
      expect(w.devices).toEqual(["CPU"]);
      // Each worker holds a share of the weights, and the answer's compute went over its link.
      expect(w.weights_mib).toBeGreaterThan(0);
      expect(w.bytes_sent).toBeGreaterThan(0);
      expect(w.bytes_received).toBeGreaterThan(0);
    }
    expect(split).toMatchObject({ missing_workers: [], tensor_split: "by free memory" });
    // The token embeddings stay on this machine's CPU.
    expect(split.local_weights_mib).toBeGreaterThan(0);
    expectMatches(operations.health.response, await health(server));
  });

  test("reloaded with other options (a tensor split), the model takes the same workers its old engine held", async () => {
    const res = await post(server, "/api/v1/load", { model_name: MODEL, rpc: "all", tensor_split: "3,1", save_options: true });
    expect(res.status).toBe(200);
    const [entry] = await loaded(server);
    expect(entry!.launch_command).toContain("--tensor-split 3,1");
    expect(entry!.rpc).toMatchObject({ tensor_split: "3,1", missing_workers: [] });
    const [first, second] = entry!.rpc!.workers;
    // Three quarters of the layers on the first worker: it was sent more of the weights.
    expect(first.weights_mib).toBeGreaterThan(second.weights_mib);
    // Back to the split by free memory, which gives each worker a layer.
    expect((await post(server, "/api/v1/load", { model_name: MODEL, rpc: "all", tensor_split: "", save_options: true })).status).toBe(200);
    expect((await loaded(server))[0]!.launch_command).not.toContain("--tensor-split");
  });

  test("a worker with a model is reported busy, and not offered to another model", async () => {
    const workers = await workersChecked(server);
    expect(workers.map((w) => [w.state, w.busy])).toEqual([["ready", true], ["ready", true]]);
    const other = await post(server, "/api/v1/load", { model_name: "extra.tiny-chat-b", rpc: a.address });
    expect(other.status).toBe(503);
    const body = await other.json();
    expect(body.code).toBe("rpc_worker_unavailable");
    expect(body.message).toContain(`${a.address} is serving another model`);
  });

  test("a worker killed mid-stream: one error event and no hang; the next request loads on the worker that answers", async () => {
    const res = await post(server, "/api/v1/chat/completions", { model: MODEL, messages: prompt, stream: true, max_tokens: 4000, ignore_eos: true, temperature: 0 });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes("data: ")) text += new TextDecoder().decode((await reader.read()).value);
    killWorker(b);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const errors = text.split("\n\n").filter((e) => e.includes('"error"'));
    expect(errors).toHaveLength(1);
    // In the chat route's shape: an OpenAI error object, the engine having stopped mid-answer.
    expect(JSON.parse(errors[0]!.replace(/^data: /, "")).error).toMatchObject({ type: "backend_error", status_code: 502 });
    expect(text).not.toContain("[DONE]");
    // The engine died with its worker's link, and the model is unloaded.
    for (;;) {
      if (!(await loaded(server)).some((m) => m.model_name === "tiny-chat")) break;
      await Bun.sleep(50);
    }
    // `rpc: all` loads again on the worker left, which holds the tiny model alone.
    const again = await post(server, "/api/v1/chat/completions", { model: MODEL, messages: prompt, ...greedy });
    expect(again.status).toBe(200);
    const split = (await loaded(server)).find((m) => m.model_name === "tiny-chat")!.rpc!;
    expect(split.workers.map((w: { address: string }) => w.address)).toEqual([a.address]);
    expect(split.missing_workers).toEqual([b.address]);
    expect((await workersChecked(server)).find((w) => w.address === b.address)).toMatchObject({ state: "unavailable" });
  });

  test("a model that names the missing worker gets a 503 naming it, and nothing is left loaded", async () => {
    await post(server, "/api/v1/unload", { model_name: MODEL });
    const res = await post(server, "/api/v1/load", { model_name: MODEL, rpc: b.address });
    expect(res.status).toBe(503);
    const body = await res.json();
    expect(body.code).toBe("rpc_worker_unavailable");
    expect(body.message).toContain(`rpc worker ${b.address} is unreachable`);
    expect(await loaded(server)).toEqual([]);
  });

  test("a worker slow to answer its handshake does not hold up another model's load", async () => {
    const silent = await silentPort();
    const other = await startTestServer({
      LEMONADE_EXTRA_MODELS_DIR: extra,
      LEMONADE_MAX_LOADED_MODELS: "-1",
      LEMONADE_RPC_WORKERS: `127.0.0.1:${silent.port}`,
      LEMONADE_RPC_SECRET: SECRET,
      // Longer than the whole test: the stuck load ends only when the worker's port closes.
      LEMONADE_RPC_TIMEOUT_MS: "600000",
    });
    try {
      let settled = false;
      const stuck = post(other, "/api/v1/load", { model_name: MODEL, rpc: "all" }).finally(() => (settled = true));
      expect((await post(other, "/api/v1/load", { model_name: "extra.tiny-chat-b" })).status).toBe(200);
      // The other model loaded while the split one still waits on its worker's handshake.
      expect(settled).toBe(false);
      silent.close();
      const refused = await stuck;
      expect(refused.status).toBe(503);
      expect((await refused.json()).message).toContain(`rpc worker 127.0.0.1:${silent.port}`);
      expect((await loaded(other)).map((m) => m.model_name)).toEqual(["tiny-chat-b"]);
    } finally {
      await other.close();
      silent.close();
    }
  });
});

describe.skipIf(!built)("a worker the server cannot use: a clear error at load, nothing left running", () => {
  let w: WorkerProcess;
  let extra: string;
  const servers: TestServer[] = [];
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    extra = tempDir("lemonade-extra-");
    copyFileSync(join(testModelsDir(), MODELS.chat), join(extra, MODELS.chat));
    w = await startWorkerProcess();
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
    for (const r of workers) await r.stop();
    killWorker(w);
  });

  async function serverFor(workersList: string, secret: string): Promise<TestServer> {
    const s = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_RPC_WORKERS: workersList, LEMONADE_RPC_SECRET: secret });
    servers.push(s);
    return s;
  }

  async function refusal(s: TestServer): Promise<string> {
    const res = await post(s, "/api/v1/load", { model_name: MODEL, rpc: "all" });
    expect(res.status).toBe(503);
    const body = await res.json();
    expect(body.code).toBe("rpc_worker_unavailable");
    expect(await loaded(s)).toEqual([]);
    return body.message;
  }

  test("a wrong secret is refused before any byte reaches rpc-server; the secret is in no log line", async () => {
    const wrong = "the-wrong-secret-entirely";
    const accepted = () => w.log.join("").split("Accepted client connection").length;
    const before = accepted();
    const s = await serverFor(w.address, wrong);
    expect(await refusal(s)).toContain(`rpc worker ${w.address} refused the secret`);
    const logged = w.log.join("");
    expect(logged).toContain("refused a connection");
    // rpc-server logs each client it accepts: no new one was.
    expect(accepted()).toBe(before);
    for (const secret of [wrong, SECRET]) {
      expect(logged).not.toContain(secret);
      expect(s.ctx.logger.snapshot().map((e) => e.line).join("\n")).not.toContain(secret);
    }
    const settings = await (await fetch(`${s.url}/internal/config`)).text();
    expect(settings).not.toContain(wrong);
  });

  test("memory admission counts the workers' memory for a model that uses them", async () => {
    // 5 MB here: the tiny model (25 MB of weights) fits only with the worker's memory counted.
    const s = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_RPC_WORKERS: w.address, LEMONADE_RPC_SECRET: SECRET, LEMONADE_MEMORY_LIMIT_GB: "0.005" });
    servers.push(s);
    await s.ctx.rpcWorkers.refresh();
    const alone = await post(s, "/api/v1/load", { model_name: MODEL });
    expect(alone.status).toBe(507);
    expect((await post(s, "/api/v1/load", { model_name: MODEL, rpc: "all" })).status).toBe(200);
    expect((await loaded(s))[0]!.rpc!.workers[0].address).toBe(w.address);
    await post(s, "/api/v1/unload", { model_name: MODEL });
  });

  test("an unreachable worker is named", async () => {
    const closed = await silentPort();
    closed.close();
    expect(await refusal(await serverFor(`127.0.0.1:${closed.port}`, SECRET))).toContain(`rpc worker 127.0.0.1:${closed.port} is unreachable`);
  });

  test("a worker address that is not host:port is named", async () => {
    expect(await refusal(await serverFor("worker-without-port", SECRET))).toContain("rpc worker 'worker-without-port' is not host:port");
  });

  test("a worker running another llama.cpp (another RPC protocol version) is refused, as llama.cpp's HELLO check would", async () => {
    const older = await runWorker({
      rpcBinary: join(ROOT, "scripts", "fake-engine", "rpc-server"),
      host: "127.0.0.1",
      port: 0,
      secret: SECRET,
      stateDir: join(tempDir("lemonade-worker-"), "worker"),
      cacheDir: defaultCacheDir(),
      log: () => {},
    });
    workers.push(older);
    expect((await older.status()).protocol).toBe("5.0.0");
    expect(await refusal(await serverFor(`127.0.0.1:${older.port}`, SECRET))).toContain("runs RPC protocol 5.0.0 and this server's llama.cpp speaks 6.0.x");
  });
});

describe.skipIf(!built)("a worker killed outright", () => {
  test("leaves its rpc-server running only until the next worker starts on its folder, which stops it", async () => {
    const cacheDir = tempDir("lemonade-worker-");
    const first = await startWorkerProcess(SECRET, cacheDir);
    first.child.kill("SIGKILL");
    await first.child.exited;
    // SIGKILL gave the worker no chance to stop its child.
    expect(isAlive(first.rpcPid)).toBe(true);
    const second = await startWorkerProcess(SECRET, cacheDir);
    try {
      // The orphan is reaped by init once killed, and the log line comes down its own pipe: wait
      // for both (a failure shows as the test's timeout).
      while (isAlive(first.rpcPid) || !second.log.join("").includes("left running")) await Bun.sleep(20);
      expect(second.log.join("")).toContain(`left running by a worker that was killed (pids ${first.rpcPid})`);
      expect(isAlive(second.rpcPid)).toBe(true);
    } finally {
      killWorker(second);
      killWorker(first);
    }
  });
});
