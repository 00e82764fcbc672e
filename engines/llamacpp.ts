// The llamacpp recipe: llama.cpp's llama-server for LLMs, embeddings and rerankers. Where its
// binary is per backend, how it is built from source, and the argv a model starts with (add a
// llama-server flag in `llamaArgv`).
import { statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { splitArgs } from "../lib/args.ts";
import { systemClock, type Clock } from "../lib/clock.ts";
import {
  checkAllowedArgs,
  checkReservedArgs,
  EngineConfigError,
  type AllowedFlags,
  type Attachment,
  type BuildRecipe,
  type LaunchInput,
  type LaunchPlan,
  type Recipe,
  type RpcSettings,
  type SourceBuiltEngine,
} from "./engine.ts";
import { parseWorkerAddress, RpcWorkerError, statusProblem, type WorkerAddress, type WorkerStatus } from "./rpc-address.ts";
import type { Tunnel } from "./rpc-link.ts";
import { autoBackend, locateSourceBuilt, sourceBuiltRecipeStatus } from "./source-build.ts";

/** llama.cpp's RPC worker binary, built beside llama-server (tools/rpc). */
export const RPC_SERVER_BINARY = "ggml-rpc-server";

export const LLAMACPP: SourceBuiltEngine = {
  recipe: "llamacpp",
  binary: "llama-server",
  // `-rpc`: the build gained ggml's RPC backend and its worker binary, so older builds rebuild.
  version: "node-llama-cpp-3.21.1-rpc",
  description: "llama.cpp",
  extras: [{ binary: RPC_SERVER_BINARY, use: "lemonade worker" }],
};

const LLAMACPP_BUILD: BuildRecipe = {
  engine: LLAMACPP,
  npmPackage: "node-llama-cpp@3.21.1",
  async extract(pkg, dest, run) {
    await run(["git", "clone", "--quiet", join(pkg, "llama", "gitRelease.bundle"), dest], tmpdir());
  },
  cmakeFlags: [
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    // One self-contained binary: a shared build would carry its build folder as RUNPATH.
    "-DBUILD_SHARED_LIBS=OFF",
    // The RPC backend in llama-server (`--rpc`) and its worker, `ggml-rpc-server` (`lemonade worker`).
    "-DGGML_RPC=ON",
  ],
  targets: ["llama-server", RPC_SERVER_BINARY],
};

/** Flags the server sets itself; users may not pass them in `llamacpp_args`. */
export const RESERVED_LLAMA_FLAGS = [
  "-m", "--model", "--port", "--host", "-c", "--ctx-size", "-ngl", "--n-gpu-layers", "--gpu-layers",
  "--jinja", "-mm", "--mmproj", "--embedding", "--embeddings", "--reranking", "--rerank",
  "--metrics", "--threads-http", "--no-webui", "--webui", "--ui", "--no-ui", "--slot-save-path", "--reuse-port",
  // These would break the proxy: another path prefix, a key it does not send, TLS.
  "--api-prefix", "--path", "--api-key", "--api-key-file", "--ssl-key-file", "--ssl-cert-file",
  // Set through the llamacpp_device option.
  "--device", "-dev",
];

/** Flags that write files outside the model's own folders, let the engine read arbitrary local
 * files, reach the network, run tools or serve other models: refused in `llamacpp_args`. */
export const UNSAFE_LLAMA_FLAGS = [
  "--log-file", "--prompt-cache", "--prompt-cache-all", "--logits-output-dir", "--media-path",
  "--tools", "--tools-runtime", "--mcp-servers-config", "--mcp-servers-json", "--ui-mcp-proxy", "--webui-mcp-proxy",
  "--rpc", "-hf", "-hfr", "--hf-repo", "-hff", "--hf-file", "-hfd", "-hfrd", "--hf-repo-draft", "-mu", "--model-url",
  "-dr", "--docker-repo", "--models-dir", "--models-preset", "--models-max", "--models-autoload",
];

export type LlamaMode = "llm" | "embedding" | "reranking";

export interface LlamaLaunch {
  modelPath: string;
  mmprojPath?: string;
  mode: LlamaMode;
  ctxSize: number;
  /** Extra flags, already split into argv words. */
  userArgs: string[];
  /** Where `/slots/{id}?action=save|restore` files live. */
  slotSavePath?: string;
  /** `llamacpp_device`: llama-server's `--device` list (e.g. `Vulkan0`); empty leaves its default. */
  device?: string;
  /** Auto-tune's flags: the server's own (so `-ngl` may be among them), before the user's. */
  tuningArgs?: string[];
}

/** The llama-server flags users may pass in `llamacpp_args`, from its `--help` (true: it takes a
 * value; "optional": a value may follow, as `-fa` or `-fa on`): threads, batching and memory
 * placement, precision (KV cache types, flash attention), RoPE, sampling defaults, reasoning and
 * logging. Any other flag, reserved, unsafe or merely unlisted, is refused. */
export const ALLOWED_LLAMA_FLAGS: AllowedFlags = {
  // Threads.
  "-t": true, "--threads": true, "-tb": true, "--threads-batch": true, "-C": true, "--cpu-mask": true, "-Cr": true, "--cpu-range": true,
  "--cpu-strict": true, "--prio": true, "--poll": true, "-Cb": true, "--cpu-mask-batch": true, "-Crb": true, "--cpu-range-batch": true,
  "--cpu-strict-batch": true, "--prio-batch": true, "--poll-batch": true, "--numa": true,
  // Batching, slots and memory.
  "-b": true, "--batch-size": true, "-ub": true, "--ubatch-size": true, "--keep": true, "--swa-full": false,
  "-np": true, "--parallel": true, "-cb": false, "--cont-batching": false, "-nocb": false, "--no-cont-batching": false,
  "-kvu": false, "--kv-unified": false, "-no-kvu": false, "--no-kv-unified": false, "--kv-unified-per-slot": true,
  "-ctxcp": true, "--ctx-checkpoints": true, "--swa-checkpoints": true, "-cms": true, "--checkpoint-min-step": true, "-cram": true, "--cache-ram": true,
  "--cache-idle-slots": false, "--no-cache-idle-slots": false, "--context-shift": false, "--no-context-shift": false,
  "--cache-prompt": false, "--no-cache-prompt": false, "--cache-reuse": true, "--warmup": false, "--no-warmup": false,
  "-kvo": false, "--kv-offload": false, "-nkvo": false, "--no-kv-offload": false, "--repack": false, "-nr": false, "--no-repack": false,
  "--no-host": false, "-dt": true, "--defrag-thold": true, "--mlock": false, "--mmap": false, "--no-mmap": false,
  "-dio": false, "--direct-io": false, "-ndio": false, "--no-direct-io": false, "-lm": true, "--load-mode": true, "-lzm": true, "--lazy-mode": true,
  "-ot": true, "--override-tensor": true, "-cmoe": false, "--cpu-moe": false, "-ncmoe": true, "--n-cpu-moe": true, "-ncffn": true, "--n-cpu-ffn": true,
  "-sm": true, "--split-mode": true, "-ts": true, "--tensor-split": true, "-mg": true, "--main-gpu": true,
  "-fit": "optional", "--fit": "optional", "-fitt": true, "--fit-target": true, "-fitc": true, "--fit-ctx": true, "--op-offload": false, "--no-op-offload": false,
  // Precision and attention.
  "-ctk": true, "--cache-type-k": true, "-ctv": true, "--cache-type-v": true, "-fa": "optional", "--flash-attn": "optional",
  // RoPE.
  "--rope-scaling": true, "--rope-scale": true, "--rope-freq-base": true, "--rope-freq-scale": true, "--yarn-orig-ctx": true,
  "--yarn-ext-factor": true, "--yarn-attn-factor": true, "--yarn-beta-slow": true, "--yarn-beta-fast": true,
  // Sampling defaults, which a request's own values override.
  "-n": true, "--predict": true, "--n-predict": true, "--samplers": true, "-s": true, "--seed": true, "--sampler-seq": true, "--sampling-seq": true,
  "--ignore-eos": false, "--temp": true, "--temperature": true, "--top-k": true, "--top-p": true, "--min-p": true, "--top-nsigma": true, "--top-n-sigma": true,
  "--xtc-probability": true, "--xtc-threshold": true, "--typical": true, "--typical-p": true, "--repeat-last-n": true, "--repeat-penalty": true,
  "--presence-penalty": true, "--frequency-penalty": true, "--dry-multiplier": true, "--dry-base": true, "--dry-allowed-length": true,
  "--dry-penalty-last-n": true, "--dry-sequence-breaker": true, "--adaptive-target": true, "--adaptive-decay": true, "--dynatemp-range": true,
  "--dynatemp-exp": true, "--mirostat": true, "--mirostat-lr": true, "--mirostat-ent": true, "-bs": false, "--backend-sampling": false,
  // Reasoning and the chat template (by name or inline, never from a file).
  "--reasoning-format": true, "-rea": "optional", "--reasoning": "optional", "--reasoning-effort": true, "--reasoning-budget": true,
  "--reasoning-budget-message": true, "--reasoning-preserve": false, "--no-reasoning-preserve": false, "--chat-template": true,
  "--chat-template-kwargs": true, "--prefill-assistant": false, "--no-prefill-assistant": false, "-sps": true, "--slot-prompt-similarity": true,
  // Naming, timeouts and logging to the server's own log.
  "-a": true, "--alias": true, "-to": true, "--timeout": true, "--perf": false, "--no-perf": false, "--log-disable": false, "--log-colors": "optional",
  "-v": false, "--verbose": false, "--log-verbose": false, "-lv": true, "--verbosity": true, "--log-verbosity": true,
  "--log-prefix": false, "--no-log-prefix": false, "--log-timestamps": false, "--no-log-timestamps": false,
};

function checkUserArgs(args: string[]): void {
  checkReservedArgs("llamacpp_args", RESERVED_LLAMA_FLAGS, args);
  checkReservedArgs("llamacpp_args", UNSAFE_LLAMA_FLAGS, args, "it writes or reads files outside the model's folders, reaches the network or runs tools");
  checkAllowedArgs("llamacpp_args", ALLOWED_LLAMA_FLAGS, RESERVED_LLAMA_FLAGS, args, "thread, batching, memory, precision, RoPE, sampling, reasoning and logging");
}

/** llama-server's parallel slots: `-np`/`--parallel` when the user sets it, else its own default
 * (auto: 4 slots sharing one unified KV cache, so each request may still use the whole context). */
export function parallelSlots(userArgs: string[]): number {
  for (let i = 0; i < userArgs.length; i++) {
    const [flag, inline] = userArgs[i]!.split("=");
    if (flag === "-np" || flag === "--parallel") {
      const n = Number(inline ?? userArgs[i + 1]);
      if (Number.isInteger(n) && n > 0) return n;
    }
  }
  return 4;
}

export function llamaArgv(binary: string, port: number, launch: LlamaLaunch): string[] {
  checkUserArgs(launch.userArgs);
  const argv = [binary, "-m", launch.modelPath, "--host", "127.0.0.1", "--port", String(port), "--ctx-size", String(launch.ctxSize)];
  // llama-server serves each connection on a thread that a kept-alive idle connection holds for
  // seconds; its default pool (slots + 4) stalls a burst of concurrent clients, so give it room.
  argv.push("--jinja", "--metrics", "--no-webui", "--threads-http", "64");
  if (launch.mode === "embedding") argv.push("--embeddings");
  if (launch.mode === "reranking") argv.push("--reranking");
  if (launch.mmprojPath) argv.push("--mmproj", launch.mmprojPath);
  if (launch.slotSavePath) argv.push("--slot-save-path", launch.slotSavePath);
  if (launch.device) argv.push("--device", launch.device);
  return [...argv, ...(launch.tuningArgs ?? []), ...launch.userArgs];
}

const listOf = (text: string) => text.split(",").map((w) => w.trim()).filter(Boolean);

type WorkerChoice = { addresses: WorkerAddress[]; all: boolean };

/** The workers a model's `rpc` option asks for, or null for none: `all` is every configured one,
 * a list names some of them (each must be configured: the secret is the configured workers'). */
function rpcChoice(option: string, rpc: RpcSettings | undefined): WorkerChoice | null {
  if (!option) return null;
  const configured = (rpc?.workers ?? []).map(parseWorkerAddress);
  if (option === "all") {
    if (!configured.length) throw new EngineConfigError("rpc=all, but no workers are configured (config.json llamacpp.rpc_workers)");
    return { addresses: configured, all: true };
  }
  const addresses = listOf(option).map(parseWorkerAddress);
  const unknown = addresses.filter((a) => !configured.some((c) => c.text === a.text));
  if (unknown.length) throw new EngineConfigError(`rpc names ${unknown.map((a) => a.text).join(", ")}, not in config.json llamacpp.rpc_workers (${configured.map((c) => c.text).join(", ") || "none"})`);
  return { addresses, all: false };
}

function modelBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

type ReadyWorker = { address: WorkerAddress; status: WorkerStatus };

/** A worker still serving the engine this load replaces, stopped a moment ago, is asked again
 * for this long before it counts as serving another model. */
const BUSY_GRACE_MS = 2000;

/** A worker's status, asked again every 100 ms while `busy` rules a serving worker out and it
 * still serves a client, until the grace has passed. */
export async function workerStatusAfterGrace(probe: () => Promise<WorkerStatus>, busy: boolean, clock: Clock): Promise<WorkerStatus> {
  const until = clock.now() + BUSY_GRACE_MS;
  for (;;) {
    const status = await probe();
    if (!(busy && status.clients > 0 && clock.now() < until)) return status;
    await new Promise<void>((resolve) => clock.after(100, resolve));
  }
}

async function checkWorker(address: WorkerAddress, secret: string, timeoutMs: number, busy: boolean): Promise<WorkerStatus> {
  // Loaded on first use: a server with no workers never loads node:tls.
  const { probeWorker } = await import("./rpc-link.ts");
  return workerStatusAfterGrace(() => probeWorker(address, secret, timeoutMs), busy, systemClock);
}

/** Health-checks the workers, all at once (so one slow to answer costs its own timeout, not the
 * sum), and keeps those that answer: `all` goes on without the missing ones while those that
 * answer can hold the model's weights; a list needs every worker it names. `busy`: whether a
 * worker serving a client rules it out (statusProblem). */
async function checkWorkers(choice: WorkerChoice, secret: string | null, weightBytes: number, timeoutMs: number, busy: boolean): Promise<{ ready: ReadyWorker[]; missing: WorkerAddress[] }> {
  if (!secret) throw new RpcWorkerError(choice.addresses[0]!.text, "rpc workers need the shared secret: set LEMONADE_RPC_SECRET (or llamacpp.rpc_secret in config.json)");
  const checks = await Promise.all(
    choice.addresses.map(async (address) => {
      try {
        const status = await checkWorker(address, secret, timeoutMs, busy);
        const problem = statusProblem(address, status, busy);
        return problem ? { address, problem } : { address, status };
      } catch (err) {
        return { address, problem: (err as Error).message };
      }
    }),
  );
  const missing = checks.filter((c) => "problem" in c);
  const ready = checks.filter((c): c is ReadyWorker => "status" in c);
  const free = ready.reduce((sum, c) => sum + c.status.devices.reduce((s, d) => s + d.free, 0), 0);
  if (missing.length && (!choice.all || !ready.length || free < weightBytes)) {
    const why = missing.map((m) => (m as { problem: string }).problem).join("; ");
    const rest = choice.all && ready.length ? ` (the workers that answer have ${(free / 2 ** 30).toFixed(2)} GiB free, the model's weights take ${(weightBytes / 2 ** 30).toFixed(2)} GiB)` : "";
    throw new RpcWorkerError(missing[0]!.address.text, why + rest);
  }
  return { ready, missing: missing.map((m) => m.address) };
}

/** Checks the workers and opens a tunnel to each that answers: the engine starts with `--rpc` on
 * the tunnels' loopback ports. Nothing stays open on failure. */
async function attachWorkers(choice: WorkerChoice, secret: string, split: string, weightBytes: number, timeoutMs: number): Promise<Attachment> {
  const { ready, missing } = await checkWorkers(choice, secret, weightBytes, timeoutMs, true);
  const tunnels: Tunnel[] = [];
  let lost: string | null = null;
  const { openTunnel } = await import("./rpc-link.ts");
  try {
    for (const c of ready) tunnels.push(await openTunnel(c.address, secret, timeoutMs, (why) => (lost ??= why)));
  } catch (err) {
    for (const t of tunnels) t.close();
    throw err;
  }
  // What each link carried until the engine was ready is that worker's share of the weights
  // (llama-server prints its per-device buffers only at a verbose log level).
  let loaded: number[] | null = null;
  const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 100) / 100;
  return {
    args: ["--rpc", tunnels.map((t) => `127.0.0.1:${t.port}`).join(","), "-ngl", "all", ...(split ? ["--tensor-split", split] : [])],
    ready() {
      loaded = tunnels.map((t) => t.bytes.sent);
      for (const t of tunnels) t.seal();
    },
    detail: () => ({
      workers: ready.map((c, i) => ({
        address: c.address.text,
        devices: c.status.devices.map((d) => d.name),
        weights_mib: loaded ? mib(loaded[i]!) : null,
        bytes_sent: tunnels[i]!.bytes.sent,
        bytes_received: tunnels[i]!.bytes.received,
      })),
      missing_workers: missing.map((m) => m.text),
      tensor_split: split || "by free memory",
      local_weights_mib: loaded ? mib(Math.max(0, weightBytes - loaded.reduce((a, b) => a + b, 0))) : null,
      ...(lost ? { lost } : {}),
    }),
    close() {
      for (const t of tunnels) t.close();
    },
  };
}

export const llamacpp: Recipe = {
  name: "llamacpp",
  displayName: "llama.cpp",
  backendOption: "llamacpp_backend",
  builds: { cpu: LLAMACPP_BUILD },

  status: (env) => sourceBuiltRecipeStatus(LLAMACPP, env),

  checkOptions(options) {
    if (typeof options.llamacpp_args === "string") checkUserArgs(splitArgs(options.llamacpp_args));
    if (typeof options.rpc === "string" && options.rpc !== "all") for (const w of listOf(options.rpc)) parseWorkerAddress(w);
    if (typeof options.tensor_split === "string" && options.tensor_split && !/^\d+(\.\d+)?(,\d+(\.\d+)?)*$/.test(options.tensor_split)) {
      throw new EngineConfigError(`tensor_split must be comma-separated shares such as 1,1 or 3,2,1, got '${options.tensor_split}'`);
    }
  },

  /** The workers a model split across them needs answer before its load queues (whether they
   * are free, and hold their share of the weights, is checked at the load itself). */
  async precheck(options, env) {
    const workers = rpcChoice(String(options.rpc ?? ""), env.rpc);
    if (workers) await checkWorkers(workers, env.rpc?.secret ?? null, 0, env.rpc?.timeoutMs ?? 3000, false);
  },

  /** `cpu` is the build in the cache, `system` the binary on PATH. */
  resolveBackend: (backend, env) => (backend === "auto" ? autoBackend(LLAMACPP, env) : backend),
  locate: (backend, env) => locateSourceBuilt(LLAMACPP, backend, env),

  plan(binary: string, input: LaunchInput): LaunchPlan {
    const launch: LlamaLaunch = {
      modelPath: input.files.main!,
      mmprojPath: input.files.mmproj,
      mode: input.type === "embedding" || input.type === "reranking" ? input.type : "llm",
      ctxSize: input.ctxSize,
      userArgs: splitArgs(String(input.options.llamacpp_args ?? "")),
      slotSavePath: input.workDir,
      device: String(input.options.llamacpp_device ?? ""),
      tuningArgs: input.tuningArgs,
    };
    const workers = rpcChoice(String(input.options.rpc ?? ""), input.rpc);
    const split = String(input.options.tensor_split ?? "");
    return {
      ...(workers ? { attach: () => attachWorkers(workers, input.rpc?.secret ?? "", split, modelBytes(input.files.main!), input.rpc?.timeoutMs ?? 3000) } : {}),
      argv: (port) => llamaArgv(binary, port, launch),
      // `/slots` then lists each slot's last prompt, which a saved KV cache is matched on
      // (runtime/kv-cache.ts); it costs a copy of each answer's text.
      env: { LLAMA_SERVER_SLOTS_DEBUG: "1" },
      healthPath: "/health",
      readyTimeoutMs: 120_000,
      slots: parallelSlots(launch.userArgs),
    };
  },
};
