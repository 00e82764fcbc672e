// The shape of a `lemonade` subcommand: its flags (node:util parseArgs), help text and action.
import type { ParseArgsConfig } from "node:util";

export type Options = NonNullable<ParseArgsConfig["options"]>;

export interface CommandInput {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

export interface Command {
  name: string;
  summary: string;
  /** Usage line after `lemonade <name>`. */
  usage: string;
  /** Extra help text: what the command does and its flags. */
  help: string;
  options?: Options;
  /** Help for what the positionals name (`launch codex --help`), where it differs from the
   * command's own. */
  helpFor?(positionals: string[]): string | undefined;
  /** Rewrites the arguments before they are parsed (flags that take two values). */
  rewrite?(args: string[]): string[];
  run(input: CommandInput): Promise<number>;
  /** The command says when its start-up is over (cli/jit-policy.ts `startupDone`) rather than
   * that being when it begins to run: the server's ends once it listens. */
  endsStartup?: boolean;
}

/** Flags every command that talks to a server takes. */
export const SERVER_FLAGS: Options = {
  host: { type: "string" },
  port: { type: "string" },
};

export const SERVER_FLAGS_HELP = `  --host HOST   Server address (default from LEMONADE_HOST or 127.0.0.1)
  --port PORT   Server port (default from LEMONADE_PORT or 13305)
  --api-key K   Key to send (default LEMONADE_ADMIN_API_KEY or LEMONADE_API_KEY)`;
