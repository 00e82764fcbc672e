#!/usr/bin/env bun
// The `lemonade` command: a client of the server's own HTTP API (plus `serve`, which is the server).
import { parseArgs } from "node:util";
import { parseLogLevel } from "../lib/log-level.ts";
import { startServer } from "../app/server.ts";
import { CliError } from "./client.ts";
import type { Command } from "./command.ts";
import { red } from "./format.ts";
import * as models from "./commands/models.ts";
import * as server from "./commands/server.ts";
import * as chat from "./commands/run.ts";
import { cloud } from "./commands/cloud.ts";

const serve: Command = {
  name: "serve",
  summary: "Start the server",
  usage: "serve [--host HOST] [--port PORT] [--log-level LEVEL]",
  help: `Starts Lemonade Server in the foreground; Ctrl-C stops it and every engine it started.
  --host HOST        Address to bind (default 127.0.0.1, or LEMONADE_HOST)
  --port PORT        Port to listen on (default 13305, or LEMONADE_PORT)
  --log-level LEVEL  trace, debug, info, warning or error (default info, or LEMONADE_LOG_LEVEL)`,
  options: { host: { type: "string" }, port: { type: "string" }, "log-level": { type: "string" } },
  async run({ values }) {
    let port: number | undefined;
    if (values.port !== undefined) {
      port = Number(values.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliError(`--port must be 0-65535, got ${values.port}`, 2);
    }
    let logLevel;
    try {
      logLevel = values["log-level"] ? parseLogLevel(String(values["log-level"])) : undefined;
    } catch (err) {
      throw new CliError((err as Error).message, 2);
    }
    const running = await startServer({ host: values.host as string | undefined, port, logLevel }, process.env, { onShutdown: () => process.exit(0) });
    const shutdown = async (signal: string) => {
      running.ctx.logger.info("Server", `${signal} received, shutting down`);
      await running.stop();
      process.exit(0);
    };
    process.on("SIGINT", () => void shutdown("SIGINT"));
    process.on("SIGTERM", () => void shutdown("SIGTERM"));
    return await new Promise<number>(() => {});
  },
};

const COMMANDS: Command[] = [
  serve,
  chat.run,
  models.list,
  models.pull,
  models.del,
  models.load,
  models.unload,
  server.status,
  server.backends,
  server.alias,
  cloud,
  server.config,
  models.exportModel,
  models.importModel,
  models.checkUpdates,
  server.logs,
  chat.bench,
];

const USAGE = `Usage: lemonade <command> [options]

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(14)} ${c.summary}`).join("\n")}

Run 'lemonade <command> --help' for a command's options.`;

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    console.error(USAGE);
    return 2;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    console.log(USAGE);
    return 0;
  }
  if (name === "--version" || name === "-v") {
    const { VERSION } = await import("../lib/version.ts");
    console.log(VERSION);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) throw new CliError(`unknown command '${name}'\n\n${USAGE}`, 2);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...(command.options ?? {}), help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new CliError(`${(err as Error).message}\nusage: lemonade ${command.usage}`, 2);
  }
  if (parsed.values.help) {
    console.log(`Usage: lemonade ${command.usage}\n\n${command.summary}.\n\n${command.help}`);
    return 0;
  }
  return command.run({ values: parsed.values, positionals: parsed.positionals });
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  const code = err instanceof CliError ? err.exitCode : 1;
  console.error(red(`lemonade: ${(err as Error).message}`));
  process.exit(code);
}
