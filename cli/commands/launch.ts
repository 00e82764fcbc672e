// `launch AGENT`: starts a coding agent pointed at this server, as Lemonade's CLI does
// (lemonade-docs-guide-cli.md, "Options for launch"): Claude Code on the Anthropic routes, Codex
// with a Lemonade model provider on the Responses API, opencode and pi through their own config
// files; the model's load is asked for in the background while the agent starts.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { apiKey, Client, CliError, ensureServer, target, WILDCARD_HOSTS } from "../client.ts";
import { SERVER_FLAGS, type Command, type CommandInput } from "../command.ts";
import { splitArgs } from "../../lib/args.ts";
import { importRemote, recipeContents, recipeFiles, type RecipeEntry } from "./models.ts";
import { askLine, askNumber, chooseOne, endQuestions } from "../prompt.ts";
import { serves } from "../../spec/recipes.ts";

/** The key an agent is given when the user gave none (Lemonade's default). */
const DEFAULT_KEY = "lemonade";

interface Launch {
  argv: string[];
  env: Record<string, string>;
}

/** A model an agent's config file lists: its id, the name shown, its context window. */
interface AgentModel {
  id: string;
  name: string;
  context: number;
}

interface Agent {
  install: string;
  /** How the agent is pointed at this server, for its help. */
  wiring: string;
  /** The agent's argv and environment for a server at `base` and a model. */
  setup(base: string, model: string, key: string, provider: string | undefined): Launch;
  /** Writes the agent's own config files for this server and the model, before it starts. */
  configure?(base: string, key: string, model: string, models: AgentModel[]): void;
}

/** Codex's `-c key=value` arguments: a Lemonade model provider on the Responses API, unless the
 * user picks a provider of their own config.toml (`--provider NAME`, or `-p` alone: `lemonade`). */
function codexConfig(base: string, provider: string | undefined): string[] {
  const name = provider || "lemonade";
  const values = [
    ...(provider !== undefined ? [] : [`model_providers.${name}={ name='Lemonade', base_url='${base}/v1', wire_api='responses', env_key='OPENAI_API_KEY', requires_openai_auth=false, supports_websockets=false }`]),
    `model_provider="${name}"`,
    "show_raw_agent_reasoning=true",
    'web_search="disabled"',
    "analytics.enabled=false",
    "feedback.enabled=false",
  ];
  return values.flatMap((v) => ["-c", v]);
}

/** A JSON config file, read to be updated; one that is not a JSON object is left alone. */
function readConfig(path: string): Record<string, unknown> {
  if (!existsSync(path)) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new Error(`Cannot parse existing ${path}: ${(err as Error).message}. Refusing to overwrite. Fix or remove the file manually.`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error(`${path} is not a JSON object. Refusing to overwrite.`);
  return parsed as Record<string, unknown>;
}

function writeConfig(path: string, config: Record<string, unknown>): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, `${JSON.stringify(config, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}

const configHome = () => process.env.XDG_CONFIG_HOME || join(homedir(), ".config");

const AGENTS: Record<string, Agent> = {
  claude: {
    install: "Install Claude Code CLI and ensure 'claude' is on PATH.",
    wiring: "Claude Code on this server's Anthropic routes: ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN and\nANTHROPIC_DEFAULT_*_MODEL.",
    setup: (base, model, key) => ({
      argv: ["claude"],
      env: {
        ANTHROPIC_BASE_URL: base,
        ANTHROPIC_AUTH_TOKEN: key,
        LEMONADE_API_KEY: key,
        ANTHROPIC_DEFAULT_OPUS_MODEL: model,
        ANTHROPIC_DEFAULT_SONNET_MODEL: model,
        ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
        CLAUDE_CODE_SUBAGENT_MODEL: model,
        CLAUDE_CODE_ATTRIBUTION_HEADER: "0",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
    }),
  },
  codex: {
    install: "Install Codex CLI and ensure 'codex' is on PATH.",
    wiring: "Codex CLI on this server's Responses API: -c model_providers.lemonade={...} and -m MODEL.",
    setup: (base, model, key, provider) => ({ argv: ["codex", ...codexConfig(base, provider), "-m", model], env: { OPENAI_API_KEY: key, LEMONADE_API_KEY: key } }),
  },
  opencode: {
    install: "Install OpenCode CLI:\n  curl -fsSL https://opencode.ai/install | bash\nor:\n  npm i -g opencode-ai",
    wiring: "opencode through its ~/.config/opencode/opencode.json \"Lemonade\" provider (written here,\nthe rest of the file kept): -m Lemonade/MODEL.",
    setup: (_base, model, key) => ({ argv: ["opencode", "-m", `Lemonade/${model}`], env: { LEMONADE_API_KEY: key } }),
    // ~/.config/opencode/opencode.json: created, or its Lemonade provider refreshed, the rest kept
    // (and its `$schema` back-filled).
    configure(base, key, _model, models) {
      const path = join(configHome(), "opencode", "opencode.json");
      const config = readConfig(path);
      const providers = typeof config.provider === "object" && config.provider !== null && !Array.isArray(config.provider) ? (config.provider as Record<string, unknown>) : {};
      providers.Lemonade = {
        npm: "@ai-sdk/openai-compatible",
        name: "Lemonade Server (local)",
        options: { baseURL: `${base}/v1`, apiKey: key },
        models: Object.fromEntries(models.map((m) => [m.id, { name: m.name, limit: { context: m.context, output: Math.floor(m.context / 3) } }])),
      };
      writeConfig(path, { $schema: "https://opencode.ai/config.json", ...config, provider: providers });
    },
  },
  pi: {
    install: "Install Pi coding agent:\n  npm i -g @earendil-works/pi-coding-agent",
    wiring: "pi through its ~/.pi/agent/models.json \"Lemonade\" provider, started on it and the model\n(settings.json's default is set when it names none).",
    setup: (_base, model, key) => ({ argv: ["pi", "--provider", "Lemonade", "--model", model], env: { LEMONADE_API_KEY: key } }),
    // ~/.pi/agent/models.json (or $PI_CODING_AGENT_DIR's): the Lemonade provider with this server's
    // chat models; settings.json's default provider and model are set only when it names none.
    configure(base, key, model, models) {
      const dir = process.env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent");
      const path = join(dir, "models.json");
      const config = readConfig(path);
      const providers = typeof config.providers === "object" && config.providers !== null && !Array.isArray(config.providers) ? (config.providers as Record<string, unknown>) : {};
      providers.Lemonade = { baseUrl: `${base}/v1`, api: "openai-completions", apiKey: key, models: models.map((m) => ({ id: m.id })) };
      writeConfig(path, { ...config, providers });
      const settingsPath = join(dir, "settings.json");
      const settings = readConfig(settingsPath);
      if (typeof settings.defaultProvider !== "string" || typeof settings.defaultModel !== "string") writeConfig(settingsPath, { ...settings, defaultProvider: "Lemonade", defaultModel: model });
    },
  },
};

const clientOf = (input: CommandInput) => new Client(target(input.values as { host?: string; port?: string }));

interface ListedModel {
  id: string;
  recipe?: string;
  labels?: string[];
  downloaded?: boolean;
  context_length?: number;
  max_context_window?: number;
}

/** A chat model an agent can drive: it chats, on a recipe that serves the chat route. */
const agentLlm = (m: ListedModel) => !!m.recipe && serves(m.recipe, "chat") && !!m.labels?.includes("chat");
const toolCalling = (m: ListedModel) => agentLlm(m) && !!m.labels?.includes("tool-calling");
/** Qwen 3.5 models do not work with Codex (llama.cpp issue 20733): Codex is warned, and not
 * recommended them. */
const offeredTo = (agent: string) => (m: ListedModel) => !(agent === "codex" && /^qwen3\.5/i.test(m.id));
const row = (m: ListedModel) => `${m.id} [${m.downloaded ? "downloaded" : "not-downloaded"}] (${m.recipe || "-"})`;
const CODEX_WARNING = "\nWarning: Qwen 3.5 family models currently do not work with Codex due to a llama.cpp incompatibility. Track upstream: https://github.com/ggml-org/llama.cpp/issues/20733\n";

/** The agent, asked for by number when none is named (`echo 1 | lemonade launch --model M` answers
 * it from a pipe, as every menu). */
async function pickAgent(): Promise<string> {
  const names = Object.keys(AGENTS);
  process.stdout.write(`Select an agent to launch:\n${names.map((n, i) => `  ${i + 1}) ${n}\n`).join("")}`);
  const answer = await askLine("Enter number: ");
  if (answer === null) throw new CliError("Failed to read agent selection.");
  if (!/^\d+$/.test(answer)) throw new CliError("Invalid selection.");
  const name = names[Number(answer) - 1];
  if (!name) throw new CliError("Selection out of range.");
  console.log(`Selected agent: ${name}`);
  return name;
}

/** The model, when --model is not given, chosen as Lemonade's CLI offers it: a coding-agent recipe
 * to import (the recipes repository's `coding-agents`, or `--directory`; `--recipe-file` picks one
 * without asking), else a downloaded tool-calling chat model, else a recommended (hot) one. */
async function pickModel(client: Client, agent: string, directory: string | undefined, recipeFile: string | undefined): Promise<string> {
  console.log("No model specified for 'launch'.");
  const shown = agent.charAt(0).toUpperCase() + agent.slice(1);
  const models = async (all: boolean) => (await client.json("GET", `/v1/models?show_all=${all}`)).data as ListedModel[];
  let dir = directory;
  // A directory picked from the list is left by going back to the list.
  let listed = false;
  let state: "dirs" | "files" | "downloaded" | "recommended" = "dirs";
  for (;;) {
    if (state === "dirs") {
      if (!dir) {
        let dirs: string[];
        try {
          dirs = (await recipeContents("")).filter((e) => e.type === "dir").map((e) => e.name);
        } catch (err) {
          console.log(`Warning: Failed to fetch remote launch recipe directories: ${(err as Error).message}`);
          console.log("Falling back to downloaded model browser.");
          state = "downloaded";
          continue;
        }
        // A coding agent's own directory goes straight to its recipes.
        if (dirs.includes("coding-agents")) dir = "coding-agents";
        else {
          const picked = await chooseOne(`Select a recipe directory to import and use with ${shown}:`, dirs, "Browse downloaded models");
          if (picked < 0) {
            state = "downloaded";
            continue;
          }
          dir = dirs[picked]!;
          listed = true;
        }
      }
      state = "files";
      continue;
    }
    if (state === "files") {
      let files: RecipeEntry[];
      try {
        files = await recipeFiles(dir!);
      } catch (err) {
        console.log(`Warning: Failed to fetch recipes in '${dir}': ${(err as Error).message}`);
        state = "downloaded";
        continue;
      }
      const given = recipeFile ? files.find((f) => f.name === recipeFile) : undefined;
      if (recipeFile && !given) console.log(`Warning: Recipe file '${recipeFile}' not found in directory '${dir}'.`);
      let file = given;
      if (!file) {
        if (agent === "codex") console.log(CODEX_WARNING);
        if (!files.length) console.log(`No recipe files found under '${dir}'. Use option 0 to ${listed ? "pick another directory" : "browse downloaded models"}.`);
        const title = listed ? `Select a recipe from '${dir}' to import and use with ${shown}:` : `Select a recipe to import and use with ${shown}:`;
        const picked = await chooseOne(title, files.map((f) => f.name), listed ? "Back to recipe directories" : "Browse downloaded models");
        if (picked < 0) {
          if (listed) dir = undefined;
          state = listed ? "dirs" : "downloaded";
          continue;
        }
        file = files[picked]!;
      }
      const model = await importRemote(client, dir!, file);
      console.log(`Using imported recipe model: ${model}`);
      return model;
    }
    if (state === "downloaded") {
      const local = (await models(false)).filter(toolCalling);
      if (agent === "codex") console.log(CODEX_WARNING);
      const back = local.length + 1;
      process.stdout.write(
        `Browse downloaded tool-calling LLMs:\n  0) Browse recommended models (download may be required)\n${local.map((m, i) => `  ${i + 1}) ${m.id} [downloaded] (${m.recipe || "-"})\n`).join("")}  ${back}) ${listed ? "Back to recipe directories" : "Back to recipes"}\n`,
      );
      if (!local.length) console.log("No downloaded tool-calling LLMs found.");
      const n = await askNumber();
      if (n === 0) state = "recommended";
      else if (n === back) {
        if (listed) dir = undefined;
        state = "dirs";
      }
      else if (n >= 1 && n <= local.length) {
        console.log(`Selected model: ${local[n - 1]!.id}`);
        return local[n - 1]!.id;
      } else throw new CliError("Selection out of range.");
      continue;
    }
    const hot = (await models(true)).filter((m) => toolCalling(m) && m.labels?.includes("hot") && offeredTo(agent)(m));
    if (!hot.length) console.log("No recommended models available right now.");
    const picked = await chooseOne("Browse recommended LLMs (hot + tool-calling):", hot.map(row), "Back to downloaded models");
    if (picked < 0) {
      state = "downloaded";
      continue;
    }
    console.log(`Selected model: ${hot[picked]!.id}`);
    return hot[picked]!.id;
  }
}

const OPTIONS_HELP = `Options:
  -m, --model MODEL    Model name to load; without it, asks for one: a coding-agent recipe to import,
                       a downloaded tool-calling model or a recommended one
  --directory DIR      Remote recipe directory used only if you choose recipe import at prompt
  --recipe-file FILE   Remote recipe JSON filename used only if you choose recipe import at prompt
  --agent-args ARGS    Custom arguments to pass directly to the launched agent process`;

const CODEX_PROVIDER_HELP = `  -p, --provider [PROVIDER]
                       Use model provider name for Codex instead of Lemonade-injected provider
                       definition (default: lemonade); Codex's own config.toml defines it`;

/** The server's address as an agent is given it: a server bound to every address is reached on
 * localhost. */
function agentBase(client: Client): string {
  const { host, port, ssl } = client.at;
  const reached = WILDCARD_HOSTS.has(host) ? "localhost" : host.includes(":") ? `[${host}]` : host;
  return `${ssl ? "https" : "http"}://${reached}:${port}`;
}

/** Lemonade's default context window for a model its config file lists, where the model has
 * no saved ctx_size. */
const DEFAULT_AGENT_CONTEXT = 40960;

/** The downloaded chat models an agent's config file lists, the model launched among them. */
async function agentModels(client: Client, model: string): Promise<AgentModel[]> {
  const entry = (id: string, context?: unknown): AgentModel => ({ id, name: `${id} (local)`, context: typeof context === "number" ? context : DEFAULT_AGENT_CONTEXT });
  let listed: (ListedModel & { recipe_options?: { ctx_size?: unknown } })[] = [];
  try {
    listed = (await client.json("GET", "/v1/models?show_all=false")).data;
  } catch {
    // The launched model is still listed below.
  }
  const models = listed.filter((m) => m.labels?.includes("chat")).map((m) => entry(m.id, m.recipe_options?.ctx_size));
  // The model as typed (extra.NAME for the listed NAME, an alias) is listed too, with its own
  // saved ctx_size where the server knows the name.
  if (!models.some((m) => m.id === model)) {
    const named = await client.json("GET", `/v1/models/${encodeURIComponent(model)}`).catch(() => undefined);
    models.push(entry(model, named?.recipe_options?.ctx_size));
  }
  return models;
}

export const launch: Command = {
  name: "launch",
  summary: `Launch an agent with a model`,
  usage: "launch [AGENT] [OPTIONS]",
  help: `Starts the agent pointed at this server (its base URL, the API key and the model), asking for
the model's load in the background. Without AGENT, asks which one.

Agents:
${Object.keys(AGENTS).map((n) => `  ${n.padEnd(10)} Launch ${n} with a model`).join("\n")}

Run 'lemonade launch AGENT --help' for the agent's options.`,
  helpFor([name]) {
    if (!name || !AGENTS[name]) return undefined;
    return `Usage: lemonade launch ${name} [OPTIONS]

Launch ${name} with a model: ${AGENTS[name].wiring}
The API key (--api-key, else LEMONADE_API_KEY) is handed to the agent; without one, "${DEFAULT_KEY}".

${OPTIONS_HELP}${name === "codex" ? `\n${CODEX_PROVIDER_HELP}` : ""}`;
  },
  options: {
    ...SERVER_FLAGS,
    model: { type: "string", short: "m" },
    "agent-args": { type: "string" },
    provider: { type: "string", short: "p" },
    directory: { type: "string" },
    "recipe-file": { type: "string" },
  },
  // `-p`/`--provider` may stand alone (Codex's default provider): give it its empty value.
  rewrite: (args) => args.flatMap((a, i) => ((a === "-p" || a === "--provider") && (args[i + 1] === undefined || args[i + 1]!.startsWith("-")) ? [`--provider=`] : [a])),
  async run(input) {
    const values = input.values as { model?: string; "agent-args"?: string; provider?: string; directory?: string; "recipe-file"?: string };
    let [name, ...unexpected] = input.positionals;
    // As Lemonade's CLI (its parser takes no extras): what the agent gets goes in --agent-args.
    if (unexpected.length) throw new CliError(`The following argument${unexpected.length > 1 ? "s were" : " was"} not expected: ${unexpected.join(" ")}\nRun with --help for more information.`, 2);
    // As Lemonade's CLI: refused before anything is asked, whatever the agent.
    if (values.provider !== undefined && name !== "codex") throw new CliError("--provider is only supported for 'lemonade launch codex'.");
    if (name !== undefined && !AGENTS[name]) throw new CliError(`Unsupported agent: ${name}. Supported agents: ${Object.keys(AGENTS).join(", ")}.\nRun with --help for more information.`, 2);
    name ??= await pickAgent();
    const agent = AGENTS[name]!;
    if (values.model) console.log("Model was provided explicitly; skipping recipe import prompts.");
    // A missing agent fails before anything is asked, loaded or written, in Lemonade's words
    // (its log line, unprefixed).
    const program = agent.setup("", "", "", values.provider).argv[0]!;
    const binary = Bun.which(program, { PATH: process.env.PATH ?? "" });
    if (!binary) {
      process.stderr.write(`Agent binary not found for ${name}\n${agent.install}\n`);
      return 1;
    }
    const client = clientOf(input);
    await ensureServer(client);
    const model = values.model ?? (await pickModel(client, name, values.directory, values["recipe-file"]));
    endQuestions();
    const key = apiKey() ?? DEFAULT_KEY;
    const base = agentBase(client);
    const { argv, env } = agent.setup(base, model, key, values.provider);
    if (agent.configure) {
      // As Lemonade's CLI: a config file it cannot update is reported, and the agent starts anyway.
      try {
        agent.configure(base, key, model, await agentModels(client, model));
      } catch (err) {
        process.stderr.write(`Warning: Failed to sync ${name} config: ${(err as Error).message}\nContinuing with launch anyway...\n`);
      }
    }
    console.log(apiKey() ? "Launch auth: API key provided and propagated to the launched agent." : "Launch auth: no API key provided; using default agent auth token.");
    console.log(`Loading model in background: ${model}`);
    void client.json("POST", "/v1/load", { model_name: model, save_options: false }).catch(() => {});
    console.log(`Launching ${name}...`);
    const extra = values["agent-args"] ? splitArgs(values["agent-args"]) : [];
    const child = Bun.spawn([binary, ...argv.slice(1), ...extra], { stdio: ["inherit", "inherit", "inherit"], env: { ...process.env, ...env } });
    // The agent owns the terminal: Ctrl-C is its to handle.
    process.on("SIGINT", () => {});
    return await child.exited;
  },
};
