// `lemonade worker`: this machine's devices, lent to a Lemonade server on another machine that
// splits a model too large for one across several (llama.cpp's RPC engine).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { defaultCacheDir } from "../../config/config.ts";
import type { RunningWorker } from "../../app/worker.ts";
import { CliError } from "../client.ts";
import type { Command, CommandInput } from "../command.ts";

export interface WorkerSettings {
  host: string;
  port: number;
  secret: string;
  devices?: string;
  threads?: number;
  memoryLimitBytes?: number;
  tensorCacheDir?: string;
}

/** Reads `worker`'s flags; a bad value is a usage error (exit 2). The secret comes from
 * LEMONADE_RPC_SECRET or a file, never the command line (which `ps` shows everyone). */
export function workerSettings(values: CommandInput["values"], env: Record<string, string | undefined> = process.env): WorkerSettings {
  const port = values.port === undefined ? 50052 : Number(values.port);
  if (!/^\d+$/.test(String(values.port ?? port)) || port > 65535) throw new CliError(`--port must be 0-65535, got ${values.port}`, 2);
  let secret = env.LEMONADE_RPC_SECRET ?? "";
  if (typeof values["secret-file"] === "string") {
    try {
      secret = readFileSync(values["secret-file"], "utf8").trim();
    } catch (err) {
      throw new CliError(`--secret-file: ${(err as Error).message}`, 2);
    }
  }
  if (secret.length < 16) throw new CliError("lemonade worker needs a shared secret of at least 16 characters: set LEMONADE_RPC_SECRET or pass --secret-file FILE", 2);
  const threads = values.threads === undefined ? undefined : Number(values.threads);
  if (threads !== undefined && !(Number.isInteger(threads) && threads > 0)) throw new CliError(`--threads must be a whole number from 1, got ${values.threads}`, 2);
  const gb = values["memory-limit"] === undefined ? undefined : Number(values["memory-limit"]);
  if (gb !== undefined && !(gb > 0)) throw new CliError(`--memory-limit must be a positive number of GB, got ${values["memory-limit"]}`, 2);
  return {
    // Loopback unless told otherwise, as the server binds: lending this machine to others is a
    // choice its owner makes with --host.
    host: typeof values.host === "string" ? values.host : "127.0.0.1",
    port,
    secret,
    ...(typeof values.device === "string" && values.device ? { devices: values.device } : {}),
    ...(threads ? { threads } : {}),
    ...(gb ? { memoryLimitBytes: gb * 1024 ** 3 } : {}),
    ...(typeof values["cache-dir"] === "string" ? { tensorCacheDir: values["cache-dir"] } : {}),
  };
}

export const worker: Command = {
  name: "worker",
  summary: "Lend this machine's devices to a server that splits models across machines",
  usage: "worker [--host HOST] [--port PORT] [--device DEVS] [--threads N] [--memory-limit GB] [--cache-dir DIR] [--secret-file FILE]",
  help: `Starts llama.cpp's rpc-server on this machine and serves it to Lemonade servers that list
this machine in config.json llamacpp.rpc_workers, for models too large for one machine; it serves
nothing else and registers nowhere. rpc-server's protocol has no authentication (llama.cpp says
never to expose it on an open network), so its port listens on loopback only; other machines reach
it through this worker's TLS listener, which first has each connection prove the shared secret
(LEMONADE_RPC_SECRET, the same on server and workers) with an HMAC bound to that TLS session, and
refuses it, before any byte reaches rpc-server, when it does not. The secret is never sent nor logged.
  --host HOST          Address the TLS listener binds (default 127.0.0.1; 0.0.0.0 or this
                       machine's LAN address to serve other machines)
  --port PORT          Its port (default 50052)
  --device DEVS        rpc-server's devices to lend, comma-separated (such as CUDA0,CUDA1; default all)
  --threads N          CPU threads for the CPU device
  --memory-limit GB    Memory to offer: the free memory reported to servers is capped at it, and a
                       server sizes this worker's share of a model by that report
  --cache-dir DIR      Keep rpc-server's cache of large tensors here, so reloads skip sending them
  --secret-file FILE   Read the secret from FILE instead of LEMONADE_RPC_SECRET`,
  options: {
    host: { type: "string" },
    port: { type: "string" },
    device: { type: "string" },
    threads: { type: "string" },
    "memory-limit": { type: "string" },
    "cache-dir": { type: "string" },
    "secret-file": { type: "string" },
  },
  async run({ values }) {
    const settings = workerSettings(values);
    const cacheDir = defaultCacheDir();
    const log = (line: string) => console.error(`[worker] ${line}`);
    let running: RunningWorker;
    try {
      // Loaded here, not at the CLI's start: `lemonade serve` never needs node:tls for it.
      const { runWorker } = await import("../../app/worker.ts");
      running = await runWorker({ ...settings, cacheDir, stateDir: join(cacheDir, "worker"), log });
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    const status = await running.status();
    log(`devices: ${status.devices.map((d) => `${d.name} (${(d.free / 2 ** 30).toFixed(1)} GiB free)`).join(", ")}; RPC protocol ${status.protocol}`);
    console.log(JSON.stringify({ listening: `${settings.host}:${running.port}`, port: running.port, pid: process.pid, rpc_server_pid: running.pid }));
    const stop = () => void running.stop().then(() => process.exit(0));
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    const code = await running.exited;
    log(`rpc-server exited with code ${code}`);
    return code === 0 ? 0 : 1;
  },
};
