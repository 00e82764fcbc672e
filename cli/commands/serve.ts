// `lemonade serve`: the server in the foreground, and the hooks an app that embeds it uses: a
// readiness line on stdout (--ready-json) and an exit when the app dies (--parent-pid).
import { parseLogLevel, type Severity } from "../../lib/log-level.ts";
import type { RunningServer } from "../../app/server.ts";
import { CliError } from "../client.ts";
import { startupDone } from "../jit-policy.ts";
import type { Command, CommandInput } from "../command.ts";

/** What `serve`'s flags ask for, checked. */
export interface ServeSettings {
  host?: string;
  port?: number;
  logLevel?: Severity;
  /** The server's environment: the process's, with the flags that ride in as variables. */
  env: Record<string, string | undefined>;
  readyJson: boolean;
  parentPid?: number;
}

const wholeNumber = (flag: string, v: unknown) => {
  if (!/^-?\d+$/.test(String(v))) throw new CliError(`--${flag} must be a whole number, got ${v}`, 2);
  return Number(v);
};

/** Reads `serve`'s flags over `baseEnv`; a bad value is a usage error (exit 2). */
export function serveSettings(values: CommandInput["values"], baseEnv: Record<string, string | undefined> = process.env): ServeSettings {
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(String(values.port)) || port > 65535) throw new CliError(`--port must be 0-65535, got ${values.port}`, 2);
  }
  let logLevel: Severity | undefined;
  try {
    logLevel = values["log-level"] ? parseLogLevel(String(values["log-level"])) : undefined;
  } catch (err) {
    throw new CliError((err as Error).message, 2);
  }
  // Flags beat the environment, which beats config.json: they ride in as the environment.
  const env: Record<string, string | undefined> = { ...baseEnv };
  const flagEnv: [string, string][] = [
    ["extra-models-dir", "LEMONADE_EXTRA_MODELS_DIR"],
    ["max-loaded-models", "LEMONADE_MAX_LOADED_MODELS"],
    ["ctx-size", "LEMONADE_CTX_SIZE"],
  ];
  for (const [flag, name] of flagEnv) {
    const v = values[flag];
    if (v === undefined) continue;
    if (flag !== "extra-models-dir") wholeNumber(flag, v);
    env[name] = String(v);
  }
  let parentPid: number | undefined;
  if (values["parent-pid"] !== undefined) {
    parentPid = wholeNumber("parent-pid", values["parent-pid"]);
    if (parentPid < 1) throw new CliError(`--parent-pid must be a process id (1 or more), got ${values["parent-pid"]}`, 2);
  }
  if (values["generate-api-key"] === true) {
    // Two sources for one key would leave the embedder guessing which is in force.
    if (env.LEMONADE_API_KEY) throw new CliError("--generate-api-key and LEMONADE_API_KEY both set the API key: use one", 2);
    env.LEMONADE_API_KEY = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  }
  return { host: values.host as string | undefined, port, logLevel, env, readyJson: values["ready-json"] === true, parentPid };
}

/** Whether process `pid` still runs. `wasParent`: it was this process's parent at start, so being
 * reparented (to init or a subreaper) means it died, even if its pid has been reused since. */
export function parentAlive(pid: number, wasParent: boolean): boolean {
  if (wasParent && process.ppid !== pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Calls `onGone` once when `pid` stops running, checked every `everyMs` (one syscall a check). */
export function watchParent(pid: number, onGone: () => void, everyMs = 1000): () => void {
  const wasParent = process.ppid === pid;
  const timer = setInterval(() => {
    if (parentAlive(pid, wasParent)) return;
    clearInterval(timer);
    onGone();
  }, everyMs);
  return () => clearInterval(timer);
}

/** The URL a client on this machine reaches the server at: a wildcard bind answers on loopback. */
export function clientUrl(running: Pick<RunningServer, "url" | "port">, host: string): string {
  if (host === "0.0.0.0") return `http://127.0.0.1:${running.port}`;
  if (host === "::" || host === "[::]") return `http://[::1]:${running.port}`;
  return running.url;
}

/** The readiness line: one JSON object, the key only there (the log never has it). */
export function readyLine(url: string, port: number, apiKey: string | null): string {
  return JSON.stringify({ port, url, pid: process.pid, api_key: apiKey });
}

/** Waits for the server's own /live to answer, as a client would see it. */
async function untilLive(url: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await fetch(`${url}/live`).then((r) => r.ok, () => false)) return;
    await Bun.sleep(50);
  }
  throw new CliError(`the server started but ${url}/live does not answer`);
}

export const serve: Command = {
  name: "serve",
  summary: "Start the server",
  usage:
    "serve [--host HOST] [--port PORT] [--log-level LEVEL] [--extra-models-dir DIR] [--max-loaded-models N] [--ctx-size N] [--ready-json] [--parent-pid PID] [--generate-api-key]",
  help: `Starts Lemonade Server in the foreground; Ctrl-C stops it and every engine it started.
  --host HOST              Address to bind (default 127.0.0.1, or LEMONADE_HOST)
  --port PORT              Port to listen on (default 13305, or LEMONADE_PORT; 0: a free one); a port in use exits 1
  --log-level LEVEL        trace, debug, info, warning or error (default info, or LEMONADE_LOG_LEVEL)
  --extra-models-dir DIR   A folder of GGUF models to list (also named extra.<name>)
  --max-loaded-models N    Models resident per type (-1: unlimited)
  --ctx-size N             Default context size (-1: each model's own window)
For apps that start the server themselves:
  --ready-json             Once /live answers, print {"port", "url", "pid", "api_key"} as one line on
                           stdout (the log goes to stderr); api_key is the key in force, or null
  --parent-pid PID         Stop (engines included, as Ctrl-C does) when process PID exits
  --generate-api-key       Require a new random API key, reported only in the --ready-json line`,
  options: {
    host: { type: "string" },
    port: { type: "string" },
    "log-level": { type: "string" },
    "extra-models-dir": { type: "string" },
    "max-loaded-models": { type: "string" },
    "ctx-size": { type: "string" },
    "ready-json": { type: "boolean" },
    "parent-pid": { type: "string" },
    "generate-api-key": { type: "boolean" },
  },
  endsStartup: true,
  async run({ values }) {
    const settings = serveSettings(values);
    if (settings.parentPid !== undefined && !parentAlive(settings.parentPid, false)) {
      throw new CliError(`--parent-pid ${settings.parentPid}: no such process`);
    }
    // Loaded here: every other command is a client, and importing the whole server would cost each one's start-up.
    const { startServer } = await import("../../app/server.ts");
    let running: RunningServer;
    try {
      running = await startServer(
        { host: settings.host, port: settings.port, logLevel: settings.logLevel },
        settings.env,
        // stdout carries the readiness line alone, for the app reading it.
        { onShutdown: () => process.exit(0), logToStderr: settings.readyJson },
      );
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    // Listening, once Elysia has finished binding the routes in the task it queues on listen:
    // what runs from now on runs per request, and earns its compilation.
    await new Promise((resolve) => setImmediate(resolve));
    startupDone();
    let stopping = false;
    const shutdown = async (why: string) => {
      if (stopping) return;
      stopping = true;
      running.ctx.logger.info("Server", `${why}, shutting down`);
      await running.stop();
      process.exit(0);
    };
    process.on("SIGINT", () => void shutdown("SIGINT received"));
    process.on("SIGTERM", () => void shutdown("SIGTERM received"));
    if (settings.parentPid !== undefined) {
      const pid = settings.parentPid;
      watchParent(pid, () => void shutdown(`Parent process ${pid} exited`));
    }
    if (settings.readyJson) {
      const url = clientUrl(running, running.ctx.config.host);
      await untilLive(url);
      console.log(readyLine(url, running.port, running.ctx.config.apiKey));
    }
    return await new Promise<number>(() => {});
  },
};
