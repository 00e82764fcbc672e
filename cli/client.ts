// The CLI's view of a server: where it is, an HTTP client for its API, and starting one in the
// background when none answers (as `lemonade run` does).
import { openSync } from "node:fs";
import { join } from "node:path";
import { defaultCacheDir, loadConfig } from "../config/config.ts";
import { parseHostSpec } from "../lib/host-spec.ts";
import { sourceRoot } from "../lib/source-root.ts";

export class CliError extends Error {
  constructor(
    message: string,
    /** 1: runtime failure; 2: usage. */
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** Hosts that name every address: a server bound to one is reached on loopback. */
export const WILDCARD_HOSTS = new Set(["0.0.0.0", "::", "[::]", "*", ""]);

export interface Target {
  host: string;
  port: number;
  /** The server is reached over https (`--host https://...`). */
  ssl?: boolean;
}

/** Options given before or after any command: the server's address and the key to send it. */
export const globals: { apiKey?: string } = {};

/** The key requests carry: `--api-key`, else the admin key, else the API key from the environment. */
export function apiKey(): string | undefined {
  return globals.apiKey || process.env.LEMONADE_ADMIN_API_KEY || process.env.LEMONADE_API_KEY || undefined;
}

/** Where the server is: flags, then LEMONADE_HOST/PORT, then config.json, then the defaults. */
export function target(flags: { host?: string; port?: string }): Target {
  const config = loadConfig({});
  // `--host` (or LEMONADE_HOST) may be a URL: its scheme, port and path are read as Lemonade's CLI
  // reads them; a port in it wins over --port, and its scheme's own port stands in for none unless
  // a port is given (--port, or LEMONADE_PORT, which Lemonade's CLI counts as given).
  const given = flags.host ?? process.env.LEMONADE_HOST;
  const spec = given !== undefined ? parseHostSpec(given) : undefined;
  const explicit = flags.port ?? (process.env.LEMONADE_PORT || undefined);
  const port = spec?.port ?? (explicit !== undefined ? Number(explicit) : (spec?.schemePort ?? config.port));
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new CliError(`--port must be 1-65535, got ${explicit}`, 2);
  return { host: spec?.host ?? config.host, port, ...(spec?.ssl ? { ssl: true } : {}) };
}

export class Client {
  readonly base: string;
  /** The address requests go to: the target's, or loopback for a server bound to every address. */
  readonly host: string;

  constructor(readonly at: Target) {
    this.host = WILDCARD_HOSTS.has(at.host) ? "127.0.0.1" : at.host;
    this.base = `${at.ssl ? "https" : "http"}://${this.host.includes(":") ? `[${this.host}]` : this.host}:${at.port}`;
  }

  private headers(): Record<string, string> {
    const key = apiKey();
    return { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) };
  }

  /** Whether a server answers at all: any HTTP answer counts, so that no second server is started
   * on a port something already serves. */
  async isUp(): Promise<boolean> {
    try {
      await fetch(`${this.base}/live`, { signal: AbortSignal.timeout(1000) });
      return true;
    } catch {
      return false;
    }
  }

  /** A raw request; the caller reads the answer (streams included). The OpenAI-style routes go to
   * their `/api/v1` spelling, as Lemonade's CLI sends them. */
  async request(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
    try {
      return await fetch(`${this.base}${path.startsWith("/v1/") ? `/api${path}` : path}`, {
        method,
        headers: this.headers(),
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw unreachable(this, err);
    }
  }

  /** The model's entry in /v1/health, which names it by its listed id, for any name of it (an
   * alias, `extra.NAME`, `user.NAME`); undefined when it is not loaded. `health` is one already read. */
  async loadedEntry<T extends { model_name: string }>(name: string, health?: { all_models_loaded: T[] }): Promise<T | undefined> {
    const read: { all_models_loaded: T[] } = health ?? (await this.json("GET", "/v1/health"));
    const entries = read.all_models_loaded;
    const direct = entries.find((m) => m.model_name === name);
    if (direct) return direct;
    try {
      // An alias answers under its own name; its target's canonical id reaches the listed one.
      const model = await this.json("GET", `/v1/models/${encodeURIComponent(name)}`);
      const listed = model.canonical_id ? (await this.json("GET", `/v1/models/${encodeURIComponent(model.canonical_id)}`)).id : model.id;
      return entries.find((m) => m.model_name === listed);
    } catch {
      return undefined;
    }
  }

  /** A JSON request; an error answer becomes a CliError carrying the server's message. */
  async json<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.request(method, path, body);
    const text = await res.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = { error: text };
    }
    if (!res.ok) {
      throw new CliError(errorMessage(parsed, `HTTP ${res.status}`));
    }
    return parsed as T;
  }
}

/** The message of an error body in any of the server's shapes: Lemonade's `{"error": "..."}` (with
 * `message`), OpenAI's `{"error": {"message"}}`. */
export function errorMessage(parsed: any, fallback: string): string {
  if (typeof parsed?.error === "string") return parsed.error;
  return parsed?.error?.message ?? parsed?.message ?? fallback;
}

/** No server answers: Lemonade's CLI's words, with the address tried and the way to start one. */
export function unreachable(client: Client, err?: unknown): CliError {
  const reason = err instanceof Error ? ` (${err.message})` : "";
  return new CliError(`Could not connect to Lemonade server at ${client.base}${reason}.\nMake sure the server is running and try again (lemonade serve starts one).`);
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);

/** How to start this program again as `lemonade serve`, compiled or run from source. */
function selfCommand(): string[] {
  const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:\\~BUN");
  return compiled ? [process.execPath] : [process.execPath, join(sourceRoot(), "cli", "main.ts")];
}

/** Makes sure a server answers, starting one in the background (logging to the cache dir) if not. */
export async function ensureServer(client: Client, quiet = false): Promise<void> {
  if (await client.isUp()) return;
  // A server is started only where this machine would serve it: plain HTTP on loopback.
  if (client.at.ssl || !LOOPBACK.has(client.host)) throw unreachable(client);
  const log = join(defaultCacheDir(), "server.log");
  if (!quiet) process.stderr.write(`Starting Lemonade Server on ${client.base} (log: ${log})...\n`);
  const out = openSync(log, "a");
  const child = Bun.spawn([...selfCommand(), "serve", "--host", client.host, "--port", String(client.at.port)], {
    stdio: ["ignore", out, out],
    env: process.env,
  });
  child.unref();
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (await client.isUp()) return;
    if (child.exitCode !== null) break;
    await Bun.sleep(100);
  }
  throw new CliError(`The server did not start; see ${log}`);
}
