// The onnxruntime engine: a process of its own per loaded classifier, started by the recipe
// (engines/onnxruntime.ts) as `bun onnxruntime-server.ts --model DIR --port N`. It reads the
// directory's contract, tokenizes with @huggingface/tokenizers (which reads tokenizer.json as
// the model was trained with), runs model.onnx on onnxruntime-node's CPU provider and answers
//   GET  /health                       200 once the session is ready
//   POST /classify {input, top_k?}     {labels: {name: score}}, highest first
// Scores are softmax (or sigmoid for multi-label) over the logits; a token classifier's tags
// are grouped into spans (BIO, BIOES or BILOU tags) and each entity type scores as its best
// span's mean token score.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import * as ort from "onnxruntime-node";
import { Tokenizer } from "@huggingface/tokenizers";
import { ContractError, readContract, type ClassifierContract } from "./onnxruntime-contract.ts";

const INPUTS = ["input_ids", "attention_mask", "token_type_ids"];

interface Encoded {
  ids: number[];
  types: number[];
  /** Whether each position is the template's ([CLS], [SEP], <s>, ...), not the text's. */
  special: boolean[];
}

function fail(message: string): never {
  console.error(`onnxruntime: ${message}`);
  process.exit(1);
}

const softmax = (xs: number[]) => {
  const max = Math.max(...xs);
  const e = xs.map((x) => Math.exp(x - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
};
const sigmoid = (xs: number[]) => xs.map((x) => 1 / (1 + Math.exp(-x)));

/** Characters per token the text is cut to before tokenizing: WordPiece reads at most 100 per
 * word, so a longer prefix never changes the tokens kept, and a huge input costs no more. */
const CHARS_PER_TOKEN = 100;

class Classifier {
  /** The single-sequence template's tokens around the text ([CLS] ... [SEP], <s> ... </s>). */
  private readonly prefix: number[];
  private readonly suffix: number[];

  constructor(
    readonly contract: ClassifierContract,
    private readonly tokenizer: Tokenizer,
    private readonly session: ort.InferenceSession,
  ) {
    const template = tokenizer.encode("").ids;
    this.prefix = template.slice(0, 1);
    this.suffix = template.slice(1);
  }

  /** Encodes one text within the token budget. The template's tokens are added by position, so
   * text that reads like a special token (an [UNK], a literal "[SEP]") stays text. */
  private encode(text: string): Encoded {
    const room = this.contract.maxLength - this.prefix.length - this.suffix.length;
    const content = this.tokenizer.encode(text.slice(0, Math.max(1, room) * CHARS_PER_TOKEN), { add_special_tokens: false }).ids.slice(0, Math.max(0, room));
    const ids = [...this.prefix, ...content, ...this.suffix];
    return { ids, types: ids.map(() => 0), special: ids.map((_, i) => i < this.prefix.length || i >= this.prefix.length + content.length) };
  }

  private async logits(enc: Encoded): Promise<{ data: Float32Array; dims: readonly number[] }> {
    const n = enc.ids.length;
    const tensor = (values: number[]) => new ort.Tensor("int64", BigInt64Array.from(values, BigInt), [1, n]);
    const feeds: Record<string, ort.Tensor> = {};
    for (const name of this.session.inputNames) {
      feeds[name] = tensor(name === "input_ids" ? enc.ids : name === "attention_mask" ? enc.ids.map(() => 1) : enc.types);
    }
    const out = await this.session.run(feeds);
    const logits = out.logits ?? out[this.session.outputNames[0]!]!;
    const { labels, task } = this.contract;
    const dims = logits.dims;
    const shape = task === "token" ? `[1, ${n}, ${labels.length}]` : `[1, ${labels.length}]`;
    const fits = task === "token" ? dims.length === 3 && dims[1] === n : dims.length === 2;
    if (logits.type !== "float32" || !fits || dims[0] !== 1 || dims[dims.length - 1] !== labels.length) {
      throw new Error(`model.onnx answers ${logits.type} [${dims.join(", ")}], but a ${task} classifier with ${labels.length} labels answers float32 ${shape}`);
    }
    return { data: logits.data as Float32Array, dims };
  }

  /** Every label's score, highest first. */
  async classify(text: string): Promise<[string, number][]> {
    const enc = this.encode(text);
    const { data } = await this.logits(enc);
    const { labels, normalization, task } = this.contract;
    const width = labels.length;
    const normalize = normalization === "sigmoid" ? sigmoid : softmax;
    const scores: [string, number][] =
      task === "sequence"
        ? normalize(Array.from(data.subarray(0, width))).map((s, i) => [labels[i]!, s])
        : spanScores(labels, enc, (i) => normalize(Array.from(data.subarray(i * width, (i + 1) * width))));
    return scores.sort((a, b) => b[1] - a[1]);
  }
}

/** The entity type a tag names (`B-PER`, `I-PER` -> `PER`; BIOES and BILOU prefixes), and whether it
 * opens or closes a span; null for outside (`O`). */
function entityOf(tag: string): { type: string; begins: boolean; ends: boolean } | null {
  if (tag === "O") return null;
  const m = /^([BIESLU])-(.+)$/.exec(tag);
  if (!m) return { type: tag, begins: false, ends: false };
  const p = m[1]!;
  return { type: m[2]!, begins: p === "B" || p === "S" || p === "U", ends: p === "E" || p === "S" || p === "L" || p === "U" };
}

/** Token tags grouped into spans; each entity type scores as its best span (0 when none). */
function spanScores(labels: string[], enc: Encoded, probsAt: (i: number) => number[]): [string, number][] {
  const best = new Map<string, number>();
  for (const l of labels) {
    const e = entityOf(l);
    if (e) best.set(e.type, 0);
  }
  let span: { type: string; sum: number; count: number } | null = null;
  const close = () => {
    if (span) best.set(span.type, Math.max(best.get(span.type) ?? 0, span.sum / span.count));
    span = null;
  };
  enc.ids.forEach((_, i) => {
    if (enc.special[i]) return close();
    const probs = probsAt(i);
    const top = probs.indexOf(Math.max(...probs));
    const e = entityOf(labels[top]!);
    if (!e) return close();
    if (!span || e.begins || span.type !== e.type) {
      close();
      span = { type: e.type, sum: 0, count: 0 };
    }
    span.sum += probs[top]!;
    span.count++;
    if (e.ends) close();
  });
  close();
  return [...best];
}

async function open(dir: string): Promise<Classifier> {
  const contract = readContract(dir);
  const tokenizerConfigPath = join(dir, "tokenizer_config.json");
  let tokenizerConfig = {};
  try {
    tokenizerConfig = JSON.parse(readFileSync(tokenizerConfigPath, "utf8"));
  } catch {}
  const tokenizer = new Tokenizer(JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")), tokenizerConfig);
  const session = await ort.InferenceSession.create(join(dir, "model.onnx"), { executionProviders: ["cpu"] });
  const unknown = session.inputNames.filter((n) => !INPUTS.includes(n));
  if (unknown.length || !session.inputNames.includes("input_ids")) {
    throw new ContractError(`model.onnx takes inputs ${session.inputNames.join(", ")}; an encoder classifier takes input_ids, attention_mask (and token_type_ids)`);
  }
  const classifier = new Classifier(contract, tokenizer, session);
  // One run now, so a graph whose output does not fit the labels fails the load, not a request.
  await classifier.classify("a");
  return classifier;
}

const error = (status: number, message: string) => Response.json({ error: { message, type: status < 500 ? "invalid_request_error" : "server_error" } }, { status });

async function answer(classifier: Classifier, req: Request): Promise<Response> {
  let body: any;
  try {
    body = await req.json();
  } catch {
    return error(400, "The body is not JSON");
  }
  if (typeof body?.input !== "string") return error(400, "'input' must be a string");
  const topK = body.top_k;
  if (topK !== undefined && (!Number.isInteger(topK) || topK < 1)) return error(400, "'top_k' must be a positive integer");
  try {
    const scores = await classifier.classify(body.input);
    return Response.json({ labels: Object.fromEntries(topK === undefined ? scores : scores.slice(0, topK)) });
  } catch (err) {
    return error(500, (err as Error).message);
  }
}

const { values } = parseArgs({ options: { model: { type: "string" }, port: { type: "string" }, host: { type: "string", default: "127.0.0.1" } } });
if (!values.model || !values.port) fail("usage: onnxruntime-server.ts --model DIR --port N");
let classifier: Classifier;
try {
  classifier = await open(values.model);
} catch (err) {
  fail(err instanceof ContractError ? err.message : `cannot open the model: ${(err as Error).message}`);
}
Bun.serve({
  hostname: values.host,
  port: Number(values.port),
  fetch(req) {
    const { pathname } = new URL(req.url);
    if (pathname === "/health" && req.method === "GET") return Response.json({ status: "ok" });
    if (pathname === "/classify" && req.method === "POST") return answer(classifier, req);
    return error(404, `No route ${req.method} ${pathname}`);
  },
});
console.error(`onnxruntime: serving ${classifier.contract.architecture} (${classifier.contract.task} classification, ${classifier.contract.labels.length} labels) on ${values.host}:${values.port}`);
