// Writes the tiny models the tests run on real engines: random weights, real tokenizers and chat
// template copied from llama.cpp's source tree (its vocab-only GGUFs in models/).
//   chat:   llama architecture, Qwen2 tokenizer, Qwen3 chat template (tools and thinking)
//   embed:  BERT with mean pooling, BGE tokenizer
//   rerank: BERT with rank pooling and a classifier head, BGE tokenizer
//   classifiers/: ONNX encoder classifiers for onnxruntime, written by test-models/classifier.py
// Usage: bun scripts/make-test-models.ts [out-dir]
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GgufType, readGgufMetadata, type GgufValue } from "../models/gguf.ts";
import { LLAMACPP } from "../engines/llamacpp.ts";
import { sourceDir } from "../engines/source-build.ts";
import { defaultCacheDir } from "../config/config.ts";
import { GGML_TYPE_F16, GGML_TYPE_F32, writeGguf, type TensorSpec } from "./test-models/gguf-writer.ts";
import { writeWhisperModel } from "./test-models/whisper-writer.ts";

/** Bumped whenever the generated files change, so stale copies are rewritten. */
const GENERATOR_VERSION = "4";

export const TEST_MODELS = {
  chat: "tiny-chat.gguf",
  chatB: "tiny-chat-b.gguf",
  embed: "tiny-embed.gguf",
  rerank: "tiny-rerank.gguf",
  whisper: "tiny-whisper.bin",
} as const;

/** Deterministic weights (mulberry32), so a regenerated model is byte-identical. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type KV = [string, GgufType, GgufValue][];

/** GPT-2 byte-level BPE writes each byte as a printable character; this maps them back. */
const BYTE_OF_CHAR = (() => {
  const printable = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const map = new Map<string, number>();
  let extra = 0;
  for (let b = 0; b < 256; b++) map.set(String.fromCodePoint(printable(b) ? b : 256 + extra++), b);
  return map;
})();

/** Whether a byte-level token decodes to whole UTF-8 characters on its own. */
function isWholeUtf8(token: string): boolean {
  const bytes: number[] = [];
  for (const ch of token) {
    const b = BYTE_OF_CHAR.get(ch);
    if (b === undefined) return true;
    bytes.push(b);
  }
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes));
    return true;
  } catch {
    return false;
  }
}

function tokenizerKv(vocabPath: string): KV {
  const meta = readGgufMetadata(vocabPath);
  return [...meta.kv]
    .filter(([k]) => k.startsWith("tokenizer."))
    .map(([k, v]) => [k, v.type, v.value]);
}

class Weights {
  readonly tensors: TensorSpec[] = [];
  constructor(private readonly next: () => number) {}

  random(name: string, dims: number[], scale = 0.08, type: 0 | 1 = GGML_TYPE_F16) {
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = (this.next() * 2 - 1) * scale;
    this.tensors.push({ name, dims, type, data });
  }

  fill(name: string, dims: number[], value: number) {
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(value);
    this.tensors.push({ name, dims, type: GGML_TYPE_F32, data });
  }
}

function chatModel(path: string, src: string, seed: number): void {
  const E = 32, L = 2, H = 4, HKV = 2, FF = 64, CTX = 4096;
  const tok = tokenizerKv(join(src, "models", "ggml-vocab-qwen2.gguf")).filter(([k]) => k !== "tokenizer.chat_template");
  const vocab = (tok.find(([k]) => k === "tokenizer.ggml.tokens")![2] as { values: unknown[] }).values.length;
  const template = readFileSync(join(src, "models", "templates", "Qwen-Qwen3-0.6B.jinja"), "utf8");
  const tokenTypes = (tok.find(([k]) => k === "tokenizer.ggml.token_type")![2] as { values: number[] }).values;
  const tokenTexts = (tok.find(([k]) => k === "tokenizer.ggml.tokens")![2] as { values: string[] }).values;
  const w = new Weights(rng(seed));
  // Random weights would emit control tokens (<|im_end|>, <tool_call>, <think>) and byte-fragment
  // tokens (half a UTF-8 character) at random, and llama.cpp's output parsers then fail on the
  // half-formed markup or text. So every embedding carries a constant +3 in dimension 0, and the
  // output rows of those tokens a -30 there: their logits are always far below the rest, and the
  // model speaks plain, valid (random) text until max_tokens.
  w.random("token_embd.weight", [E, vocab]);
  const embd = w.tensors.at(-1)!.data;
  for (let t = 0; t < vocab; t++) embd[t * E] = 3;
  w.random("output.weight", [E, vocab]);
  const out = w.tensors.at(-1)!.data;
  for (let t = 0; t < vocab; t++) if (tokenTypes[t] !== 1 || !isWholeUtf8(tokenTexts[t]!)) out[t * E] = -30;
  w.fill("output_norm.weight", [E], 1);
  const kvDim = (E / H) * HKV;
  for (let i = 0; i < L; i++) {
    w.fill(`blk.${i}.attn_norm.weight`, [E], 1);
    w.random(`blk.${i}.attn_q.weight`, [E, E]);
    w.random(`blk.${i}.attn_k.weight`, [E, kvDim]);
    w.random(`blk.${i}.attn_v.weight`, [E, kvDim]);
    w.random(`blk.${i}.attn_output.weight`, [E, E]);
    w.fill(`blk.${i}.ffn_norm.weight`, [E], 1);
    w.random(`blk.${i}.ffn_gate.weight`, [E, FF]);
    w.random(`blk.${i}.ffn_up.weight`, [E, FF]);
    w.random(`blk.${i}.ffn_down.weight`, [FF, E]);
  }
  writeGguf(
    path,
    [
      ["general.architecture", GgufType.STRING, "llama"],
      ["general.name", GgufType.STRING, `tiny-chat-${seed}`],
      ["llama.context_length", GgufType.UINT32, CTX],
      ["llama.embedding_length", GgufType.UINT32, E],
      ["llama.block_count", GgufType.UINT32, L],
      ["llama.feed_forward_length", GgufType.UINT32, FF],
      ["llama.attention.head_count", GgufType.UINT32, H],
      ["llama.attention.head_count_kv", GgufType.UINT32, HKV],
      ["llama.rope.dimension_count", GgufType.UINT32, E / H],
      ["llama.rope.freq_base", GgufType.FLOAT32, 10000],
      ["llama.attention.layer_norm_rms_epsilon", GgufType.FLOAT32, 1e-6],
      ["general.file_type", GgufType.UINT32, 1],
      ...tok,
      ["tokenizer.chat_template", GgufType.STRING, template],
    ],
    w.tensors,
  );
}

const POOLING_MEAN = 1;
const POOLING_RANK = 4;

function bertModel(path: string, src: string, seed: number, pooling: number): void {
  const E = 32, L = 2, H = 4, FF = 64, CTX = 512;
  const tok = tokenizerKv(join(src, "models", "ggml-vocab-bert-bge.gguf"));
  const vocab = (tok.find(([k]) => k === "tokenizer.ggml.tokens")![2] as { values: unknown[] }).values.length;
  const w = new Weights(rng(seed));
  w.random("token_embd.weight", [E, vocab]);
  w.random("token_types.weight", [E, 2], 0.08, GGML_TYPE_F32);
  w.random("position_embd.weight", [E, CTX]);
  w.fill("token_embd_norm.weight", [E], 1);
  w.fill("token_embd_norm.bias", [E], 0);
  for (let i = 0; i < L; i++) {
    for (const t of ["attn_q", "attn_k", "attn_v", "attn_output"]) {
      w.random(`blk.${i}.${t}.weight`, [E, E]);
      w.fill(`blk.${i}.${t}.bias`, [E], 0);
    }
    w.fill(`blk.${i}.attn_output_norm.weight`, [E], 1);
    w.fill(`blk.${i}.attn_output_norm.bias`, [E], 0);
    w.random(`blk.${i}.ffn_up.weight`, [E, FF]);
    w.fill(`blk.${i}.ffn_up.bias`, [FF], 0);
    w.random(`blk.${i}.ffn_down.weight`, [FF, E]);
    w.fill(`blk.${i}.ffn_down.bias`, [E], 0);
    w.fill(`blk.${i}.layer_output_norm.weight`, [E], 1);
    w.fill(`blk.${i}.layer_output_norm.bias`, [E], 0);
  }
  if (pooling === POOLING_RANK) {
    w.random("cls.weight", [E, E], 0.08, GGML_TYPE_F32);
    w.fill("cls.bias", [E], 0);
    w.random("cls.output.weight", [E, 1], 0.5, GGML_TYPE_F32);
    w.fill("cls.output.bias", [1], 0);
  }
  writeGguf(
    path,
    [
      ["general.architecture", GgufType.STRING, "bert"],
      ["general.name", GgufType.STRING, pooling === POOLING_RANK ? "tiny-rerank" : "tiny-embed"],
      ["bert.context_length", GgufType.UINT32, CTX],
      ["bert.embedding_length", GgufType.UINT32, E],
      ["bert.block_count", GgufType.UINT32, L],
      ["bert.feed_forward_length", GgufType.UINT32, FF],
      ["bert.attention.head_count", GgufType.UINT32, H],
      ["bert.attention.layer_norm_epsilon", GgufType.FLOAT32, 1e-12],
      ["bert.attention.causal", GgufType.BOOL, false],
      ["bert.pooling_type", GgufType.UINT32, pooling],
      ["general.file_type", GgufType.UINT32, 1],
      ...tok,
    ],
    w.tensors,
  );
}

/** A whisper.cpp model with the GPT-2 byte-level vocabulary (whisper's English tokens). */
function whisperModel(path: string, src: string, seed: number): void {
  const tokens = (tokenizerKv(join(src, "models", "ggml-vocab-gpt-2.gguf")).find(([k]) => k === "tokenizer.ggml.tokens")![2] as { values: string[] }).values;
  const vocab = tokens.map((t) => Uint8Array.from([...t].map((ch) => BYTE_OF_CHAR.get(ch) ?? 63)));
  writeWhisperModel(
    path,
    { nVocab: 51864, audioCtx: 1500, state: 32, heads: 2, layers: 1, textCtx: 448, mels: 80 },
    vocab,
    rng(seed),
  );
}

/** Writes any missing or stale test model into `outDir` and returns the directory. */
export function makeTestModels(outDir: string, llamaSource = sourceDir(defaultCacheDir(), LLAMACPP)): string {
  const stamp = join(outDir, ".generator-version");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === GENERATOR_VERSION && Object.values(TEST_MODELS).every((f) => existsSync(join(outDir, f)))) {
    return outDir;
  }
  if (!existsSync(join(llamaSource, "models"))) {
    throw new Error(`llama.cpp source not found at ${llamaSource}: run \`bun scripts/build-engines.ts llamacpp\` first`);
  }
  mkdirSync(outDir, { recursive: true });
  chatModel(join(outDir, TEST_MODELS.chat), llamaSource, 1);
  chatModel(join(outDir, TEST_MODELS.chatB), llamaSource, 2);
  bertModel(join(outDir, TEST_MODELS.embed), llamaSource, 3, POOLING_MEAN);
  bertModel(join(outDir, TEST_MODELS.rerank), llamaSource, 4, POOLING_RANK);
  whisperModel(join(outDir, TEST_MODELS.whisper), llamaSource, 5);
  writeFileSync(stamp, GENERATOR_VERSION);
  return outDir;
}

/** The ONNX classifiers, by folder name, and the generator's flags for each. */
export const CLASSIFIERS = {
  sentiment: ["--seed", "7"],
  multiLabel: ["--multi-label", "--seed", "8"],
  names: ["--token", "--seed", "9"],
  distilbert: ["--arch", "distilbert", "--seed", "10"],
  roberta: ["--arch", "roberta", "--seed", "13"],
  xlnet: ["--arch", "xlnet", "--seed", "11"],
  manifest: ["--manifest", "--seed", "12"],
} as const;

/** Bumped whenever test-models/classifier.py's output changes. */
const CLASSIFIER_VERSION = "3";

/** Writes the ONNX classifiers into `<outDir>/<name>/` (Debian's python3-onnx and python3-numpy
 * write them) and returns `outDir`. */
export function makeClassifierModels(outDir: string): string {
  const stamp = join(outDir, ".generator-version");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === CLASSIFIER_VERSION && Object.keys(CLASSIFIERS).every((n) => existsSync(join(outDir, n, "model.onnx")))) {
    return outDir;
  }
  mkdirSync(outDir, { recursive: true });
  for (const [name, flags] of Object.entries(CLASSIFIERS)) {
    const run = Bun.spawnSync(["/usr/bin/python3", join(import.meta.dir, "test-models", "classifier.py"), join(outDir, name), ...flags], { stdout: "ignore", stderr: "pipe" });
    if (run.exitCode !== 0) {
      throw new Error(`writing the ${name} classifier failed (needs Debian's python3-onnx and python3-numpy): ${run.stderr.toString().trim().split("\n").pop()}`);
    }
  }
  writeFileSync(stamp, CLASSIFIER_VERSION);
  return outDir;
}

if (import.meta.main) {
  const out = process.argv[2] ?? join(import.meta.dir, "..", ".cache", "test-models");
  console.log(`test models in ${makeTestModels(out)}`);
  console.log(`classifiers in ${makeClassifierModels(join(out, "classifiers"))}`);
}
