// Every recipe option as a `load`/`run` flag, derived from spec/recipes.ts: `ctx_size` is
// `--ctx-size`, a backend option is the recipe's `cliFlag` (`--sdcpp cpu`), a switch has its
// `--no-` form (`--no-merge-args`).
import { RECIPE_SPECS, type OptionSpec } from "../spec/recipes.ts";
import { CliError } from "./client.ts";
import type { Options } from "./command.ts";

const WITH_FLAG = Object.values(RECIPE_SPECS).filter((r) => r.backendOption && r.cliFlag);
const BACKEND_FLAGS: Record<string, string> = Object.fromEntries(WITH_FLAG.map((r) => [r.backendOption!, r.cliFlag!]));

const flagOf = (option: string) => BACKEND_FLAGS[option] ?? option.replace(/_/g, "-");

const ALL: [string, OptionSpec][] = [];
for (const spec of Object.values(RECIPE_SPECS)) {
  for (const entry of Object.entries(spec.options)) if (!ALL.some(([name]) => name === entry[0])) ALL.push(entry);
}

export const LOAD_FLAGS: Options = {
  ...Object.fromEntries(
    ALL.flatMap(([name, spec]): [string, Options[string]][] => {
      const flag = flagOf(name);
      return spec.kind === "bool" ? [[flag, { type: "boolean" }], [`no-${flag}`, { type: "boolean" }]] : [[flag, { type: "string" }]];
    }),
  ),
  pinned: { type: "boolean" },
  "save-options": { type: "boolean" },
  save: { type: "boolean" },
};

// Grouped as Lemonade's `load --help` groups them: options of every load, then each recipe's.
export const LOAD_FLAGS_HELP = `
General Options:
  --pinned                 Pin the model against eviction
  --save-options           Save these options for the model (recipe_options.json)
  --[no-]merge-args        Add the args to the server-wide ones (default) or replace them
  --auto-evict, --evict-idle-timeout S, --evict-weight-factor X, --downsize-idle-timeout S

Recipe-Specific Options:
  --ctx-size N             Context size (-1: the model's own window)
${WITH_FLAG.map((r) => `  ${`--${r.cliFlag} BACKEND`.padEnd(25)}${r.cliHelp ?? ""}`).join("\n")}
`;

/** The /v1/load fields the flags name, checked by kind. */
export function loadOptionsFrom(values: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, spec] of ALL) {
    const flag = flagOf(name);
    if (spec.kind === "bool") {
      if (values[flag]) body[name] = true;
      if (values[`no-${flag}`]) body[name] = false;
      continue;
    }
    const raw = values[flag];
    if (raw === undefined) continue;
    if (spec.kind === "string") body[name] = String(raw);
    else {
      const n = Number(raw);
      if (!Number.isFinite(n) || (spec.kind === "int" && !Number.isInteger(n))) {
        throw new CliError(`--${flag} must be ${spec.kind === "int" ? "a whole number" : "a number"}, got ${raw}. Run with --help for the options.`, 2);
      }
      body[name] = n;
    }
  }
  if (values.pinned) body.pinned = true;
  if (values["save-options"] || values.save) body.save_options = true;
  return body;
}
