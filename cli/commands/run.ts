// `run`: load a model and chat with it in the terminal; `bench`: measure it.
import { createInterface } from "node:readline";
import { Client, CliError, ensureServer, errorMessage, target } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { bold, dim, sseEvents } from "../format.ts";
import { pullWithProgress } from "./models.ts";

const clientOf = (input: CommandInput) => new Client(target(input.values as { host?: string; port?: string }));

/** Streams one chat turn to stdout; returns the assistant's text. */
async function streamTurn(client: Client, model: string, messages: { role: string; content: string }[], maxTokens?: number): Promise<string> {
  const res = await client.request("POST", "/v1/chat/completions", { model, messages, stream: true, ...(maxTokens ? { max_tokens: maxTokens } : {}) });
  if (!res.ok) throw new CliError(errorMessage(await res.json().catch(() => ({})), `chat failed: HTTP ${res.status}`));
  let text = "";
  for await (const { data } of sseEvents(res.body!)) {
    if (data === "[DONE]") break;
    if (data.error) throw new CliError(`the model stopped: ${data.error.message}`);
    const delta = data.choices?.[0]?.delta?.content;
    if (delta) {
      text += delta;
      process.stdout.write(delta);
    }
  }
  process.stdout.write("\n");
  return text;
}

export const run: Command = {
  name: "run",
  summary: "Load a model and chat with it in the terminal",
  usage: "run <model> [--max-tokens N]",
  help: `Starts the server if none is running, loads the model (downloading it if needed) and opens a
chat. Type a message and press Enter; the reply streams back. Leave with /bye or Ctrl-D.
  --max-tokens N   Cap each reply
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, "max-tokens": { type: "string" } },
  async run(input) {
    const [model, ...extra] = input.positionals;
    if (!model || extra.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const maxTokens = input.values["max-tokens"] !== undefined ? Number(input.values["max-tokens"]) : undefined;
    if (maxTokens !== undefined && !(Number.isInteger(maxTokens) && maxTokens > 0)) throw new CliError("--max-tokens must be a positive whole number", 2);
    const client = clientOf(input);
    await ensureServer(client);
    // Download first with a progress bar, rather than a silent wait inside the load.
    const info = await client.json("GET", `/v1/models/${encodeURIComponent(model)}`);
    if (!info.downloaded) await pullWithProgress(client, { model_name: model });
    process.stderr.write(dim(`Loading ${model}...\n`));
    await client.json("POST", "/v1/load", { model_name: model });
    const tty = process.stdin.isTTY === true;
    if (tty) process.stderr.write(dim(`Chatting with ${model}. Type /bye or press Ctrl-D to leave.\n`));
    const history: { role: string; content: string }[] = [];
    const rl = createInterface({ input: process.stdin, terminal: tty });
    const prompt = () => tty && process.stdout.write(bold(">>> "));
    prompt();
    for await (const line of rl) {
      const text = line.trim();
      if (text === "/bye") break;
      if (!text) {
        prompt();
        continue;
      }
      history.push({ role: "user", content: text });
      history.push({ role: "assistant", content: await streamTurn(client, model, history, maxTokens) });
      prompt();
    }
    rl.close();
    return 0;
  },
};

export const bench: Command = {
  name: "bench",
  summary: "Measure a model: time to first token, tokens/s, prompt tokens/s",
  usage: "bench <model> [--runs N] [--tokens N]",
  help: `Loads the model and runs a few fixed requests, reporting the engine's own timings (medians).
  --runs N     Requests to run (default 3)
  --tokens N   Tokens to generate per request (default 64)
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, runs: { type: "string" }, tokens: { type: "string" } },
  async run(input) {
    const [model, ...extra] = input.positionals;
    if (!model || extra.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const runs = Number(input.values.runs ?? 3);
    const tokens = Number(input.values.tokens ?? 64);
    if (!(Number.isInteger(runs) && runs > 0 && Number.isInteger(tokens) && tokens > 0)) throw new CliError("--runs and --tokens must be positive whole numbers", 2);
    const client = clientOf(input);
    await ensureServer(client);
    await client.json("POST", "/v1/load", { model_name: model });
    const ttft: number[] = [];
    const tps: number[] = [];
    const pps: number[] = [];
    for (let i = 0; i < runs; i++) {
      const res = await client.json("POST", "/v1/chat/completions", {
        model,
        messages: [{ role: "user", content: `Benchmark run ${i}: write a long story about a lemon.` }],
        max_tokens: tokens,
        ignore_eos: true,
        cache_prompt: false,
      });
      const t = res.timings;
      if (!t) throw new CliError(`${model}'s engine reports no timings`);
      ttft.push(t.prompt_ms);
      tps.push(t.predicted_per_second);
      pps.push(t.prompt_per_second);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(`${model}: ${runs} runs of ${tokens} tokens (medians)`);
    console.log(`  time to first token  ${median(ttft).toFixed(1)} ms`);
    console.log(`  generation           ${median(tps).toFixed(1)} tokens/s`);
    console.log(`  prompt processing    ${median(pps).toFixed(1)} tokens/s`);
    return 0;
  },
};
