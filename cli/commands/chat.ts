// `chat`: the terminal chat. Multi-line input (`"""` ... `"""`, or a line ending in `\`),
// `/bye`, `/clear`, `/model NAME`; Ctrl-C stops a reply and keeps the chat.
import { Client, CliError, ensureServer, errorMessage, target } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command, type CommandInput } from "../command.ts";
import { bold, dim, sseEvents } from "../format.ts";
import { chooseOne, endQuestions, remainingLines } from "../prompt.ts";

type Message = { role: string; content: string };

export interface ChatOptions {
  system?: string;
  stream: boolean;
  maxTokens?: number;
}

/** One turn: the reply streamed to stdout (or printed whole); an aborted turn returns what came. */
async function turn(client: Client, model: string, messages: Message[], opts: ChatOptions, signal: AbortSignal): Promise<string> {
  const body = { model, messages, stream: opts.stream, ...(opts.maxTokens ? { max_tokens: opts.maxTokens } : {}) };
  let res: Response;
  try {
    res = await client.request("POST", "/v1/chat/completions", body, signal);
  } catch (err) {
    if (signal.aborted) return "";
    throw err;
  }
  if (!res.ok) throw new CliError(errorMessage(await res.json().catch(() => ({})), `chat failed: HTTP ${res.status}`));
  let text = "";
  try {
    if (!opts.stream) {
      text = (await res.json()).choices?.[0]?.message?.content ?? "";
      process.stdout.write(text);
    } else {
      for await (const { data } of sseEvents(res.body!)) {
        if (data === "[DONE]") break;
        if (data.error) throw new CliError(`the model stopped: ${data.error.message}. Send the message again, or /model another one.`);
        const delta = data.choices?.[0]?.delta?.content;
        if (delta) {
          text += delta;
          process.stdout.write(delta);
        }
      }
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  }
  process.stdout.write("\n");
  return text;
}

/** The chat loop on standard input until `/bye` or end of input. */
export async function chatLoop(client: Client, firstModel: string, opts: ChatOptions): Promise<number> {
  let model = firstModel;
  const tty = process.stdin.isTTY === true;
  const fresh = (): Message[] => (opts.system ? [{ role: "system", content: opts.system }] : []);
  let history = fresh();
  if (tty) process.stderr.write(dim(`Chatting with ${model}. Type /bye or press Ctrl-D to leave, /help for more.\n`));
  let reply: AbortController | null = null;
  // On a terminal, a line editor of its own; piped, the lines after any answers to the questions.
  let rl: import("node:readline").Interface | undefined;
  if (tty) {
    endQuestions();
    rl = (await import("node:readline")).createInterface({ input: process.stdin, terminal: true });
    rl.on("SIGINT", () => {
      if (reply) reply.abort();
      else process.stdout.write(dim("\n(Ctrl-C stops a reply; leave with /bye or Ctrl-D)\n") + bold(">>> "));
    });
  }
  const prompt = (more = false) => tty && process.stdout.write(bold(more ? "... " : ">>> "));
  let pending: { block: boolean; lines: string[] } | null = null;
  prompt();
  for await (const raw of rl ?? remainingLines()) {
    // A """ block, or lines ending in a backslash, make one message.
    let text: string;
    if (pending?.block) {
      if (!raw.trimEnd().endsWith('"""')) {
        pending.lines.push(raw);
        prompt(true);
        continue;
      }
      pending.lines.push(raw.trimEnd().slice(0, -3));
      text = pending.lines.join("\n");
    } else if (pending || raw.endsWith("\\")) {
      pending ??= { block: false, lines: [] };
      if (raw.endsWith("\\")) {
        pending.lines.push(raw.slice(0, -1));
        prompt(true);
        continue;
      }
      pending.lines.push(raw);
      text = pending.lines.join("\n");
    } else if (raw.trimStart().startsWith('"""')) {
      const after = raw.trimStart().slice(3);
      if (!after.trimEnd().endsWith('"""')) {
        pending = { block: true, lines: after ? [after] : [] };
        prompt(true);
        continue;
      }
      text = after.trimEnd().slice(0, -3);
    } else text = raw;
    pending = null;
    text = text.trim();
    if (text === "/bye") break;
    if (text === "/clear") {
      history = fresh();
      process.stderr.write(dim("Cleared the conversation.\n"));
    } else if (text === "/help") {
      process.stderr.write(dim('/bye leave · /clear forget the conversation · /model NAME switch models · """ starts and ends a multi-line message · Ctrl-C stops a reply\n'));
    } else if (text.startsWith("/model")) {
      const next = text.slice("/model".length).trim();
      if (!next) process.stderr.write(dim(`Chatting with ${model}. Switch with /model NAME.\n`));
      else {
        try {
          await client.json("POST", "/v1/load", { model_name: next });
          model = next;
          process.stderr.write(dim(`Now chatting with ${model}.\n`));
        } catch (err) {
          process.stderr.write(`Error: ${(err as Error).message}\n`);
        }
      }
    } else if (text) {
      history.push({ role: "user", content: text });
      reply = new AbortController();
      const answer = await turn(client, model, history, opts, reply.signal);
      if (reply.signal.aborted) process.stderr.write(dim("(stopped)\n"));
      reply = null;
      history.push({ role: "assistant", content: answer });
    }
    prompt();
  }
  rl?.close();
  return 0;
}

/** The --max-tokens flag, checked. */
export function maxTokensFrom(raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!(Number.isInteger(n) && n > 0)) throw new CliError(`--max-tokens must be a positive whole number, got ${raw}`, 2);
  return n;
}

const clientOf = (input: CommandInput) => new Client(target(input.values as { host?: string; port?: string }));

/** `chat` with no model named or loaded: one of the downloaded models (every model when none is),
 * by number, as Lemonade's CLI asks. */
async function pickModel(client: Client): Promise<string> {
  console.log("No model specified for 'chat'.");
  type Listed = { id: string; recipe?: string; downloaded?: boolean };
  let models = (await client.json("GET", "/v1/models?show_all=false")).data as Listed[];
  if (!models.length) models = (await client.json("GET", "/v1/models?show_all=true")).data as Listed[];
  if (!models.length) throw new CliError("No models available on server. Try 'lemonade list' or 'lemonade pull <MODEL>'.");
  const picked = await chooseOne("Select a model:", models.map((m) => `${m.id} [${m.downloaded ? "downloaded" : "not-downloaded"}] (${m.recipe || "-"})`));
  console.log(`Selected model: ${models[picked]!.id}`);
  return models[picked]!.id;
}

export const chat: Command = {
  name: "chat",
  summary: "Chat with a model in the terminal",
  usage: "chat [MODEL] [--system TEXT] [--no-stream] [--max-tokens N]",
  help: `Chats with MODEL (default: the model loaded last; with none loaded, asks which).
Type a message and press Enter.
  /bye or Ctrl-D leaves; /clear forgets the conversation; /model NAME switches models;
  """ starts and ends a multi-line message (or end a line with \\); Ctrl-C stops a reply.
  --system TEXT    A system prompt for the conversation
  --no-stream      Print each reply whole instead of as it is written
  --max-tokens N   Cap each reply
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, system: { type: "string" }, "no-stream": { type: "boolean" }, "max-tokens": { type: "string" } },
  async run(input) {
    const [named, ...extra] = input.positionals;
    if (extra.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const opts = { system: input.values.system as string | undefined, stream: !input.values["no-stream"], maxTokens: maxTokensFrom(input.values["max-tokens"]) };
    const client = clientOf(input);
    await ensureServer(client);
    const loaded: string | undefined = named ? undefined : (await client.json("GET", "/v1/health")).model_loaded;
    const model = named ?? loaded ?? (await pickModel(client));
    if (!loaded) await client.json("POST", "/v1/load", { model_name: model });
    return chatLoop(client, model, opts);
  },
};
