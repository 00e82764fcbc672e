// The CLI's dispatcher: global options, help, each command's flags (node:util parseArgs) and its
// run. cli/main.ts hands it every command; cli/serve-main.ts (npm start's bundle) only `serve`.
import { startupDone } from "./jit-policy.ts";
import { parseArgs } from "node:util";
import { CliError, globals } from "./client.ts";
import { SERVER_FLAGS, type Command } from "./command.ts";
import { red } from "./format.ts";
import { endQuestions } from "./prompt.ts";

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

/** `lemonade --help`: the commands by group (a command no group names is still listed, under Other). */
function usageOf(commands: Command[]): string {
  const others = commands.filter((c) => !GROUPS.some(([, names]) => names.includes(c.name))).map((c) => c.name);
  const grouped = [...GROUPS, ...(others.length ? [["Other", others] as [string, string[]]] : [])]
    .map(([group, names]) => [group, commands.filter((c) => names.includes(c.name))] as const)
    .filter(([, listed]) => listed.length > 0)
    .map(([group, listed]) => `${group}:\n${listed.map((c) => `  ${c.name.padEnd(14)} ${c.summary}`).join("\n")}`);
  return `Usage: lemonade <command> [options]\n\n${grouped.join("\n\n")}\n\n${GLOBAL_HELP}\n\nRun 'lemonade <command> --help' for a command's options.`;
}

const helpOf = (c: Command) => `Usage: lemonade ${c.usage}\n\n${c.summary}.\n\n${c.help}`;

/** Takes the global options out of the arguments, wherever they stand; a flag the command
 * declares itself (`cloud install --api-key`, the provider's key) is the command's. */
function splitGlobals(argv: string[], commands: Command[]) {
  const found: { host?: string; port?: string; apiKey?: string; helpAll?: boolean; version?: boolean } = {};
  const rest: string[] = [];
  const VALUED: Record<string, "host" | "port" | "apiKey"> = { "--host": "host", "--port": "port", "--api-key": "apiKey" };
  const command = commands.find((c) => argv.includes(c.name));
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

async function main(argv: string[], commands: Command[]): Promise<number> {
  const { found, rest: args } = splitGlobals(argv, commands);
  const usage = usageOf(commands);
  if (found.version) {
    const { VERSION } = await import("../lib/version.ts");
    console.log(VERSION);
    return 0;
  }
  if (found.helpAll) {
    console.log([usage, ...commands.map((c) => `\n== ${c.name} ==\n${helpOf(c)}`)].join("\n"));
    return 0;
  }
  if (found.apiKey) globals.apiKey = found.apiKey;
  const [name, ...rest] = args;
  if (name === undefined) {
    console.error(usage);
    return 2;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    console.log(usage);
    return 0;
  }
  const command = commands.find((c) => c.name === name);
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

/** Runs the command `argv` names among `commands`; its exit status becomes the process's. */
export function runCli(commands: Command[], argv: string[]): void {
  main(argv, commands).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      const code = err instanceof CliError ? err.exitCode : 1;
      console.error(red(`Error: ${(err as Error).message}`));
      process.exit(code);
    },
  );
}
