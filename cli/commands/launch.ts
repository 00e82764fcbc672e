// `launch AGENT`: starts a coding agent pointed at this server, with the environment it reads
// (Claude Code on the Anthropic routes, the others on the OpenAI ones), after loading the model.
import { apiKey, Client, CliError, ensureServer, target } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { pullAndLoad } from "./run.ts";

interface Agent {
  install: string;
  /** The agent's argv and environment for a server at `base` and a model. */
  setup(base: string, model: string, key: string): { argv: string[]; env: Record<string, string> };
}

const AGENTS: Record<string, Agent> = {
  claude: {
    install: "npm install -g @anthropic-ai/claude-code",
    setup: (base, model, key) => ({
      argv: ["claude"],
      env: { ANTHROPIC_BASE_URL: base, ANTHROPIC_AUTH_TOKEN: key, ANTHROPIC_MODEL: model, ANTHROPIC_SMALL_FAST_MODEL: model },
    }),
  },
  codex: {
    install: "npm install -g @openai/codex",
    setup: (base, model, key) => ({ argv: ["codex", "-m", model], env: { OPENAI_BASE_URL: `${base}/v1`, OPENAI_API_KEY: key } }),
  },
  opencode: {
    install: "npm install -g opencode-ai",
    setup: (base, model, key) => ({ argv: ["opencode", "--model", `openai/${model}`], env: { OPENAI_BASE_URL: `${base}/v1`, OPENAI_API_KEY: key } }),
  },
  aider: {
    install: "python -m pip install aider-install && aider-install",
    setup: (base, model, key) => ({ argv: ["aider", "--model", `openai/${model}`], env: { OPENAI_API_BASE: `${base}/v1`, OPENAI_API_KEY: key } }),
  },
};

const clientOf = (input: CommandInput) => new Client(target(input.values as { host?: string; port?: string }));

export const launch: Command = {
  name: "launch",
  summary: "Start a coding agent (claude, codex, opencode, aider) on this server's models",
  usage: "launch AGENT [--model MODEL] [-- AGENT ARGS...]",
  help: `Loads the model (default: the one loaded last) and runs the agent with its base URL, key and
model pointed at this server. Arguments after -- go to the agent.
  claude     Claude Code: ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_MODEL
  codex      OpenAI Codex CLI: OPENAI_BASE_URL, OPENAI_API_KEY, -m MODEL
  opencode   opencode: OPENAI_BASE_URL, OPENAI_API_KEY, --model openai/MODEL
  aider      aider: OPENAI_API_BASE, OPENAI_API_KEY, --model openai/MODEL
  --model M  The model the agent uses
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, model: { type: "string" } },
  async run(input) {
    const [name, ...agentArgs] = input.positionals;
    const agent = name ? AGENTS[name] : undefined;
    if (!agent) throw new CliError(`${name ? `unknown agent '${name}'` : "name an agent"}: one of ${Object.keys(AGENTS).join(", ")}`, 2);
    const client = clientOf(input);
    await ensureServer(client);
    const model = (input.values.model as string | undefined) ?? (await client.json("GET", "/v1/health")).model_loaded;
    if (!model) throw new CliError(`no model is loaded: pass one with lemonade launch ${name} --model MODEL`, 2);
    const { argv, env } = agent.setup(client.base, model, apiKey() ?? "lemonade");
    const binary = Bun.which(argv[0]!, { PATH: process.env.PATH ?? "" });
    if (!binary) throw new CliError(`${argv[0]} is not on PATH. Install it with: ${agent.install}`);
    await pullAndLoad(client, model);
    const child = Bun.spawn([binary, ...argv.slice(1), ...agentArgs], { stdio: ["inherit", "inherit", "inherit"], env: { ...process.env, ...env } });
    // The agent owns the terminal: Ctrl-C is its to handle.
    process.on("SIGINT", () => {});
    return await child.exited;
  },
};
