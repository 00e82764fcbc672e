// `launch AGENT`: starts a coding agent pointed at this server, as Lemonade's CLI does
// (lemonade-docs-guide-cli.md, "Options for launch"): Claude Code on the Anthropic routes, Codex
// with a Lemonade model provider on the Responses API, opencode and pi through their own config
// files; the model's load is asked for in the background while the agent starts.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { apiKey, Client, CliError, ensureServer, target } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { splitArgs } from "../../lib/args.ts";
import { chooseOne } from "./models.ts";

/** The key an agent is given when the user gave none (Lemonade's default). */
const DEFAULT_KEY = "lemonade";

interface Launch {
  argv: string[];
  env: Record<string, string>;
}

interface Agent {
  install: string;
  /** The agent's argv and environment for a server at `base` and a model. */
  setup(base: string, model: string, key: string, provider: string | undefined): Launch;
  /** Writes the agent's own config file for this server, before it starts. */
  configure?(base: string, key: string, models: { id: string; context: number }[]): void;
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
    throw new CliError(`${path} is not valid JSON (${(err as Error).message}). Refusing to overwrite. Fix or remove the file manually.`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new CliError(`${path} is not a JSON object. Refusing to overwrite.`);
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
    setup: (base, model, key, provider) => ({ argv: ["codex", ...codexConfig(base, provider), "-m", model], env: { OPENAI_API_KEY: key, LEMONADE_API_KEY: key } }),
  },
  opencode: {
    install: "Install OpenCode CLI:\n  curl -fsSL https://opencode.ai/install | bash\nor:\n  npm i -g opencode-ai",
    setup: (_base, model, key) => ({ argv: ["opencode", "-m", `Lemonade/${model}`], env: { LEMONADE_API_KEY: key } }),
    // ~/.config/opencode/opencode.json: created, or its Lemonade provider refreshed, the rest kept
    // (and its `$schema` back-filled).
    configure(base, key, models) {
      const path = join(configHome(), "opencode", "opencode.json");
      const config = readConfig(path);
      const providers = typeof config.provider === "object" && config.provider !== null && !Array.isArray(config.provider) ? (config.provider as Record<string, unknown>) : {};
      providers.Lemonade = {
        npm: "@ai-sdk/openai-compatible",
        name: "Lemonade Server (local)",
        options: { baseURL: `${base}/v1`, apiKey: key },
        models: Object.fromEntries(models.map((m) => [m.id, { name: m.id, limit: { context: m.context, output: Math.floor(m.context / 3) } }])),
      };
      writeConfig(path, { $schema: "https://opencode.ai/config.json", ...config, provider: providers });
    },
  },
  pi: {
    install: "Install Pi coding agent:\n  npm i -g @earendil-works/pi-coding-agent",
    setup: (_base, model, key) => ({ argv: ["pi", "--provider", "Lemonade", "--model", model], env: { LEMONADE_API_KEY: key } }),
    // ~/.pi/agent/models.json: the Lemonade provider with this server's chat models.
    configure(base, key, models) {
      const path = join(homedir(), ".pi", "agent", "models.json");
      const config = readConfig(path);
      const providers = typeof config.providers === "object" && config.providers !== null && !Array.isArray(config.providers) ? (config.providers as Record<string, unknown>) : {};
      providers.Lemonade = { baseUrl: `${base}/v1`, api: "openai-completions", apiKey: key, models: models.map((m) => ({ id: m.id, name: m.id, contextWindow: m.context })) };
      writeConfig(path, { ...config, providers });
    },
  },
};

const clientOf = (input: CommandInput) => new Client(target(input.values as { host?: string; port?: string }));

export const launch: Command = {
  name: "launch",
  summary: `Start a coding agent (${Object.keys(AGENTS).join(", ")}) on this server's models`,
  usage: "launch [AGENT] [--model MODEL] [--agent-args ARGS] [--provider [NAME]] [-- AGENT ARGS...]",
  help: `Starts the agent with its base URL, key and model pointed at this server, asking for the
model's load in the background. Without AGENT, asks which one; without --model, the one loaded last.
Agents:
  claude     Claude Code: ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_DEFAULT_*_MODEL
  codex      Codex CLI: -c model_providers.lemonade={...} (the Responses API), -m MODEL
  opencode   opencode: its ~/.config/opencode/opencode.json "Lemonade" provider, -m Lemonade/MODEL
  pi         pi: its ~/.pi/agent/models.json "Lemonade" provider, --provider Lemonade --model MODEL
  --model M          The model the agent uses
  --agent-args ARGS  Arguments for the agent (as do those after --)
  --provider, -p     codex only: use this provider of your own Codex config.toml (default lemonade)
  --directory, --recipe-file  Accepted for Lemonade's CLI; import a recipe with: lemonade import
The API key (--api-key, else LEMONADE_API_KEY) is handed to the agent; without one, "${DEFAULT_KEY}".
${SERVER_FLAGS_HELP}`,
  options: {
    ...SERVER_FLAGS,
    model: { type: "string" },
    "agent-args": { type: "string" },
    provider: { type: "string", short: "p" },
    directory: { type: "string" },
    "recipe-file": { type: "string" },
  },
  // `-p`/`--provider` may stand alone (Codex's default provider): give it its empty value.
  rewrite: (args) => args.flatMap((a, i) => ((a === "-p" || a === "--provider") && (args[i + 1] === undefined || args[i + 1]!.startsWith("-")) ? [`--provider=`] : [a])),
  async run(input) {
    const values = input.values as { model?: string; "agent-args"?: string; provider?: string };
    let [name, ...agentArgs] = input.positionals;
    if (values.provider !== undefined && name !== undefined && name !== "codex") throw new CliError("Error: --provider is only supported for 'lemonade launch codex'.");
    if (name === undefined) {
      const names = Object.keys(AGENTS);
      name = names[(await chooseOne("Agents:", names))!]!;
      if (values.provider !== undefined && name !== "codex") throw new CliError("Error: --provider is only supported for 'lemonade launch codex'.");
    }
    const agent = AGENTS[name];
    if (!agent) throw new CliError(`Unsupported agent: ${name}. Supported agents: ${Object.keys(AGENTS).join(", ")}.`, 2);
    const client = clientOf(input);
    await ensureServer(client);
    const model = values.model ?? (await client.json("GET", "/v1/health")).model_loaded;
    if (!model) throw new CliError(`no model is loaded: pass one with lemonade launch ${name} --model MODEL`, 2);
    const key = apiKey() ?? DEFAULT_KEY;
    const { argv, env } = agent.setup(client.base, model, key, values.provider);
    // A missing agent fails before anything is loaded or written.
    const binary = Bun.which(argv[0]!, { PATH: process.env.PATH ?? "" });
    if (!binary) throw new CliError(`Agent binary not found for ${name}\n${agent.install}`);
    if (agent.configure) {
      const listed = (await client.json("GET", "/v1/models")).data as { id: string; labels?: string[]; context_length?: number; max_context_window?: number }[];
      const chat = listed.filter((m) => m.labels?.includes("chat"));
      agent.configure(client.base, key, chat.map((m) => ({ id: m.id, context: m.context_length ?? m.max_context_window ?? 32768 })));
    }
    console.log(apiKey() ? "Launch auth: API key provided and propagated to the launched agent." : "Launch auth: no API key provided; using default agent auth token.");
    console.log(`Loading model in background: ${model}`);
    void client.json("POST", "/v1/load", { model_name: model, save_options: false }).catch(() => {});
    console.log(`Launching ${name}...`);
    const extra = values["agent-args"] ? splitArgs(values["agent-args"]) : [];
    const child = Bun.spawn([binary, ...argv.slice(1), ...extra, ...agentArgs], { stdio: ["inherit", "inherit", "inherit"], env: { ...process.env, ...env } });
    // The agent owns the terminal: Ctrl-C is its to handle.
    process.on("SIGINT", () => {});
    return await child.exited;
  },
};
