// Server commands: status, backends, alias, config, logs.
import { join } from "node:path";
import { apiKey, Client, CliError, ensureServer, errorMessage, target, unreachable } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { ProgressReporter, dim, green, red, sseEvents, table, yellow } from "../format.ts";
import { defaultCacheDir, loadConfig } from "../../config/config.ts";
import { openBrowser } from "./run.ts";
import { changesOf, effectiveSettings, saveSettings, SettingsConflict, settingProblem } from "../../config/settings.ts";

const clientOf = (input: CommandInput) => new Client(target(input.values as { host?: string; port?: string }));

export const status: Command = {
  name: "status",
  summary: "Show the server, its loaded models, their pids and ports",
  usage: "status [--json]",
  help: `  --json   Print JSON for scripts\n${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, json: { type: "boolean" } },
  async run(input) {
    const client = clientOf(input);
    if (!(await client.isUp())) {
      if (input.values.json) console.log(JSON.stringify({ running: false, url: client.base }));
      else console.log(`Lemonade Server is not running at ${client.base}. Start it with: lemonade serve`);
      return 1;
    }
    const health = await client.json("GET", "/v1/health");
    if (input.values.json) {
      console.log(JSON.stringify({ running: true, url: client.base, ...health }, null, 2));
      return 0;
    }
    console.log(`Lemonade Server ${health.version} is running at ${client.base}`);
    const tuning = health.auto_tune;
    if (tuning) {
      console.log(`Hardware archetype: ${tuning.archetype.id}; auto-tune ${tuning.enabled ? "on" : "off"} (profiles ${tuning.profiles.version}, ${tuning.profiles.source})`);
      for (const r of tuning.retune_suggested) console.log(yellow(`${r.model_name} runs at ${r.observed_tokens_per_second} tok/s, under half the ${r.expected_tokens_per_second} it was tuned for: run ${r.hint}`));
    }
    if (!health.all_models_loaded.length) {
      console.log("No models loaded.");
      return 0;
    }
    const rows = health.all_models_loaded.map((m: any) => [
      m.model_name,
      m.type,
      String(m.pid),
      m.backend_url,
      m.pinned ? "pinned" : "",
      m.is_busy ? yellow("busy") : green("idle"),
    ]);
    console.log(table(["MODEL", "TYPE", "PID", "BACKEND", "PINNED", "STATE"], rows));
    // Auto-tune's overrides in effect: the flags each loaded model runs with beyond its own.
    for (const m of health.all_models_loaded as { model_name: string; recipe: string }[]) {
      const view = await client.json("GET", `/v1/models/${encodeURIComponent(m.model_name)}/options`).catch(() => null);
      if (view?.tuning?.args) console.log(dim(`${m.model_name}: auto-tune sets ${view.tuning.args} (as its next load resolves it)`));
    }
    return 0;
  },
};

export const backends: Command = {
  name: "backends",
  summary: "List recipes and their backends; install one",
  usage: "backends [--all] [--json] | backends install RECIPE:BACKEND [--force] | backends uninstall RECIPE:BACKEND",
  help: `Lists the recipes' backends that can run here and their state (installed, installable).
  --all           Also list the ones this system cannot run (unsupported), with why
  install R:B     Build and install a backend, e.g. llamacpp:cpu
  --force         Try an unsupported backend anyway
  uninstall R:B   Remove an installed backend
  --json          Print JSON for scripts
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, json: { type: "boolean" }, all: { type: "boolean" }, force: { type: "boolean" } },
  async run(input) {
    const [action, spec, ...extra] = input.positionals;
    const client = clientOf(input);
    await ensureServer(client);
    if (action === undefined) {
      const recipes = (await client.json("GET", "/v1/system-info")).recipes;
      if (input.values.json) {
        console.log(JSON.stringify(recipes, null, 2));
        return 0;
      }
      const rows: string[][] = [];
      for (const [recipe, r] of Object.entries<any>(recipes)) {
        for (const [backend, b] of Object.entries<any>(r.backends)) {
          if (b.state === "unsupported" && !input.values.all) continue;
          const state = b.state === "installed" ? green(b.state) : b.state === "unsupported" ? dim(b.state) : yellow(b.state);
          rows.push([recipe, backend, state, b.version ?? "", b.action || b.message]);
        }
      }
      console.log(table(["RECIPE", "BACKEND", "STATE", "VERSION", "NEXT STEP"], rows));
      return 0;
    }
    if ((action !== "install" && action !== "uninstall") || !spec || extra.length || !spec.includes(":")) {
      throw new CliError(`usage: lemonade ${this.usage}`, 2);
    }
    const [recipe, backend] = spec.split(":") as [string, string];
    if (action === "uninstall") {
      await client.json("POST", "/v1/uninstall", { recipe, backend });
      console.log(`Uninstalled ${spec}.`);
      return 0;
    }
    const res = await client.request("POST", "/v1/install", { recipe, backend, stream: true, ...(input.values.force ? { force: true } : {}) });
    if (!res.ok) throw new CliError(errorMessage(await res.json().catch(() => ({})), `install failed: HTTP ${res.status}`));
    const progress = new ProgressReporter();
    for await (const { event, data } of sseEvents(res.body!)) {
      if (event === "progress") progress.update(`${spec} ${data.phase}`, data.percent, 100);
      if (event === "error") {
        progress.next();
        throw new CliError(`install failed: ${data.error}`);
      }
    }
    progress.next();
    console.log(`Installed ${spec}.`);
    return 0;
  },
};

export const alias: Command = {
  name: "alias",
  summary: "Manage model aliases",
  usage: "alias add <alias> <model> | alias list | alias remove <alias>",
  help: `Aliases give a stable name to a model; re-pointing one switches clients over at once.\n${SERVER_FLAGS_HELP}`,
  options: SERVER_FLAGS,
  async run(input) {
    const [action, ...args] = input.positionals;
    const client = clientOf(input);
    await ensureServer(client);
    if (action === "add" && args.length === 2) {
      await client.json("POST", "/internal/aliases", { alias: args[0], target: args[1] });
      console.log(`${args[0]} -> ${args[1]}`);
    } else if (action === "list" && args.length === 0) {
      const { aliases } = await client.json("GET", "/internal/aliases");
      if (!aliases.length) console.log("No aliases. Add one with: lemonade alias add <alias> <model>");
      else console.log(table(["ALIAS", "TARGET", "RECIPE", "DOWNLOADED"], aliases.map((a: any) => [a.alias, a.target, a.recipe, a.downloaded ? "yes" : "no"])));
    } else if (action === "remove" && args.length === 1) {
      await client.json("DELETE", `/internal/aliases/${encodeURIComponent(args[0]!)}`);
      console.log(`Removed alias ${args[0]}`);
    } else throw new CliError(`usage: lemonade ${this.usage}`, 2);
    return 0;
  },
};

/** `KEY=VALUE` -> [key, value]: JSON where the value is JSON (numbers, true/false, arrays), else the text. */
function setting(pair: string): [string, unknown] {
  const eq = pair.indexOf("=");
  if (eq < 1) throw new CliError(`expected key=value, got '${pair}' (e.g. max_loaded_models=2 or llamacpp.backend=vulkan)`);
  const raw = pair.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // Plain text.
  }
  return [pair.slice(0, eq), value];
}

/** A setting's value as Lemonade's `config` table shows it: text bare, numbers and switches as
 * written, lists and objects as compact JSON, nothing as "(empty)". */
function shown(value: unknown): string {
  const text = typeof value === "string" ? value : typeof value === "number" && !Number.isInteger(value) ? String(Number(value.toPrecision(6))) : JSON.stringify(value);
  return text === "" ? "(empty)" : text;
}

/** The settings as Lemonade's \`lemonade config\` prints them: the top-level values under [General],
 * then each nested setting's fields as \`section.field\`, keys sorted, values in one column. */
function settingsTable(settings: Record<string, unknown>): string {
  const nested = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  const keys = Object.keys(settings).filter((k) => k !== "config_version").sort();
  const sections: [string, [string, unknown][]][] = [];
  const general = keys.filter((k) => !nested(settings[k])).map((k): [string, unknown] => [k, settings[k]]);
  if (general.length) sections.push(["General", general]);
  for (const section of keys.filter((k) => nested(settings[k]))) {
    const fields = settings[section] as Record<string, unknown>;
    const rows = Object.keys(fields).sort().map((f): [string, unknown] => [`${section}.${f}`, fields[f]]);
    if (rows.length) sections.push([section, rows]);
  }
  const width = Math.max(0, ...sections.flatMap(([, rows]) => rows.map(([k]) => k.length))) + 4;
  const body = sections.map(([name, rows]) => `\n  [${name}]\n${rows.map(([k, v]) => `  ${k.padEnd(width)}${shown(v)}`).join("\n")}`);
  return `Server Configuration\n${"-".repeat(width + 30)}\n${body.join("\n")}\n\nTo change a value:  lemonade config set port=9000 llamacpp.backend=rocm`;
}

/** A dotted key's value in a nested object. */
const at = (obj: Record<string, any>, key: string) => key.split(".").reduce<any>((node, part) => (node && typeof node === "object" ? node[part] : undefined), obj);

export const config: Command = {
  name: "config",
  summary: "Show or change the server's settings (config.json), live",
  usage: "config [--json] | config get KEY | config set KEY=VALUE [KEY=VALUE]...",
  help: `With no arguments, prints every setting as the server has it (--json: as JSON), as Lemonade's
CLI does: [General], then a section per nested setting. \`set\` checks each value against
Lemonade's defaults, saves config.json atomically and, through a running server, applies what it
can at once (max_loaded_models, log_level, ctx_size, offline, extra_models_dir, host/port, the
recipe sections); without a server, it only saves. Nested keys take dots: llamacpp.backend=vulkan.
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, json: { type: "boolean" } },
  async run(input) {
    const [action, ...args] = input.positionals;
    const client = clientOf(input);
    const up = await client.isUp();
    const effective = async () => (up ? await client.json("GET", "/internal/config") : effectiveSettings(loadConfig({})));
    if (action === undefined) {
      const settings = await effective();
      console.log(input.values.json ? JSON.stringify(settings, null, 2) : settingsTable(settings));
      return 0;
    }
    if (action === "get" && args.length === 1) {
      const value = at(await effective(), args[0]!);
      if (value === undefined) throw new CliError(`'${args[0]}' is not a setting. See them all with: lemonade config`, 2);
      console.log(typeof value === "string" ? value : JSON.stringify(value));
      return 0;
    }
    if (action !== "set" || !args.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    let changes: Record<string, unknown>;
    try {
      // The flat spellings (`vllm_args=...`, `no_broadcast=true`) are their settings' own.
      changes = changesOf(Object.fromEntries(args.map(setting)));
    } catch (err) {
      if (err instanceof SettingsConflict) throw new CliError(err.message);
      throw err;
    }
    await change(client, up, changes);
    return 0;
  },
};

/** Checks settings, then sets them through a running server (live where it can) or in config.json. */
async function change(client: Client, up: boolean, changes: Record<string, unknown>, say = true): Promise<void> {
  for (const [key, value] of Object.entries(changes)) {
    // A refused setting exits 1, as Lemonade's `config set` does; an unknown key in its words.
    const problem = settingProblem(key, value);
    if (problem?.startsWith("Unknown config key: '")) throw new CliError(`unknown config key \`${key}\`\nRun \`lemonade config\` to see valid keys.`);
    if (problem) throw new CliError(`${problem}. See the settings with: lemonade config`);
  }
  if (up) {
    const res = await client.json("POST", "/internal/set", changes);
    if (!say) return;
    // As Lemonade's CLI reports it; then what waits for a restart, which this server says apart.
    if (typeof res.message === "string") console.log(res.message);
    console.log(`Configuration updated:\n${JSON.stringify(res.updated ?? {}, null, 4)}`);
    if (res.saved?.length) console.log(`Saved for the next start: ${res.saved.join(", ")}`);
  } else {
    saveSettings({ cacheDir: defaultCacheDir() }, changes);
    if (say) console.log(`Saved ${join(defaultCacheDir(), "config.json")}; the server reads it when it starts.`);
  }
}

export const telemetry: Command = {
  name: "telemetry",
  summary: "Turn OpenTelemetry tracing on or off, live",
  usage: "telemetry on | telemetry off",
  help: `Sets telemetry.enabled. Spans go to telemetry.otlp.endpoint (set it, and the other
telemetry.* settings, with: lemonade config set telemetry.otlp.endpoint=URL).
${SERVER_FLAGS_HELP}`,
  options: SERVER_FLAGS,
  async run(input) {
    const [state, ...rest] = input.positionals;
    if ((state !== "on" && state !== "off") || rest.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const client = clientOf(input);
    const up = await client.isUp();
    await change(client, up, { "telemetry.enabled": state === "on" }, false);
    console.log(up ? `Telemetry successfully turned ${state}.` : `Telemetry turned ${state} in ${join(defaultCacheDir(), "config.json")}, for the server's next start.`);
    return 0;
  },
};

export const logs: Command = {
  name: "logs",
  summary: "Open the server's log in the web app, or print it here",
  usage: "logs [--follow | --no-follow]",
  help: `Opens the web app's Logs panel in your browser, as Lemonade's CLI does (printing its address
when no browser can be opened). In the terminal instead:
  --follow      Print the retained log, then follow new lines until interrupted
  --no-follow   Print the retained log and exit
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, follow: { type: "boolean" }, "no-follow": { type: "boolean" } },
  async run(input) {
    const client = clientOf(input);
    if (!(await client.isUp())) throw unreachable(client);
    if (!input.values.follow && !input.values["no-follow"]) {
      const page = `${client.base}/#logs`;
      if (await openBrowser(page)) console.log(`Opened ${page}`);
      else console.log(`Open ${page} in your browser to see the server's log (or print it here: lemonade logs --follow).`);
      return 0;
    }
    const key = apiKey();
    const url = `${client.base.replace(/^http/, "ws")}/logs/stream${key ? `?api_key=${encodeURIComponent(key)}` : ""}`;
    const ws = new WebSocket(url);
    const colour = (line: string, severity: string) => (severity === "Error" || severity === "Fatal" ? red(line, process.stdout) : severity === "Warning" ? yellow(line) : line);
    return await new Promise<number>((resolve) => {
      ws.onopen = () => ws.send(JSON.stringify({ type: "logs.subscribe", after_seq: null }));
      ws.onmessage = (ev) => {
        const msg = JSON.parse(String(ev.data));
        if (msg.type === "logs.snapshot") {
          for (const e of msg.entries) console.log(colour(e.line, e.severity));
          if (input.values["no-follow"]) {
            ws.close();
            resolve(0);
          }
        } else if (msg.type === "logs.entry") console.log(colour(msg.entry.line, msg.entry.severity));
      };
      let opened = false;
      ws.addEventListener("open", () => (opened = true));
      ws.onerror = () => {
        if (!opened) console.error(red(`Error: the server refused the log stream${key ? " with the key given" : ""}: it needs its API key. Pass --api-key KEY or set LEMONADE_API_KEY.`));
        resolve(1);
      };
      ws.onclose = () => resolve(opened ? 0 : 1);
      process.once("SIGINT", () => {
        ws.close();
        resolve(0);
      });
    });
  },
};
