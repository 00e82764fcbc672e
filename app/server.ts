// Start-up and shutdown: build the context (which reaps engines a killed server left), serve the
// app on the configured address and on the dedicated WebSocket port, and stop it all cleanly.
import { loadConfig, type Overrides } from "../config/config.ts";
import { createApp } from "../http/app.ts";
import { Logger } from "../observability/logger.ts";
import type { ServerContext } from "../runtime/context.ts";
import { createServerContext } from "./context.ts";
import { collectWhenIdle } from "./idle-gc.ts";

export interface RunningServer {
  ctx: ServerContext;
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** Refused when something already listens there. Checked before anything else starts: making the
 * context reaps the engines `engines.json` lists, which would be the running server's own. */
export class PortInUseError extends Error {
  constructor(
    readonly port: number,
    host: string,
  ) {
    // Lemonade's words, which scripts and users look for.
    super(`Port ${port} on ${host} is already in use. Another Lemonade server (lemond) is likely already running on this port. This instance will now exit.`);
  }
}

/** Bun binds with SO_REUSEPORT unless told not to, so a second server would share the port. */
function listenAlone(listen: () => void, host: string, port: number): void {
  try {
    listen();
  } catch (err) {
    if ((err as { code?: string }).code === "EADDRINUSE" || /in use/i.test((err as Error).message)) throw new PortInUseError(port, host);
    throw err;
  }
}

/** Bun closes a connection that stays silent for its idle timeout (Elysia sets 30 s), a stream
 * between two keep-alives included: the timeout outlasts the keep-alive interval
 * (`LEMONADE_PING_MS`), and is off past the longest Bun takes (255 s). */
export function idleTimeoutFor(pingMs: number): number {
  const seconds = Math.max(30, Math.ceil(pingMs / 1000) + 10);
  return seconds > 255 ? 0 : seconds;
}

export interface ServerHooks {
  /** After POST /internal/shutdown has stopped everything (the CLI exits the process). */
  onShutdown?: () => void;
  /** Every log line to stderr, leaving stdout to the CLI (`serve --ready-json`). */
  logToStderr?: boolean;
}

export async function startServer(overrides: Overrides = {}, env = process.env, hooks: ServerHooks = {}): Promise<RunningServer> {
  const config = loadConfig(overrides, env);
  if (config.port !== 0) {
    listenAlone(() => Bun.serve({ hostname: config.host, port: config.port, reusePort: false, fetch: () => new Response(null) }).stop(true), config.host, config.port);
  }
  const ctx = createServerContext(config, hooks.logToStderr ? new Logger(config.logLevel, (line) => console.error(line)) : undefined);
  const { app } = createApp(ctx);
  // Bun's own body limit (128 MB) stays the last guard; JSON bodies meet http/body.ts's first.
  const limits = { reusePort: false, idleTimeout: idleTimeoutFor(config.pingMs) };
  listenAlone(() => app.listen({ hostname: config.host, port: config.port, ...limits }), config.host, config.port);
  const port = app.server!.port!;
  config.port = port;
  // The dedicated WebSocket port older clients discover through /v1/health (OS-assigned): the
  // same WebSocket routes (/realtime, /logs/stream, /spans/stream), with the same keys and origins, and nothing else.
  const { app: wsApp } = createApp(ctx, { websocketsOnly: true });
  wsApp.listen({ hostname: config.host, port: 0, ...limits });
  ctx.websocketPort = wsApp.server!.port!;
  const stopCollector = collectWhenIdle(() => ctx.activity.requests);
  // Installed cloud providers list their models now and again later; the server does not wait.
  for (const provider of ctx.cloud.names()) void ctx.cloud.refresh(provider);
  ctx.cloud.startRefreshing();
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  ctx.logger.info("Server", `Lemonade Server ${ctx.version} listening on ${url} (pid ${process.pid})`);
  ctx.logger.info("Server", `Cache directory: ${config.cacheDir}`);
  if (config.apiKey) ctx.logger.info("Server", "API key required (LEMONADE_API_KEY is set)");
  const server: RunningServer = {
    ctx,
    url,
    port,
    async stop() {
      stopCollector();
      ctx.cloud.stop();
      ctx.proxy.pools.close();
      await ctx.jobs.stop();
      await ctx.scheduler.shutdown();
      await ctx.telemetry.shutdown(3000);
      await Promise.all([app.stop(true), wsApp.stop(true)]);
      ctx.catalog.flushHeaders();
    },
  };
  ctx.lifecycle = {
    // A new address from POST /internal/set: the API listens there instead; a refused one keeps the old.
    rebind: (newHost, newPort) => {
      const before = { host: config.host, port: config.port };
      void app.stop(false).then(() => {
        try {
          listenAlone(() => app.listen({ hostname: newHost, port: newPort, ...limits }), newHost, newPort);
          Object.assign(config, { host: newHost, port: app.server!.port! });
          ctx.logger.info("Server", `Listening on http://${newHost}:${config.port} now`);
        } catch (err) {
          ctx.logger.error("Server", `Cannot listen on ${newHost}:${newPort} (${(err as Error).message}); staying on ${before.host}:${before.port}`);
          app.listen({ hostname: before.host, port: before.port, ...limits });
        }
      });
    },
    shutdown: () => {
      ctx.logger.info("Server", "Shutting down (POST /internal/shutdown)");
      void server.stop().then(() => hooks.onShutdown?.());
    },
  };
  return server;
}
