// `run`: load a model (downloading it first) and open its chat; `bench`: measure models.
import { readFileSync, writeFileSync } from "node:fs";
import { kvRestoreFigures, median, servingRates, streamFigures, swapFigures, table as figureTable, type Figure, type Server } from "../../lib/bench.ts";
import { apiKey, Client, CliError, ensureServer, target } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { dim, table } from "../format.ts";
import { LOAD_FLAGS, LOAD_FLAGS_HELP, loadOptionsFrom } from "../load-flags.ts";
import { chatLoop, maxTokensFrom } from "./chat.ts";
import { loadWithPhases, pullWithProgress } from "./models.ts";
import { measureLoaded, type BenchRun } from "../bench-runs.ts";
import { contribution, submission, type Contribution } from "../contribution.ts";
import { askLine, chooseOne } from "../prompt.ts";

const clientOf = (input: CommandInput) => new Client(target(input.values as { host?: string; port?: string }));

/** Downloads (with the bar) what is missing, then loads with the given options. */
export async function pullAndLoad(client: Client, model: string, options: Record<string, unknown> = {}): Promise<void> {
  const info = await client.json("GET", `/v1/models/${encodeURIComponent(model)}`);
  if (!info.downloaded) await pullWithProgress(client, { model_name: model });
  await loadWithPhases(client, { model_name: model, ...options }, (line) => process.stderr.write(dim(`${line}\n`)));
}

/** Opens a URL in the desktop's browser; false when there is none to open it. */
export async function openBrowser(url: string): Promise<boolean> {
  const argv = process.platform === "darwin" ? ["open", url] : process.platform === "win32" ? ["cmd", "/c", "start", "", url] : ["xdg-open", url];
  if (!Bun.which(argv[0]!)) return false;
  try {
    const child = Bun.spawn(argv, { stdio: ["ignore", "ignore", "ignore"] });
    return (await child.exited) === 0;
  } catch {
    return false;
  }
}

/** `run` without a model: one of the catalog's hot models, or any model by name. */
async function pickHotModel(client: Client): Promise<string> {
  console.log("No model specified for 'run'.");
  const all = (await client.json("GET", "/v1/models?show_all=true")).data as { id: string; recipe?: string; labels?: string[]; downloaded?: boolean }[];
  const hot = all.filter((m) => m.labels?.includes("hot")).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (!hot.length) throw new CliError("No hot models available. Try 'lemonade list' or 'lemonade pull <MODEL>'.");
  const rows = hot.map((m) => `${m.id} [${m.downloaded ? "downloaded" : "not-downloaded"}] (${m.recipe || "-"})`);
  const picked = await chooseOne("Select a hot model to run:", rows, "Type the name of any model");
  let model: string;
  if (picked >= 0) model = hot[picked]!.id;
  else {
    const typed = await askLine("Type model name: ");
    if (typed === null) throw new CliError("Failed to read model name.");
    if (!typed) throw new CliError("Model name cannot be empty.");
    model = typed;
  }
  console.log(`Selected model: ${model}`);
  return model;
}

export const run: Command = {
  name: "run",
  summary: "Load a model and chat with it (in the web app, or the terminal with --chat-cli)",
  usage: "run [MODEL] [--chat-cli] [--max-tokens N] [load options]",
  help: `Starts the server if none is running, loads the model (downloading it first, with progress;
without MODEL, asks for one of the catalog's hot models, or any by name) and
opens its chat in the web app in your browser, printing the address when no browser can be opened. Where the server has no web app, or with --chat-cli, the chat runs in the terminal:
type a message and press Enter; /bye or Ctrl-D leaves (see lemonade chat --help).
  --chat-cli       Chat in the terminal
  --max-tokens N   Cap each reply (terminal chat)
${LOAD_FLAGS_HELP}
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, ...LOAD_FLAGS, "chat-cli": { type: "boolean" }, "max-tokens": { type: "string" } },
  async run(input) {
    const [given, ...extra] = input.positionals;
    if (extra.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const maxTokens = maxTokensFrom(input.values["max-tokens"]);
    const client = clientOf(input);
    await ensureServer(client);
    const model = given ?? (await pickHotModel(client));
    await pullAndLoad(client, model, loadOptionsFrom(input.values));
    if (!input.values["chat-cli"]) {
      const page = await client.request("GET", "/");
      await page.body?.cancel();
      if (page.ok && page.headers.get("content-type")?.includes("text/html")) {
        const url = `${client.base}/?model=${encodeURIComponent(model)}#chat`;
        if (await openBrowser(url)) console.log(`Opened ${url}`);
        else console.log(`Open ${url} in your browser to chat with ${model}.`);
        return 0;
      }
    }
    return chatLoop(client, model, { stream: true, maxTokens });
  },
};

const positiveInt = (raw: unknown, flag: string, fallback: number, min = 1) => {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!(Number.isInteger(n) && n >= min)) throw new CliError(`--${flag} must be a whole number from ${min}, got ${raw}`, 2);
  return n;
};

/** `bench --server` / `--base-url`: the tables `bun run bench` prints that a running server can
 * give (lib/bench.ts measures both): request rates, a model's stream, swaps and the KV restore. */
async function serverTables(input: CommandInput, runs: number): Promise<number> {
  const v = input.values;
  let base = v["base-url"] === undefined ? undefined : String(v["base-url"]).replace(/\/+$/, "");
  if (!base) {
    const client = clientOf(input);
    await ensureServer(client);
    base = client.base;
  }
  const key = apiKey();
  const server: Server = { base, ...(key ? { headers: { authorization: `Bearer ${key}` } } : {}) };
  const seconds = positiveInt(v.seconds, "seconds", 1);
  const [model] = input.positionals;
  const swapWith = v["swap-model"] === undefined ? undefined : String(v["swap-model"]);
  const sections: [string, () => Promise<Figure[]>][] = [[`request rates, ${seconds} s each, 8 keep-alive clients`, () => servingRates(server, seconds)]];
  if (model) sections.push([`streams of ${model}, ${runs} runs`, () => streamFigures(server, model, runs)]);
  if (model && swapWith) {
    sections.push([`swaps between ${model} and ${swapWith}, ${runs} runs (the server must hold one at a time)`, () => swapFigures(server, model, swapWith, runs)]);
    sections.push([`KV cache across a swap, ${runs} conversations of each kind`, () => kvRestoreFigures(server, model, swapWith, runs)]);
  }
  console.log(`lemonade bench against ${base}`);
  for (const [title, measure] of sections) console.log(figureTable(title, await measure()));
  return 0;
}

export const bench: Command = {
  name: "bench",
  summary: "Measure models (time to first token, tokens/s, peak memory) or a server (rates, streams, swaps)",
  usage: "bench MODEL... [--runs N] [--warmup N] [--tokens N] [--backend B]... [--ctx-size N...] [--llamacpp-args A]... [--json] [--output FILE] [--compare FILE] [--submit FILE] [--auto-pull]\n       lemonade bench --server|--base-url URL [MODEL] [--swap-model MODEL] [--runs N] [--seconds N]",
  help: `Loads each model (each named once) and runs fixed requests, reporting the engine's own
timings per run.
With --server (the running server) or --base-url (any server: this one, Lemonade's own, or any
OpenAI-compatible URL), prints the tables \`bun run bench\` prints, measured from the client's side
with the same code: /v1/models and /v1/health req/s over /live's; with MODEL, a 32-token stream's
time to first token and to headers; with --swap-model too, requests that swap the two models and
a 3,000-token conversation's next turn after a swap with its KV cache restored, over the same
turn never evicted (goal <= 1.3) and over a full prefill.
  --server          Measure the running server (started when none answers)
  --base-url URL    Measure the server at URL instead
  --swap-model M    A second model, for the swap and KV cache tables
  --seconds N       Seconds per request-rate figure (default 1)
  --runs N         Measured requests per model (default 3)
  --warmup N       Unmeasured requests first (default 0)
  --auto-pull      Pull the models not downloaded first (else the run stops before it starts)
  --tokens N       Tokens to generate per request (default 64)
  --backend B      llama.cpp backend to load with (llamacpp_backend); repeat for several
  --ctx-size N...  Context size to load with; several (--ctx-size 4096 8192, or repeated)
  --llamacpp-args A  llama-server args to load with; repeat for several
                   Each combination of these is a load of its own, measured apart
  --json           Print the runs as JSON
  --output FILE    Also write the runs as JSON to FILE
  --compare FILE   Show each median beside the one in FILE (an earlier --output)
  --submit FILE    Also write an anonymised benchmark contribution for the tuning profiles
                   (archetype, model, backend, parameters, tok/s, TTFT, memory) to FILE
${SERVER_FLAGS_HELP}`,
  options: {
    ...SERVER_FLAGS,
    runs: { type: "string" },
    warmup: { type: "string" },
    tokens: { type: "string" },
    backend: { type: "string", multiple: true },
    "ctx-size": { type: "string", multiple: true },
    "llamacpp-args": { type: "string", multiple: true },
    json: { type: "boolean" },
    output: { type: "string" },
    compare: { type: "string" },
    submit: { type: "string" },
    "auto-pull": { type: "boolean" },
    server: { type: "boolean" },
    "base-url": { type: "string" },
    "swap-model": { type: "string" },
    seconds: { type: "string" },
  },
  // `--ctx-size 4096 8192`: the numbers after it are each a value of it.
  rewrite(args) {
    const out: string[] = [];
    for (let i = 0; i < args.length; i++) {
      out.push(args[i]!);
      if (args[i] !== "--ctx-size") continue;
      if (args[i + 1] !== undefined) out.push(args[++i]!);
      while (/^-?\d+$/.test(args[i + 1] ?? "")) out.push("--ctx-size", args[++i]!);
    }
    return out;
  },
  async run(input) {
    // Each model once, in the order first named.
    const models = [...new Set(input.positionals)];
    const v = input.values;
    const runs = positiveInt(v.runs, "runs", 3);
    if (v.server || v["base-url"] !== undefined) return serverTables(input, runs);
    if (!models.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const warmup = positiveInt(v.warmup, "warmup", 0, 0);
    const tokens = positiveInt(v.tokens, "tokens", 64);
    // Every --backend with every --ctx-size and every --llamacpp-args: one load (and its runs) each.
    const list = (key: string) => (v[key] as string[] | undefined) ?? [];
    const each = <T,>(values: T[]) => (values.length ? values : [undefined]);
    const configs = each(list("backend")).flatMap((backend) =>
      each(list("ctx-size").map((c) => positiveInt(c, "ctx-size", 0, -1))).flatMap((ctx_size) =>
        each(list("llamacpp-args")).map((llamacpp_args) => ({ ...(backend !== undefined ? { backend } : {}), ...(ctx_size !== undefined ? { ctx_size } : {}), ...(llamacpp_args !== undefined ? { llamacpp_args } : {}) })),
      ),
    );
    const sameConfig = (a: BenchRun, b: BenchRun) => a.model === b.model && a.backend === b.backend && a.ctx_size === b.ctx_size && a.llamacpp_args === b.llamacpp_args;
    let baseline: BenchRun[] | undefined;
    if (v.compare) {
      try {
        baseline = JSON.parse(readFileSync(String(v.compare), "utf8")).runs;
      } catch (err) {
        throw new CliError(`--compare ${v.compare} is not an earlier --output file: ${(err as Error).message}`);
      }
    }
    const submit = v.submit === undefined ? undefined : String(v.submit);
    const client = clientOf(input);
    await ensureServer(client);
    // Every model is checked before any is measured: a missing one stops the run before it starts.
    const missing: string[] = [];
    for (const model of models) {
      const res = await client.request("GET", `/v1/models/${encodeURIComponent(model)}`);
      const info = res.ok ? await res.json() : undefined;
      if (!res.ok) await res.body?.cancel();
      if (!info?.downloaded) missing.push(`${model} (${info ? "not downloaded" : "not registered"})`);
    }
    if (missing.length && !v["auto-pull"]) throw new CliError(`Not available: ${missing.join(", ")}. Pull with: lemonade pull MODEL, or pass --auto-pull`);
    const all: BenchRun[] = [];
    const contributions: Contribution[] = [];
    for (const model of models) {
      for (const config of configs) {
        // A model loaded already keeps its options: it is loaded again with these.
        if (Object.keys(config).length) await (await client.request("POST", "/v1/unload", { model_name: model })).body?.cancel();
        const { backend, ...rest } = config;
        await pullAndLoad(client, model, { ...rest, ...(backend !== undefined ? { llamacpp_backend: backend } : {}) });
        const measured = (await measureLoaded(client, model, { runs, warmup, tokens })).map((r) => ({ ...r, ...config }));
        all.push(...measured);
        if (submit) contributions.push(await contribution(client, model, measured, tokens));
      }
    }
    const report = { tokens, runs: all };
    if (v.output) writeFileSync(String(v.output), JSON.stringify(report, null, 2) + "\n");
    if (submit) {
      writeFileSync(submit, JSON.stringify(await submission(client, contributions), null, 2) + "\n");
      console.error(dim(`Wrote the benchmark contribution to ${submit}`));
    }
    if (v.json) {
      console.log(JSON.stringify(report, null, 2));
      return 0;
    }
    const f = (n: number | null) => (n === null ? "" : n.toFixed(1));
    // A model's name, with the load options it was measured under.
    const label = (r: BenchRun) => {
      const given = [r.backend, r.ctx_size !== undefined ? `ctx=${r.ctx_size}` : undefined, r.llamacpp_args !== undefined ? `args=${r.llamacpp_args}` : undefined].filter((x) => x !== undefined);
      return given.length ? `${r.model} (${given.join(", ")})` : r.model;
    };
    console.log(
      table(
        ["MODEL", "RUN", "TTFT MS", "PROMPT TOK/S", "GEN TOK/S", "PEAK MB"],
        all.map((r) => [label(r), String(r.run), f(r.ttft_ms), f(r.prompt_tokens_per_second), f(r.generation_tokens_per_second), r.peak_memory_mb === null ? "" : String(r.peak_memory_mb)]),
      ),
    );
    for (const first of all.filter((r) => r.run === 1)) {
      const mine = all.filter((r) => sameConfig(r, first));
      const theirs = baseline?.filter((r) => sameConfig(r, first)) ?? [];
      const line = (key: "ttft_ms" | "generation_tokens_per_second") => {
        const now = median(mine.map((r) => r[key]));
        const before = theirs.length ? median(theirs.map((r) => r[key])) : undefined;
        return `${now.toFixed(1)}${before !== undefined ? ` (was ${before.toFixed(1)}, ${(now / before).toFixed(2)}x)` : ""}`;
      };
      console.log(`${label(first)}: median TTFT ${line("ttft_ms")} ms, generation ${line("generation_tokens_per_second")} tokens/s`);
    }
    return 0;
  },
};
