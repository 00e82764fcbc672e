// Every question the `lemonade` CLI asks (lemonade-docs-guide-cli.md), answered as a person would:
// in a pseudo-terminal, the prompt read back, keys typed, the result checked on a real server
// with llama-server and the tiny models; and what each does when standard input is not a
// terminal (a clear error or the documented default, never a wait).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startFakeHub, type FakeHub } from "../helpers/fake-hub.ts";
import { spawnPty } from "../helpers/pty.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const root = join(import.meta.dir, "..", "..");
let server: TestServer;
let hub: FakeHub;
let github: ReturnType<typeof Bun.serve>;
/** A folder of stand-in agents, each writing its environment and argv to `record`. */
let bin: string;
let record: string;
let home: string;

/** The recipes repository as GitHub's contents API lists it: `coding-agents` with one recipe. */
const agentRecipe = { model_name: "AgentRecipe", recipe: "llamacpp", checkpoint: "test-org/tiny-GGUF:Q4_0", labels: ["tool-calling"], unknown_field: 1 };

const env = (extra: Record<string, string> = {}) => ({
  PATH: `${bin}:/usr/bin:/bin`,
  HOME: home,
  XDG_CONFIG_HOME: join(home, ".config"),
  LEMONADE_CACHE_DIR: server.cacheDir,
  LEMONADE_HOST: server.url,
  LEMONADE_GITHUB_API_ENDPOINT: `http://127.0.0.1:${github.port}`,
  ...extra,
});

const cliArgv = (args: string[]) => [process.execPath, join(root, "cli", "main.ts"), ...args];
const onTerminal = (args: string[], extra: Record<string, string> = {}) => spawnPty(cliArgv(args), env(extra), root);

/** The CLI with standard input a pipe (`stdin` written, then closed) or nothing at all. */
async function piped(args: string[], stdin?: string, extra: Record<string, string> = {}) {
  const p = Bun.spawn(cliArgv(args), { cwd: root, env: env(extra), stdin: stdin === undefined ? "ignore" : Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

/** `reads`: the agent also reads a line from its terminal, as an interactive agent does. */
const fakeAgent = (name: string, reads = false) =>
  writeFileSync(join(bin, name), `#!/bin/sh\n{ env; echo "ARGV $*"; ${reads ? 'echo "ready" > /dev/tty; read line; echo "TYPED $line"; ' : ""}} > "${record}"\n`, { mode: 0o755 });
const models = async (all = true) => ((await (await fetch(`${server.url}/v1/models?show_all=${all}`)).json()).data as { id: string; labels: string[]; downloaded: boolean }[]);

beforeAll(async () => {
  const chat = new Uint8Array(readFileSync(join(testModelsDir(), MODELS.chat)));
  const many = Object.fromEntries(["Q2_K", "Q3_K_M", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0"].map((q) => [`many-${q}.gguf`, chat]));
  hub = startFakeHub({
    "test-org/tiny-GGUF": { sha: "c".repeat(40), files: { "tiny-Q4_0.gguf": chat, "tiny-Q8_0.gguf": chat } },
    "test-org/many-GGUF": { sha: "d".repeat(40), files: many },
  });
  github = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/repos/lemonade-sdk/recipes/contents") return Response.json([{ name: "coding-agents", type: "dir" }, { name: "README.md", type: "file" }]);
      if (path === "/repos/lemonade-sdk/recipes/contents/coding-agents") {
        return Response.json([{ name: "AgentRecipe.json", type: "file", download_url: `http://127.0.0.1:${github.port}/raw/AgentRecipe.json` }]);
      }
      if (path === "/raw/AgentRecipe.json") return Response.json(agentRecipe);
      return new Response("not found", { status: 404 });
    },
  });
  const extra = tempDir("lemonade-prompt-models-");
  copyFileSync(join(testModelsDir(), MODELS.chat), join(extra, MODELS.chat));
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, HF_ENDPOINT: hub.url });
  bin = tempDir("lemonade-prompt-agents-");
  record = join(bin, "record.txt");
  home = tempDir("lemonade-prompt-home-");
  // A downloaded tool-calling chat model, which launch offers among the downloaded ones.
  const pulled = await fetch(`${server.url}/v1/pull`, {
    method: "POST",
    body: JSON.stringify({ model_name: "user.Agentic", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp", labels: ["tool-calling"] }),
  });
  expect(pulled.status).toBe(200);
});

afterAll(async () => {
  await server.close();
  hub.stop();
  github.stop(true);
});

describe("launch", () => {
  test("--help lists the agents under Agents:; an agent's --help its flags, --provider for codex alone", async () => {
    const r = await piped(["launch", "--help"]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("\nAgents:\n");
    for (const agent of ["claude", "codex", "opencode", "pi"]) expect(r.out).toContain(`\n  ${agent.padEnd(10)} Launch ${agent} with a model\n`);
    // As Lemonade's: the flags are an agent's, so the command's own help names none.
    for (const flag of ["--model", "--directory", "--recipe-file", "--agent-args", "--provider", "--ctx-size"]) expect(r.out).not.toContain(flag);
    for (const agent of ["claude", "codex", "opencode", "pi"]) {
      const own = await piped(["launch", agent, "--help"]);
      expect(own.code).toBe(0);
      expect(own.out).toStartWith(`Usage: lemonade launch ${agent} [OPTIONS]`);
      for (const flag of ["-m, --model MODEL", "--directory DIR", "--recipe-file FILE", "--agent-args ARGS"]) expect(own.out).toContain(`\n  ${flag} `);
      for (const absent of ["--ctx-size", "--llamacpp"]) expect(own.out).not.toContain(absent);
      if (agent === "codex") expect(own.out).toContain("-p, --provider [PROVIDER]\n                       Use model provider name for Codex");
      else expect(own.out).not.toContain("--provider");
    }
  });

  test("without AGENT it asks for one by number; without --model it offers the coding-agent recipes, then the downloaded tool-calling models", async () => {
    fakeAgent("pi", true);
    const s = onTerminal(["launch"]);
    const agents = await s.until(/Enter number: $/);
    expect(agents).toContain("Select an agent to launch:\n  1) claude\n  2) codex\n  3) opencode\n  4) pi\nEnter number: ");
    s.type("4\r");
    // pi's recipes are the coding-agents directory's: listed at once, 0 browses the downloaded models.
    const recipes = await s.until(/Select a recipe to import and use with Pi:[\s\S]*Enter number: $/);
    expect(recipes).toContain("Selected agent: pi\n");
    expect(recipes).toContain("No model specified for 'launch'.\n");
    expect(recipes).toContain("  0) Browse downloaded models\n  1) AgentRecipe.json\n");
    s.type("0\r");
    const local = await s.until(/Browse downloaded tool-calling LLMs:[\s\S]*Enter number: $/);
    const line = local.split("\n").find((l) => l.includes("user.Agentic [downloaded] (llamacpp)") || l.includes("Agentic [downloaded] (llamacpp)"));
    expect(line, local).toBeDefined();
    // A chat model without tool-calling is not offered.
    expect(local).not.toContain("tiny-chat");
    expect(local).toContain("  0) Browse recommended models (download may be required)\n");
    s.type(`${line!.trim().split(")")[0]}\r`);
    await s.until(/Launching pi\.\.\.\n[\s\S]*ready\n$/);
    // The terminal is the agent's now: what is typed reaches it, none of it kept by launch.
    s.type("hello agent\r");
    expect(await s.exited).toBe(0);
    const id = line!.trim().split(" ")[1]!;
    expect(readFileSync(record, "utf8")).toContain(`ARGV --provider Lemonade --model ${id}`);
    expect(readFileSync(record, "utf8")).toContain("TYPED hello agent\n");
    // pi had no default provider: settings.json now names Lemonade's and the model.
    expect(JSON.parse(readFileSync(join(home, ".pi", "agent", "settings.json"), "utf8"))).toEqual({ defaultProvider: "Lemonade", defaultModel: id });
    expect(JSON.parse(readFileSync(join(home, ".pi", "agent", "models.json"), "utf8")).providers.Lemonade.baseUrl).toBe(`${server.url}/v1`);
  });

  test("--directory and --recipe-file import the recipe when the model is asked for, without asking", async () => {
    fakeAgent("claude");
    const s = onTerminal(["launch", "claude", "--directory", "coding-agents", "--recipe-file", "AgentRecipe.json"]);
    const out = await s.until(/Launching claude\.\.\./);
    expect(out).toContain("Using imported recipe model: user.AgentRecipe\n");
    expect(out).not.toContain("Enter number:");
    expect(await s.exited).toBe(0);
    expect(readFileSync(record, "utf8")).toContain("ANTHROPIC_DEFAULT_SONNET_MODEL=user.AgentRecipe\n");
    // Imported as Lemonade imports: registered under user., the unknown field dropped, downloaded.
    const imported = (await models()).find((m) => m.id === "AgentRecipe");
    expect(imported).toMatchObject({ downloaded: true, labels: expect.arrayContaining(["tool-calling"]) });
  });

  test("with the recipes repository out of reach it falls back to the downloaded models; 0 and back walk the menus", async () => {
    fakeAgent("codex");
    const s = onTerminal(["launch", "codex"], { LEMONADE_GITHUB_API_ENDPOINT: "http://127.0.0.1:9" });
    const out = await s.until(/Browse downloaded tool-calling LLMs:[\s\S]*Enter number: $/);
    expect(out).toContain("Warning: Failed to fetch remote launch recipe directories: ");
    expect(out).toContain("Falling back to downloaded model browser.\n");
    // Codex is warned off the Qwen 3.5 family.
    expect(out).toContain("Warning: Qwen 3.5 family models currently do not work with Codex");
    s.type("0\r");
    const hot = await s.until(/Browse recommended LLMs \(hot \+ tool-calling\):[\s\S]*Enter number: $/);
    expect(hot).toContain("  0) Back to downloaded models\n");
    expect(hot.slice(hot.indexOf("Browse recommended"))).not.toMatch(/Qwen3\.5/i);
    s.type("0\r");
    await s.until(/Browse downloaded tool-calling LLMs:[\s\S]*Browse downloaded tool-calling LLMs:[\s\S]*Enter number: $/);
    s.type("1\r");
    await s.until(/Launching codex\.\.\./);
    expect(await s.exited).toBe(0);
    expect(readFileSync(record, "utf8")).toMatch(/-m (user\.)?Agent/);
  });

  test("without a coding-agents directory it asks for the directory first", async () => {
    fakeAgent("claude");
    const other: ReturnType<typeof Bun.serve> = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req): Response {
        const path = new URL(req.url).pathname;
        if (path === "/repos/lemonade-sdk/recipes/contents") return Response.json([{ name: "general", type: "dir" }]);
        if (path === "/repos/lemonade-sdk/recipes/contents/general") return Response.json([{ name: "Other.json", type: "file", download_url: `http://127.0.0.1:${other.port}/raw/Other.json` }]);
        return new Response("not found", { status: 404 });
      },
    });
    try {
      const s = onTerminal(["launch", "claude"], { LEMONADE_GITHUB_API_ENDPOINT: `http://127.0.0.1:${other.port}` });
      await s.until(/Select a recipe directory to import and use with Claude:\n  0\) Browse downloaded models\n  1\) general\nEnter number: $/);
      s.type("1\r");
      await s.until(/Select a recipe from 'general' to import and use with Claude:\n  0\) Back to recipe directories\n  1\) Other\.json\nEnter number: $/);
      // Back to the directories, then on to the downloaded models, whose last entry leads back again.
      s.type("0\r");
      await s.until(/Other\.json[\s\S]*Select a recipe directory to import and use with Claude:[\s\S]*Enter number: $/);
      s.type("0\r");
      const local = await s.until(/Browse downloaded tool-calling LLMs:[\s\S]*Enter number: $/);
      expect(local).toMatch(/  \d\) Back to recipe directories\nEnter number: $/);
      s.type("1\r");
      await s.until(/Launching claude\.\.\./);
      expect(await s.exited).toBe(0);
      expect(readFileSync(record, "utf8")).toMatch(/ANTHROPIC_DEFAULT_SONNET_MODEL=(user\.)?Agent/);
    } finally {
      other.stop(true);
    }
  });

  test("a bad answer is refused as Lemonade words it, and nothing is launched", async () => {
    writeFileSync(record, "");
    for (const [keys, error] of [["9\r", "Selection out of range."], ["pi\r", "Invalid selection."], ["\x04", "Failed to read agent selection."]] as const) {
      const s = onTerminal(["launch", "--model", "extra.tiny-chat"]);
      await s.until(/Enter number: $/);
      s.type(keys);
      expect(await s.until(new RegExp(error.replace(/\./g, "\\.")))).toContain(`Error: ${error}`);
      expect(await s.exited).toBe(1);
    }
    // An agent that is not installed fails at once, before any question.
    const missing = onTerminal(["launch", "opencode"]);
    await missing.until(/Agent binary not found for opencode/);
    expect(await missing.exited).toBe(1);
    expect(missing.text()).toContain("npm i -g opencode-ai");
    expect(missing.text()).not.toContain("Enter number:");
    expect(readFileSync(record, "utf8")).toBe("");
  });

  test("off a terminal the agent is read from what is piped, as Lemonade's CLI reads it; and so is the model", async () => {
    fakeAgent("claude");
    writeFileSync(record, "");
    const piped1 = await piped(["launch", "--model", "extra.tiny-chat"], "1\n");
    expect(piped1.code, piped1.err).toBe(0);
    expect(piped1.out).toStartWith("Select an agent to launch:\n  1) claude\n  2) codex\n  3) opencode\n  4) pi\nEnter number: Selected agent: claude\n");
    expect(readFileSync(record, "utf8")).toContain("ANTHROPIC_DEFAULT_SONNET_MODEL=extra.tiny-chat\n");
    writeFileSync(record, "");
    // Nothing piped: refused at once.
    const noAgent = await piped(["launch", "--model", "extra.tiny-chat"], "");
    expect(noAgent.code).toBe(1);
    expect(noAgent.err).toContain("Error: Failed to read agent selection.");
    // --provider is refused before the agent is asked for.
    const provider = await piped(["launch", "--provider", "mine"], "2\n");
    expect(provider.code).toBe(1);
    expect(provider.err).toBe("Error: --provider is only supported for 'lemonade launch codex'.\n");
    expect(provider.out).toBe("");
    // No --model: the model menus read the pipe too; input that has ended is refused at once.
    const noModel = await piped(["launch", "claude"]);
    expect(noModel.code).toBe(1);
    expect(noModel.err).toContain("Error: Failed to read selection.");
    expect(readFileSync(record, "utf8")).toBe("");
    // 0: past the coding-agents recipes to the downloaded tool-calling models; 1: the first of them.
    const pipedModel = await piped(["launch", "claude"], "0\n1\n");
    expect(pipedModel.code, pipedModel.err).toBe(0);
    expect(pipedModel.out).toContain("Browse downloaded tool-calling LLMs:\n  0) Browse recommended models (download may be required)\n  1) Agentic [downloaded]");
    expect(readFileSync(record, "utf8")).toContain("ANTHROPIC_DEFAULT_SONNET_MODEL=Agentic\n");
    writeFileSync(record, "");
    // With both named it runs as before, saying so.
    const named = await piped(["launch", "claude", "--model", "extra.tiny-chat"]);
    expect(named.code, named.err).toBe(0);
    expect(named.out).toContain("Model was provided explicitly; skipping recipe import prompts.\n");
  });
});

describe("run", () => {
  test("without MODEL it offers the hot models; 0 takes any name typed", async () => {
    const s = onTerminal(["run", "--chat-cli", "--max-tokens", "2"]);
    const menu = await s.until(/Select a hot model to run:[\s\S]*Enter number: $/);
    expect(menu).toContain("No model specified for 'run'.\n");
    expect(menu).toContain("  0) Type the name of any model\n");
    expect(menu).toMatch(/  1\) \S+ \[(downloaded|not-downloaded)\] \(\S+\)\n/);
    s.type("0\r");
    await s.until(/Type model name: $/);
    s.type("extra.tiny-chat\r");
    await s.until(/Selected model: extra\.tiny-chat\n[\s\S]*>>> /);
    s.type("/bye\r");
    expect(await s.exited).toBe(0);
  });

  test("off a terminal the model is read from what is piped, as Lemonade's CLI reads it, and the chat takes the lines after it", async () => {
    const r = await piped(["run", "--chat-cli", "--max-tokens", "2"], "0\nextra.tiny-chat\n/clear\n");
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain("Select a hot model to run:\n  0) Type the name of any model\n");
    expect(r.out).toContain("Type model name: Selected model: extra.tiny-chat\n");
    expect(r.err).toContain("Cleared the conversation.");
    // Nothing piped: refused at once, in Lemonade's words.
    const none = await piped(["run"]);
    expect(none.code).toBe(1);
    expect(none.err).toContain("Error: Failed to read selection.");
  });
});

describe("chat", () => {
  test("with no model named or loaded it asks for one of the downloaded models", async () => {
    expect((await fetch(`${server.url}/v1/unload`, { method: "POST", body: "{}" })).status).toBe(200);
    const s = onTerminal(["chat", "--max-tokens", "2"]);
    const menu = await s.until(/Select a model:[\s\S]*Enter number: $/);
    expect(menu).toContain("No model specified for 'chat'.\n");
    const line = menu.split("\n").find((l) => l.includes("tiny-chat [downloaded]"));
    expect(line, menu).toBeDefined();
    // Only downloaded models are listed while there are some.
    expect(menu).not.toContain("[not-downloaded]");
    s.type(`${line!.trim().split(")")[0]}\r`);
    // The menu offers the listed id: the extra model's bare name.
    await s.until(/Selected model: tiny-chat\n[\s\S]*>>> $/);
    s.type("/bye\r");
    expect(await s.exited).toBe(0);
    const health = await (await fetch(`${server.url}/v1/health`)).json();
    expect(health.all_models_loaded.map((m: { model_name: string }) => m.model_name)).toContain("tiny-chat");
  });

  test("off a terminal, with none loaded, the model is read from what is piped, and the chat takes the lines after it", async () => {
    expect((await fetch(`${server.url}/v1/unload`, { method: "POST", body: "{}" })).status).toBe(200);
    // The menu lists the downloaded models as /v1/models lists them.
    const n = (await models(false)).findIndex((m) => m.id === "tiny-chat") + 1;
    const r = await piped(["chat", "--max-tokens", "2"], `${n}\n/clear\n`);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`  ${n}) tiny-chat [downloaded] (llamacpp)\n`);
    expect(r.out).toContain("Enter number: Selected model: tiny-chat\n");
    expect(r.err).toContain("Cleared the conversation.");
  });
});

describe("import", () => {
  test("without JSON_FILE it asks for the directory and the recipe; 0 skips", async () => {
    const skipped = onTerminal(["import"]);
    await skipped.until(/Select a recipe directory:\n  0\) Continue without recipe import\n  1\) coding-agents\nEnter number: $/);
    skipped.type("0\r");
    await skipped.until(/Skipping recipe import\./);
    expect(await skipped.exited).toBe(0);

    await fetch(`${server.url}/v1/delete`, { method: "POST", body: JSON.stringify({ model_name: "user.AgentRecipe" }) });
    const s = onTerminal(["import"]);
    await s.until(/Enter number: $/);
    s.type("1\r");
    await s.until(/Select a recipe to import:\n  0\) Continue without recipe import\n  1\) AgentRecipe\.json\nEnter number: $/);
    s.type("1\r");
    await s.until(/Imported user\.AgentRecipe/);
    expect(await s.exited).toBe(0);
    expect((await models(false)).some((m) => m.id === "AgentRecipe")).toBe(true);
  });

  test("off a terminal it runs as --skip-prompt: --directory and --recipe-file are needed, and suffice", async () => {
    const r = await piped(["import"], "1\n1\n");
    expect(r.code).toBe(1);
    expect(r.err).toContain("Error: Non-interactive mode requires --directory (standard input is not a terminal to choose on)");
    const noFile = await piped(["import", "--skip-prompt", "--directory", "coding-agents"]);
    expect(noFile.code).toBe(1);
    expect(noFile.err).toContain("Error: Non-interactive mode requires --recipe-file.");
    const both = await piped(["import", "--directory", "coding-agents", "--recipe-file", "AgentRecipe.json"]);
    expect(both.code, both.err).toBe(0);
    expect(both.out).toContain("Imported user.AgentRecipe");
  });
});

describe("pull", () => {
  test("owner/repo without a variant: Lemonade's variant menu and name prompt on a terminal, the recommended one when piped", async () => {
    const s = onTerminal(["pull", "test-org/tiny-GGUF"]);
    const menu = await s.until(/Select a variant:\n[\s\S]*Enter number, or type any variant name: $/);
    const q8 = menu.split("\n").find((l) => /^  \d\) Q8_0  \(1 file, [\d.]+ [kMG]?B\)$/.test(l));
    expect(q8, menu).toBeDefined();
    expect(menu).toMatch(/\n  \d\) Q4_0  \(1 file, /);
    s.type(`${q8!.trim().split(")")[0]}\r`);
    await s.until(/Choose a model name\.\nPress enter to use the default: tiny-Q8_0\nOr type a custom name and press enter\.\n> $/);
    s.type("\r");
    await s.until(/Installed user\.tiny-Q8_0/);
    expect(await s.exited).toBe(0);
    // A variant's name may be typed instead of its number, and another model name given.
    const named = onTerminal(["pull", "test-org/tiny-GGUF"]);
    await named.until(/type any variant name: $/);
    named.type("Q4_0\r");
    await named.until(/default: tiny-Q4_0\n[\s\S]*> $/);
    named.type("MyTiny\r");
    await named.until(/Installed user\.MyTiny/);
    expect(await named.exited).toBe(0);
    expect((await models(false)).some((m) => m.id === "MyTiny")).toBe(true);
    const empty = onTerminal(["pull", "test-org/tiny-GGUF"]);
    await empty.until(/type any variant name: $/);
    empty.type("\r");
    await empty.until(/Error: variant is required\./);
    expect(await empty.exited).toBe(1);

    // The variants are the server's, in its order (its picks first).
    const ranked = onTerminal(["pull", "test-org/many-GGUF"]);
    const menu7 = await ranked.until(/type any variant name: $/);
    expect(menu7).toContain("Select a variant:\n  1) Q4_K_M  (1 file, ");
    ranked.type("1\r");
    await ranked.until(/default: many-Q4_K_M\n[\s\S]*> $/);
    ranked.type("\r");
    await ranked.until(/Installed user\.many-Q4_K_M/);
    expect(await ranked.exited).toBe(0);

    const r = await piped(["pull", "test-org/tiny-GGUF"], "2\n");
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain("Pulling the recommended variant Q4_0");
    expect(r.out).toContain("Installed user.tiny-Q4_0");
  });

  test("--recipe collection.omni without --components names the flag it needs", async () => {
    const r = await piped(["pull", "user.NoParts", "--recipe", "collection.omni"]);
    expect(r.code).toBe(1);
    expect(r.err).toBe("Error: omni pull requires --components MODEL [MODEL ...].\n       See 'lemonade pull --help'.\n");
    expect((await models()).some((m) => m.id === "user.NoParts")).toBe(false);
  });

  test("--recipe, --label or --components without --checkpoint is refused before anything is sent", async () => {
    // Lemonade takes any of these flags as a manual registration; only an omni collection goes without checkpoints.
    for (const args of [["--recipe", "collection.router"], ["--recipe", "llamacpp"], ["--label", "vision"], ["--components", "Agentic"]]) {
      const r = await piped(["pull", "user.NoCheckpoint", ...args]);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.err).toBe("Error: manual pull requires at least one --checkpoint TYPE CHECKPOINT.\n       See 'lemonade pull --help'.\n");
    }
    expect((await models()).some((m) => m.id === "user.NoCheckpoint")).toBe(false);
  });
});

describe("cloud auth", () => {
  test("without --api-key it asks for the key with the echo off on a terminal; off one it needs the flag or a piped key", async () => {
    const installed = await piped(["cloud", "install", "self", `${server.url}/v1`, "--allow-insecure-http"]);
    expect(installed.code, installed.err).toBe(0);
    const s = onTerminal(["cloud", "auth", "self", "--allow-insecure-http"]);
    await s.until(/API key for self \(input hidden\): $/);
    s.type("sk-typed-secret\r");
    const out = await s.until(/Key set for self/);
    expect(out).not.toContain("sk-typed-secret");
    expect(await s.exited).toBe(0);
    const info = await (await fetch(`${server.url}/v1/system-info`)).json();
    expect(info.cloud.providers.find((p: { name: string }) => p.name === "self")).toMatchObject({ runtime_key_set: true });

    const empty = onTerminal(["cloud", "auth", "self"]);
    await empty.until(/input hidden\): $/);
    empty.type("\r");
    await empty.until(/Error: empty API key/);
    expect(await empty.exited).toBe(1);

    const none = await piped(["cloud", "auth", "self"]);
    expect(none.code).toBe(2);
    expect(none.err).toContain("--api-key is required when stdin is not a TTY");
    const pipedKey = await piped(["cloud", "auth", "self", "--allow-insecure-http"], "sk-piped\n");
    expect(pipedKey.code, pipedKey.err).toBe(0);
    expect(existsSync(join(server.cacheDir, "config.json")) ? readFileSync(join(server.cacheDir, "config.json"), "utf8") : "").not.toContain("sk-");
    expect((await piped(["cloud", "uninstall", "self"])).code).toBe(0);
  });
});
