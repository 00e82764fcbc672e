// What an onnxruntime classifier directory promises (lemonade.md § classify): the architecture,
// checked against the encoder families whose inputs this engine builds correctly; the task
// (sequence or token classification), the labels, the normalisation and the token budget, read
// from config.json and overridden by an optional manifest.json. Read by the recipe at load (so an
// unsupported family is refused before anything starts) and by the engine process itself.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { RECIPE_SPECS } from "../spec/recipes.ts";

/** Single-sequence encoder families: `[CLS] text [SEP]` (or `<s> text </s>`), segment ids all 0. */
export const SUPPORTED_MODEL_TYPES = ["bert", "distilbert", "roberta", "xlm-roberta", "deberta", "deberta-v2", "electra", "albert", "camembert"] as const;

/** Families whose positions start after the padding index, so two positions are not usable. */
const PADDING_OFFSET_TYPES = ["roberta", "xlm-roberta", "camembert"];

/** The files a servable directory must hold. */
const REQUIRED_FILES = RECIPE_SPECS.onnxruntime!.repositoryFiles!;

export type Task = "sequence" | "token";
export type Normalization = "softmax" | "sigmoid";

export interface ClassifierContract {
  modelType: string;
  architecture: string;
  task: Task;
  /** Label names by output index. */
  labels: string[];
  normalization: Normalization;
  /** Tokens per input, special tokens included; longer inputs are truncated. */
  maxLength: number;
}

export class ContractError extends Error {}

function readJson(path: string, name: string): Record<string, any> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new ContractError(`${name} cannot be read as JSON: ${(err as Error).message}`);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) throw new ContractError(`${name} is not a JSON object`);
  return value as Record<string, any>;
}

/** Labels by index from an `id2label` map (`{"0": "NEGATIVE", ...}`) or a list. */
function labelList(source: unknown, name: string): string[] {
  const entries: [number, unknown][] = Array.isArray(source)
    ? source.map((l, i) => [i, l])
    : Object.entries(source as Record<string, unknown>).map(([k, l]) => [Number(k), l]);
  if (!entries.length) throw new ContractError(`${name} declares no labels`);
  const labels = new Map<number, string>();
  for (const [i, l] of entries) {
    if (!Number.isInteger(i) || i < 0 || i >= entries.length || labels.has(i) || typeof l !== "string" || !l) {
      throw new ContractError(`${name} labels must be non-empty names indexed 0..${entries.length - 1}, each once`);
    }
    labels.set(i, l);
  }
  return entries.map((_, i) => labels.get(i)!);
}

function normalizationOf(problemType: unknown, name: string): Normalization | undefined {
  if (problemType === undefined || problemType === null) return undefined;
  if (problemType === "multi_label_classification") return "sigmoid";
  if (problemType === "single_label_classification") return "softmax";
  throw new ContractError(`${name} problem_type ${JSON.stringify(problemType)} is not single_label_classification or multi_label_classification`);
}

/** Reads and checks a model directory; a ContractError says what is wrong with it. */
export function readContract(dir: string): ClassifierContract {
  const missing = REQUIRED_FILES.filter((f) => !existsSync(join(dir, f)));
  if (missing.length) throw new ContractError(`the model directory has no ${missing.join(", ")} (a classifier needs ${REQUIRED_FILES.join(" + ")})`);
  const config = readJson(join(dir, "config.json"), "config.json");
  const modelType = String(config.model_type ?? "");
  if (!(SUPPORTED_MODEL_TYPES as readonly string[]).includes(modelType)) {
    throw new ContractError(
      `config.json declares model_type ${JSON.stringify(config.model_type ?? null)}, which is not a supported encoder family (${SUPPORTED_MODEL_TYPES.join(", ")}): its segment and special-token conventions differ, so it would be served with wrong scores`,
    );
  }
  const architecture = Array.isArray(config.architectures) ? String(config.architectures[0] ?? "") : "";
  const manifestPath = join(dir, "manifest.json");
  const manifest = existsSync(manifestPath) ? readJson(manifestPath, "manifest.json") : {};
  const declared = manifest.task ?? (architecture.endsWith("ForTokenClassification") ? "token" : architecture.endsWith("ForSequenceClassification") ? "sequence" : null);
  if (declared !== "sequence" && declared !== "token") {
    throw new ContractError(`config.json declares architecture ${JSON.stringify(architecture)}, which is neither a sequence- nor a token-classification head`);
  }
  const labelSource = manifest.id2label ?? manifest.labels ?? config.id2label;
  if (!labelSource || typeof labelSource !== "object") throw new ContractError("config.json has no id2label");
  const labels = labelList(labelSource, manifest.id2label || manifest.labels ? "manifest.json" : "config.json");
  const normalization =
    (manifest.multi_label === true ? "sigmoid" : manifest.multi_label === false ? "softmax" : undefined) ??
    normalizationOf(manifest.problem_type, "manifest.json") ??
    normalizationOf(config.problem_type, "config.json") ??
    "softmax";
  return { modelType, architecture, task: declared, labels, normalization, maxLength: tokenBudget(dir, config, manifest, modelType) };
}

/** The manifest's max_length, else the tokenizer's, else the positions; never more positions
 * than the model has (past them its position table has no row). */
function tokenBudget(dir: string, config: Record<string, any>, manifest: Record<string, any>, modelType: string): number {
  const raw = config.max_position_embeddings;
  const positions = Number.isInteger(raw) && raw >= 4 ? (PADDING_OFFSET_TYPES.includes(modelType) ? raw - 2 : raw) : 512;
  if (manifest.max_length !== undefined) {
    if (!Number.isInteger(manifest.max_length) || manifest.max_length < 2) throw new ContractError("manifest.json max_length must be an integer of at least 2");
    return Math.min(manifest.max_length, positions);
  }
  const tokenizerConfig = join(dir, "tokenizer_config.json");
  // Tokenizers with no limit of their own write a huge sentinel (1e30) here.
  const fromTokenizer = existsSync(tokenizerConfig) ? readJson(tokenizerConfig, "tokenizer_config.json").model_max_length : undefined;
  if (Number.isInteger(fromTokenizer) && fromTokenizer >= 2) return Math.min(fromTokenizer, positions);
  return positions;
}
