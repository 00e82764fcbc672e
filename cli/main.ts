#!/usr/bin/env bun
// The `lemonade` command.
import { parseArgs } from "node:util";
import { parseLogLevel } from "../server/logger.ts";
import { startServer } from "./serve.ts";

const USAGE = `Usage: lemonade <command> [options]

Commands:
  serve     Start the server

Run 'lemonade <command> --help' for a command's options.`;

const SERVE_USAGE = `Usage: lemonade serve [--host HOST] [--port PORT] [--log-level LEVEL]

Start Lemonade Server.

Options:
  --host HOST        Address to bind (default 127.0.0.1, or LEMONADE_HOST)
  --port PORT        Port to listen on (default 13305, or LEMONADE_PORT)
  --log-level LEVEL  trace, debug, info, warning or error (default info, or LEMONADE_LOG_LEVEL)
  -h, --help         Show this help`;

class UsageError extends Error {}

async function serve(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: "string" },
      port: { type: "string" },
      "log-level": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    console.log(SERVE_USAGE);
    return 0;
  }
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0-65535, got ${values.port}`);
  }
  const server = await startServer({
    host: values.host,
    port,
    logLevel: values["log-level"] ? parseLogLevel(values["log-level"]) : undefined,
  });
  const shutdown = async (signal: string) => {
    server.ctx.logger.info("Server", `${signal} received, shutting down`);
    await server.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  return await new Promise<number>(() => {});
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    console.log(USAGE);
    return command === undefined ? 2 : 0;
  }
  switch (command) {
    case "serve":
      return serve(rest);
    default:
      throw new UsageError(`unknown command '${command}'\n\n${USAGE}`);
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
  console.error(`lemonade: ${(err as Error).message}`);
  process.exit(usage ? 2 : 1);
}
