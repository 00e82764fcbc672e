// Server commands: status, backends, alias, config, logs.
import { join } from "node:path";
import { Client, CliError, ensureServer, errorMessage, target } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { ProgressReporter, dim, green, red, sseEvents, table, yellow } from "../format.ts";
import { defaultCacheDir } from "../../config/config.ts";
import { readJsonFile, writeJsonFileAtomic } from "../../lib/json-file.ts";

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
    return 0;
  },
};

export const backends: Command = {
  name: "backends",
  summary: "List recipes and their backends; install one",
  usage: "backends [--json] | backends install <recipe>:<backend> | backends uninstall <recipe>:<backend>",
  help: `Lists every recipe's backends and their state (installed, installable, unsupported).
  install R:B     Build and install a backend, e.g. llamacpp:cpu
  uninstall R:B   Remove an installed backend
  --json          Print JSON for scripts
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, json: { type: "boolean" } },
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
    const res = await client.request("POST", "/v1/install", { recipe, backend, stream: true });
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
      else console.log(table(["ALIAS", "TARGET"], aliases.map((a: any) => [a.alias, a.target])));
    } else if (action === "remove" && args.length === 1) {
      await client.json("DELETE", `/internal/aliases/${encodeURIComponent(args[0]!)}`);
      console.log(`Removed alias ${args[0]}`);
    } else throw new CliError(`usage: lemonade ${this.usage}`, 2);
    return 0;
  },
};

/** Keys `config set` accepts, with how their values are read. */
const CONFIG_KEYS: Record<string, "string" | "int" | "bool"> = {
  host: "string",
  port: "int",
  log_level: "string",
  max_loaded_models: "int",
  ctx_size: "int",
  extra_models_dir: "string",
  offline: "bool",
};

export const config: Command = {
  name: "config",
  summary: "Read or change config.json",
  usage: "config get [key] | config set key=value [key=value]...",
  help: `Reads or writes config.json in the cache directory (${join("$LEMONADE_CACHE_DIR", "config.json")}). Changes take
effect when the server next starts. Keys: ${Object.keys(CONFIG_KEYS).join(", ")}.`,
  async run(input) {
    const [action, ...args] = input.positionals;
    const path = join(defaultCacheDir(), "config.json");
    const current = readJsonFile<Record<string, unknown>>(path, {});
    if (action === "get" && args.length <= 1) {
      if (args[0]) {
        if (!(args[0] in current)) throw new CliError(`${args[0]} is not set in ${path}`);
        console.log(JSON.stringify(current[args[0]]));
      } else console.log(JSON.stringify(current, null, 2));
      return 0;
    }
    if (action !== "set" || !args.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const next = { ...current };
    for (const pair of args) {
      const eq = pair.indexOf("=");
      const key = pair.slice(0, eq);
      const raw = pair.slice(eq + 1);
      const kind = CONFIG_KEYS[key];
      if (eq < 1 || !kind) throw new CliError(`unknown setting '${pair}'; keys: ${Object.keys(CONFIG_KEYS).join(", ")}`, 2);
      if (kind === "int") {
        if (!/^-?\d+$/.test(raw)) throw new CliError(`${key} must be a whole number, got ${raw}`, 2);
        next[key] = Number(raw);
      } else if (kind === "bool") {
        if (!/^(true|false)$/.test(raw)) throw new CliError(`${key} must be true or false, got ${raw}`, 2);
        next[key] = raw === "true";
      } else next[key] = raw;
    }
    writeJsonFileAtomic(path, next);
    console.log(`Saved ${path}. Restart the server for the change to take effect.`);
    return 0;
  },
};

export const logs: Command = {
  name: "logs",
  summary: "Follow the server's log",
  usage: "logs [--no-follow]",
  help: `Prints the retained log, then follows new lines until interrupted.\n  --no-follow   Print the retained log and exit\n${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, "no-follow": { type: "boolean" } },
  async run(input) {
    const client = clientOf(input);
    if (!(await client.isUp())) throw new CliError(`No Lemonade server answers at ${client.base}. Start one with: lemonade serve`);
    const key = process.env.LEMONADE_ADMIN_API_KEY || process.env.LEMONADE_API_KEY;
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
      ws.onerror = () => resolve(1);
      ws.onclose = () => resolve(0);
      process.once("SIGINT", () => {
        ws.close();
        resolve(0);
      });
    });
  },
};
