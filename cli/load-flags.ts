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

/** Options every load takes, listed under General Options. */
const GENERAL = new Set(["ctx_size", "merge_args", "auto_evict", "evict_idle_timeout", "downsize_idle_timeout", "evict_weight_factor"]);

const TYPE_NAMES: Record<OptionSpec["kind"], string> = { int: "SIZE", number: "SIZE", string: "ARGS", bool: "" };

/** A flag's help line: the flag, its value's kind, and the first clause of what it does. */
function flagLine(name: string, spec: OptionSpec): string {
  const flag = flagOf(name);
  const head = spec.kind === "bool" ? `--${flag}, --no-${flag}` : `--${flag} ${BACKEND_FLAGS[name] ? "BACKEND" : TYPE_NAMES[spec.kind]}`;
  const what = (spec.doc ?? "").replace(/^[\w-]+: /, "").replace(/`/g, "").split(/(?<=[^.]{8})[.;]\s/)[0]!.replace(/\.$/, "");
  const described = BACKEND_FLAGS[name] ? `Backend to use: ${what}` : what.charAt(0).toUpperCase() + what.slice(1);
  return `  ${head.padEnd(30)} ${described}`.trimEnd();
}

// Grouped as Lemonade's `load --help` groups them: the options of every load, then each recipe's
// under its backend's group (recipes sharing a group share its heading).
const grouped = new Map<string, string[]>();
for (const [recipe, spec] of Object.entries(RECIPE_SPECS)) {
  for (const [name, option] of Object.entries(spec.options)) {
    if (GENERAL.has(name)) continue;
    const group = spec.cliGroup ?? `${recipe} Options`;
    const lines = grouped.get(group) ?? [];
    const line = flagLine(name, option);
    if (!lines.includes(line)) lines.push(line);
    grouped.set(group, lines);
  }
}
const byName = Object.fromEntries(ALL);
export const LOAD_FLAGS_HELP = `
General Options:
${[...GENERAL].map((n) => flagLine(n, byName[n]!)).join("\n")}
  ${"--pinned".padEnd(30)} Pin the model against eviction
  ${"--save-options".padEnd(30)} Save these options for the model (recipe_options.json)
${[...grouped].map(([group, lines]) => `\n${group}:\n${lines.join("\n")}`).join("\n")}
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
