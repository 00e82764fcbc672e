#!/usr/bin/env bun
// The `lemonade` command: a client of the server's own HTTP API (plus `serve`, which is the server).
import { startupDone } from "./jit-policy.ts";
import { parseArgs } from "node:util";
import { CliError, globals } from "./client.ts";
import { SERVER_FLAGS, type Command } from "./command.ts";
import { red } from "./format.ts";
import { endQuestions } from "./prompt.ts";
import * as models from "./commands/models.ts";
import * as server from "./commands/server.ts";
import * as chat from "./commands/run.ts";
import { cloud } from "./commands/cloud.ts";
import { chat as chatCommand } from "./commands/chat.ts";
import { launch } from "./commands/launch.ts";
import { cleanupCache } from "./commands/cleanup.ts";
import { serve } from "./commands/serve.ts";
import { tune } from "./commands/tune.ts";
import { worker } from "./commands/worker.ts";

const COMMANDS: Command[] = [
  serve,
  chat.run,
  chatCommand,
  launch,
  models.list,
  models.pull,
  models.del,
  models.load,
  models.unload,
  models.pin,
  models.unpin,
  server.status,
  server.backends,
  server.alias,
  cloud,
  server.config,
  server.telemetry,
  models.exportModel,
  models.importModel,
  models.checkUpdates,
  server.logs,
  chat.bench,
  tune,
  cleanupCache,
  worker,
];

const GLOBAL_HELP = `Global Options (before or after the command):
  --host HOST      The server's address: host, host:port or http(s)://host[:port] (LEMONADE_HOST)
  --port PORT      The server's port (LEMONADE_PORT, default 13305)
  --api-key KEY    The key to send (LEMONADE_API_KEY; LEMONADE_ADMIN_API_KEY for admin routes)
  --[no-]discovery Accepted for Lemonade's CLI; the server is the one --host names
  -h, --help       Help for a command;  --help-all  every command's help
  -v, --version    The version`;

/** The groups `lemonade --help` lists the commands in, as Lemonade's CLI groups them. */
const GROUPS: [string, string[]][] = [
  ["Quick Start", ["run", "chat", "launch"]],
  ["Server", ["serve", "worker", "status", "logs", "backends", "cloud", "config", "telemetry"]],
  ["Model Management", ["list", "pull", "alias", "import", "delete", "load", "unload", "pin", "unpin", "export", "check-updates", "cleanup-cache"]],
  ["Benchmarking", ["bench", "tune"]],
];

// A command no group names is still listed, under Other.
const others = COMMANDS.filter((c) => !GROUPS.some(([, names]) => names.includes(c.name))).map((c) => c.name);
const grouped = [...GROUPS, ...(others.length ? [["Other", others] as [string, string[]]] : [])].map(
  ([group, names]) => `${group}:\n${COMMANDS.filter((c) => names.includes(c.name)).map((c) => `  ${c.name.padEnd(14)} ${c.summary}`).join("\n")}`,
);

const USAGE = `Usage: lemonade <command> [options]

${grouped.join("\n\n")}

${GLOBAL_HELP}

Run 'lemonade <command> --help' for a command's options.`;

const helpOf = (c: Command) => `Usage: lemonade ${c.usage}\n\n${c.summary}.\n\n${c.help}`;

/** Takes the global options out of the arguments, wherever they stand; a flag the command
 * declares itself (`cloud install --api-key`, the provider's key) is the command's. */
function splitGlobals(argv: string[]) {
  const found: { host?: string; port?: string; apiKey?: string; helpAll?: boolean; version?: boolean } = {};
  const rest: string[] = [];
  const VALUED: Record<string, "host" | "port" | "apiKey"> = { "--host": "host", "--port": "port", "--api-key": "apiKey" };
  const command = COMMANDS.find((c) => argv.includes(c.name));
  const owned = (name: string) => command?.options?.[name.slice(2)] !== undefined && !(name.slice(2) in SERVER_FLAGS);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf("=");
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (VALUED[name] && !owned(name)) {
      const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined) throw new CliError(`${name} needs a value. Run 'lemonade --help' for usage.`, 2);
      found[VALUED[name]] = value;
    } else if (arg === "--help-all") found.helpAll = true;
    // Lemonade's CLI finds a server on the LAN by its UDP beacon; this one reaches --host alone.
    else if (arg === "--discovery" || arg === "--no-discovery") continue;
    else if (arg === "-v" || arg === "--version") found.version = true;
    else rest.push(arg);
  }
  return { found, rest };
}

/** `--flag VALUE` as `--flag=VALUE` for the command's valued flags, so that a value may itself
 * start with a dash (`--llamacpp-args "--threads 1"`), which parseArgs would refuse. */
function joinValues(args: string[], options: NonNullable<Command["options"]>): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const name = args[i]!.startsWith("--") ? args[i]!.slice(2) : "";
    if (options[name]?.type === "string" && args[i + 1] !== undefined && args[i + 1] !== "--") out.push(`--${name}=${args[++i]}`);
    else out.push(args[i]!);
  }
  return out;
}

async function main(argv: string[]): Promise<number> {
  const { found, rest: args } = splitGlobals(argv);
  if (found.version) {
    const { VERSION } = await import("../lib/version.ts");
    console.log(VERSION);
    return 0;
  }
  if (found.helpAll) {
    console.log([USAGE, ...COMMANDS.map((c) => `\n== ${c.name} ==\n${helpOf(c)}`)].join("\n"));
    return 0;
  }
  if (found.apiKey) globals.apiKey = found.apiKey;
  const [name, ...rest] = args;
  if (name === undefined) {
    console.error(USAGE);
    return 2;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    console.log(USAGE);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) throw new CliError(`unknown command '${name}'. Run 'lemonade --help' for the list of commands.`, 2);
  let parsed;
  try {
    parsed = parseArgs({
      args: joinValues(command.rewrite ? command.rewrite(rest) : rest, command.options ?? {}),
      options: { ...(command.options ?? {}), help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new CliError(`${(err as Error).message}\nusage: lemonade ${command.usage}\nRun 'lemonade ${command.name} --help' for its options.`, 2);
  }
  if (parsed.values.help) {
    console.log(command.helpFor?.(parsed.positionals) ?? helpOf(command));
    return 0;
  }
  const values = { ...parsed.values, ...(found.host !== undefined ? { host: found.host } : {}), ...(found.port !== undefined ? { port: found.port } : {}) };
  if (!command.endsStartup) startupDone();
  try {
    return await command.run({ values, positionals: parsed.positionals });
  } finally {
    endQuestions();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    const code = err instanceof CliError ? err.exitCode : 1;
    console.error(red(`Error: ${(err as Error).message}`));
    process.exit(code);
  },
);
