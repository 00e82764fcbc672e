// bench memory: the server's resident memory idle, after 10,000 keep-alive requests and after
// loading and unloading a model 20 times (on the FAKE engine, whose own memory is another
// process's), for `npm start` (its bundle), the sources it ran before, and the single executable, against an Elysia hello-world measured
// in the same run (the goal: idle <= hello-world + 5 MB, the others within 10 % of idle); what the
// runtime itself keeps after the same requests and loads (scripts/bench/runtime-floor.ts), against
// which each server's growth is set; then what each part of the server costs at import, each in a
// fresh process.
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SERVER_RUNTIME_ENV } from "../../cli/runtime-env.ts";
import { freePort } from "../../engines/process.ts";
import { table, type Figure } from "../../lib/bench.ts";
import { fakeEnginePath } from "../fake-engine/path.ts";
import { anonymousMb, load, residentKinds, rssMb, setup, SETTLED_MS, spawnServer, untilUp, type ServerProcess, type Work } from "./common.ts";

const root = join(import.meta.dir, "..", "..");

/** Resident memory once a process has settled. */
async function settled(pid: number): Promise<number> {
  await Bun.sleep(SETTLED_MS);
  return rssMb(pid);
}

/** A process's idle RSS, and how much of it is its own memory rather than mapped code pages. */
interface Idle {
  rss: number;
  anonymous: number;
}

async function idleOf(pid: number): Promise<Idle> {
  const rss = await settled(pid);
  return { rss, anonymous: anonymousMb(pid) };
}

/** An Elysia hello-world in its own process, measured idle: this runtime's floor for the server.
 * It imports the module the server's `import "elysia"` resolves to (the package's ESM entry): a
 * path to the package's folder would load its CommonJS build, which idles about 3 MB higher. */
async function helloWorld(dir: string): Promise<Idle> {
  const file = join(dir, "hello.ts");
  writeFileSync(file, `import { Elysia } from ${JSON.stringify(Bun.fileURLToPath(import.meta.resolve("elysia")))};\nnew Elysia().get("/live", () => ({ status: "ok" })).listen({ hostname: "127.0.0.1", port: Number(process.argv[2]) });\n`);
  const port = freePort();
  const child = Bun.spawn([process.execPath, file, String(port)], { stdout: "ignore", stderr: "inherit" });
  try {
    await untilUp(`http://127.0.0.1:${port}/live`);
    return await idleOf(child.pid);
  } finally {
    child.kill();
    await child.exited;
  }
}

type Kinds = ReturnType<typeof residentKinds>;

/** What the runtime itself keeps (scripts/bench/runtime-floor.ts): idle, after the same 10,000
 * requests (to /live, its one route) and after 20 cycles of the FAKE engine started, chatted with
 * and stopped as the server's loads do, under the server's JavaScriptCore settings. */
async function runtimeFloor(w: Work): Promise<{ idle: number; afterRequests: number; afterLoads: number }> {
  const port = freePort();
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "runtime-floor.ts"), String(port), join(w.extra, "fake-engine.gguf")], {
    env: { ...process.env, ...SERVER_RUNTIME_ENV, PATH: fakeEnginePath(join(w.work, "bin")) },
    stdout: "ignore",
    stderr: "inherit",
  });
  const base = `http://127.0.0.1:${port}`;
  const post = async (path: string, body: unknown = {}) => {
    const res = await fetch(`${base}${path}`, { method: "POST", body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`runtime floor ${path}: ${res.status} ${await res.text()}`);
    return res.arrayBuffer();
  };
  try {
    await untilUp(`${base}/live`);
    const idle = await settled(child.pid);
    for (let i = 0; i < 10_000; i += 8) await Promise.all(Array.from({ length: 8 }, () => fetch(`${base}/live`).then((r) => r.arrayBuffer())));
    const afterRequests = await settled(child.pid);
    for (let i = 0; i < 20; i++) {
      await post("/load");
      await post("/chat", { model: "fake", messages: [{ role: "user", content: "hi" }], max_tokens: 50, stream: true });
      await post("/unload");
    }
    return { idle, afterRequests, afterLoads: await settled(child.pid) };
  } finally {
    child.kill();
    await child.exited;
  }
}

interface Measured {
  idle: Idle;
  afterRequests: number;
  afterLoads: number;
  kinds: Kinds[];
}

async function measure(server: ServerProcess): Promise<Measured> {
  const idle = await idleOf(server.pid);
  const kinds = [residentKinds(server.pid)];
  const routes = ["/live", "/v1/models", "/v1/health", "/api/tags", "/v1/models/extra.tiny-chat"];
  for (let i = 0; i < 10_000; i += 8) {
    await Promise.all(Array.from({ length: 8 }, (_, j) => fetch(`${server.base}${routes[(i + j) % routes.length]}`).then((r) => r.arrayBuffer())));
  }
  const afterRequests = await settled(server.pid);
  kinds.push(residentKinds(server.pid));
  for (let i = 0; i < 20; i++) {
    await load(server, { model_name: "extra.fake-engine", llamacpp_backend: "system" });
    const res = await server.post("/v1/chat/completions", { model: "extra.fake-engine", messages: [{ role: "user", content: "hi" }], max_tokens: 50, stream: true });
    await res.arrayBuffer();
    await server.post("/v1/unload", { model_name: "extra.fake-engine" });
  }
  const afterLoads = await settled(server.pid);
  kinds.push(residentKinds(server.pid));
  return { idle, afterRequests, afterLoads, kinds };
}

function figures(label: string, m: Measured, hello: Idle): Figure[] {
  return [
    { name: `${label}: idle RSS`, value: m.idle.rss, unit: "MB", baseline: { name: "Elysia hello-world + 5 MB", value: hello.rss + 5 }, goal: { op: "<=", target: 1 } },
    { name: `${label}: after 10,000 keep-alive requests`, value: m.afterRequests, unit: "MB", baseline: { name: "idle", value: m.idle.rss }, goal: { op: "<=", target: 1.1 } },
    { name: `${label}: after 20 loads and unloads`, value: m.afterLoads, unit: "MB", baseline: { name: "idle", value: m.idle.rss }, goal: { op: "<=", target: 1.1 } },
  ];
}

/** The idle RSS split into Bun's code pages (the executable, mapped) and the process's own memory. */
function split(label: string, idle: Idle, hello: Idle): Figure[] {
  return [
    { name: `${label}: idle, Bun's code pages (file-backed)`, value: idle.rss - idle.anonymous, unit: "MB", baseline: { name: "hello-world's", value: hello.rss - hello.anonymous } },
    { name: `${label}: idle, own memory (JS heap, malloc, JIT code)`, value: idle.anonymous, unit: "MB", baseline: { name: "hello-world's", value: hello.anonymous } },
  ];
}

/** What the growth under load is made of: each kind of resident memory after the requests and
 * after the loads, against the same kind idle. */
function growth(label: string, kinds: Kinds[]): Figure[] {
  const [idle, ...after] = kinds as [Kinds, Kinds, Kinds];
  const names: Record<keyof Kinds, string> = { files: "mapped files' pages (Bun's code)", jitCode: "JIT machine code", heapAndMalloc: "JS heap, malloc, bytecode" };
  return (["after 10,000 requests", "after 20 loads"] as const).flatMap((when, i) =>
    (Object.keys(names) as (keyof Kinds)[]).map((kind) => ({ name: `${label}: ${when}, ${names[kind]}`, value: after[i]![kind], unit: "MB", baseline: { name: "idle", value: idle[kind] } })),
  );
}

type Floor = Awaited<ReturnType<typeof runtimeFloor>>;

/** The runtime floor's own growth, and each server's growth against it. */
function againstFloor(floor: Floor, servers: [string, Measured][]): Figure[] {
  const label = "runtime floor (hello-world + the FAKE engine started, chatted with, stopped)";
  return [
    { name: `${label}: after 10,000 keep-alive requests`, value: floor.afterRequests, unit: "MB", baseline: { name: "its idle", value: floor.idle } },
    { name: `${label}: after 20 loads and unloads`, value: floor.afterLoads, unit: "MB", baseline: { name: "its idle", value: floor.idle } },
    ...servers.flatMap(([name, m]) => [
      { name: `${name}: MB over idle after 10,000 requests`, value: m.afterRequests - m.idle.rss, unit: "MB", baseline: { name: "the floor's", value: floor.afterRequests - floor.idle } },
      { name: `${name}: MB over idle after 20 loads`, value: m.afterLoads - m.idle.rss, unit: "MB", baseline: { name: "the floor's", value: floor.afterLoads - floor.idle } },
    ]),
  ];
}

/** The single executable, built into the scratch folder as `bun run build` builds it. */
export function buildExecutable(dir: string): string {
  const out = join(dir, "lemonade");
  const build = Bun.spawnSync([process.execPath, join(root, "scripts", "build.ts"), out], { stdout: "ignore", stderr: "inherit" });
  if (build.exitCode !== 0) throw new Error("bun run build failed");
  return out;
}

/** The servers each bench runs: `npm start` as package.json starts it (cli/start.js, on a bundle
 * built beforehand into the scratch folder, as `npm ci` builds it), the sources `npm start` ran
 * before the bundle (for comparison), and the single executable. */
export function servers(dir: string): { label: string; command: string[]; env: Record<string, string> }[] {
  const startDir = join(dir, "start");
  const build = Bun.spawnSync([process.execPath, join(root, "scripts", "build.ts"), "--start", startDir], { stdout: "ignore", stderr: "inherit" });
  if (build.exitCode !== 0) throw new Error("scripts/build.ts --start failed");
  return [
    { label: "npm start (bun cli/start.js serve: the bundle)", command: [process.execPath, join(root, "cli", "start.js")], env: { LEMONADE_START_DIR: startDir } },
    { label: "from sources (bun cli/main.ts serve)", command: [process.execPath, join(root, "cli", "main.ts")], env: {} },
    { label: "single executable", command: [buildExecutable(dir)], env: {} },
  ];
}

/** Where the server's RSS goes: its parts imported one after another into one fresh process, in
 * the order start-up loads them, each with what it adds (what an earlier one loaded is not counted
 * again); the engines' own dependencies last, for reference. */
function importCosts(): Figure[] {
  const parts: [string, string][] = [
    ["cli/jit-policy.ts (start-up's JIT policy, imported first as the CLI does; with the first import's own cost)", "./cli/jit-policy.ts"],
    ["@sinclair/typebox", "@sinclair/typebox"],
    ["spec/ (every endpoint's schemas)", "./spec/index.ts"],
    ["elysia", "elysia"],
    ["config/", "./config/config.ts"],
    ["models/ (catalog, library, cloud)", "./models/library.ts"],
    ["engines/ (every recipe, the installer)", "./engines/installer.ts"],
    ["runtime/ (scheduler, proxy, jobs, KV cache)", "./runtime/jobs.ts"],
    ["protocols/ (openai, ollama, anthropic, mcp, omni, routing)", "./protocols/mcp.ts"],
    ["observability/metrics.ts (prom-client on first scrape)", "./observability/metrics.ts"],
    ["http/ (every route; OpenAPI and docs pages on first use)", "./http/app.ts"],
    ["app/ and cli/ (the whole server)", "./cli/commands/serve.ts"],
    ["http/openapi.ts (first GET /openapi.json)", "./http/openapi.ts"],
    ["http/reference.ts (first /docs page)", "./http/reference.ts"],
    ["prom-client (its lib modules)", "prom-client"],
    ["onnxruntime-node (its engine process only)", "onnxruntime-node"],
    ["@huggingface/tokenizers (its engine process only)", "@huggingface/tokenizers"],
  ];
  const code = `const rss = () => (Bun.gc(true), process.memoryUsage().rss / 1048576);
let before = rss();
for (const spec of ${JSON.stringify(parts.map((p) => p[1]))}) { await import(spec); const now = rss(); console.log(now - before); before = now; }`;
  const out = Bun.spawnSync([process.execPath, "-e", code], { cwd: root, stderr: "ignore" }).stdout.toString().trim().split("\n").map(Number);
  return parts.map(([name], i) => ({ name: `import ${name}`, value: out[i] ?? NaN, unit: "MB" }));
}

export async function benchMemory(): Promise<Figure[]> {
  const w: Work = setup();
  copyFileSync(w.modelPath, join(w.extra, "fake-engine.gguf"));
  const scratch = mkdtempSync(join(tmpdir(), "lemonade-bench-exe-"));
  const out: Figure[] = [];
  try {
    const hello = await helloWorld(scratch);
    const floor = await runtimeFloor(w);
    const measured: [string, Measured][] = [];
    const splits: Figure[] = [];
    const grew: Figure[] = [];
    for (const { label, command, env } of servers(scratch)) {
      // At the default log level, as npm start runs: the log's first lines page in what writing
      // them takes (spawnServer's other benches keep to warnings).
      const server = await spawnServer(w, { ...env, LEMONADE_LOG_LEVEL: "info" }, command);
      try {
        const m = await measure(server);
        measured.push([label, m]);
        out.push(...figures(label, m, hello));
        splits.push(...split(label, m.idle, hello));
        grew.push(...growth(label, m.kinds));
      } finally {
        await server.stop();
      }
    }
    console.log(table(`bench memory: server RSS (engines are other processes); Elysia hello-world idles at ${hello.rss.toFixed(1)} MB in this run`, out));
    console.log(table("  where it goes: the idle RSS as code pages and own memory", splits));
    console.log(table("  what grows under load, by kind (smaps)", grew));
    console.log(table("  what grows against the runtime's floor: what Bun itself keeps after the same requests and loads (scripts/bench/runtime-floor.ts)", againstFloor(floor, measured)));
    const costs = importCosts();
    console.log(table("  and what each part adds to a fresh bun process's RSS, imported in start-up order under start-up's JIT policy", costs));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    w.cleanup();
  }
  return out;
}
