// The MCP gateway: a JSON-RPC 2.0 dispatcher for MCP's tools capability. Tools run on the same
// paths as the HTTP API (catalog, router, proxy); their failures are `isError` results so a
// calling model can correct itself, while protocol mistakes are JSON-RPC errors.
import { existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import { scrubPaths } from "../lib/scrub.ts";
import { VERSION } from "../lib/version.ts";
import type { ServerContext } from "../runtime/context.ts";
import { PROTOCOL_VERSIONS, RPC, type McpRequest, type McpResponse } from "../spec/mcp.ts";
import { toWav16k } from "./audio.ts";
import { generateImages } from "./images.ts";
import { omniTurn } from "./omni.ts";
import { loadedEntries } from "./models.ts";
import type { CatalogModel } from "../models/catalog.ts";
import { TRANSCRIPTION_FORMATS, whisperInference } from "./whisper.ts";
import { isJson, type Json } from "../lib/json.ts";

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A tool failure: reported to the caller as an `isError` result. */
class ToolError extends Error {}

/** A `tools/call` result: content blocks (text, image, audio), and whether the tool failed. */
interface ToolResult {
  content: Json[];
  isError: boolean;
}

const text = (t: string): Json => ({ type: "text", text: t });
const toolResult = (content: Json[]): ToolResult => ({ content, isError: false });

/** The first choice's message of a chat completion, or `{}`. */
function firstMessage(answer: unknown): Json {
  const choices = isJson(answer) && Array.isArray(answer.choices) ? answer.choices : [];
  const choice: unknown = choices[0];
  return isJson(choice) && isJson(choice.message) ? choice.message : {};
}

/** A message's tool calls as a text block, when it made any. */
function toolCallsText(message: Json): Json[] {
  const calls = message.tool_calls;
  return Array.isArray(calls) && calls.length ? [text(`tool_calls: ${JSON.stringify(calls)}`)] : [];
}

const TOOLS = [
  {
    name: "lemonade_list_models",
    description:
      "List the models this Lemonade server has loaded, downloaded and recommends. Call this first if you do not know the exact model name for the other tools: a wrong name may start a multi-GB download.",
    inputSchema: {
      type: "object",
      properties: {
        include_available: { type: "boolean", description: "Also list downloaded models that are not loaded (default true)." },
        include_suggested: { type: "boolean", description: "Also list recommended models not downloaded yet (default true)." },
      },
    },
  },
  {
    name: "lemonade_chat",
    description:
      "Chat completion with a local LLM, loaded on first use. `model` is optional: omitted, a loaded LLM is used, else a downloaded one; with neither, pass a model or allow_download: true (which downloads the default, Qwen3.5-4B-MTP-GGUF). Reasoning is off by default so small max_tokens budgets go to the answer; pass chat_template_kwargs {enable_thinking: true} to turn it on.",
    inputSchema: {
      type: "object",
      properties: {
        model: { type: "string", description: "Optional model name, e.g. Qwen3-1.7B-GGUF; omitted, a loaded or downloaded LLM." },
        allow_download: { type: "boolean", description: "Permit downloading the default model when none is loaded or downloaded. Defaults to false." },
        messages: { type: "array", items: { type: "object" }, description: "OpenAI-style messages." },
        temperature: { type: "number" },
        top_p: { type: "number" },
        max_tokens: { type: "integer" },
        stop: { description: "Stop sequences (a string or an array)." },
        seed: { type: "integer" },
        tools: { type: "array", items: { type: "object" } },
        tool_choice: { description: "auto, none, required or {type: function, ...}" },
        response_format: { type: "object" },
        chat_template_kwargs: { type: "object", description: "e.g. {enable_thinking: true} for reasoning, off by default." },
      },
      required: ["messages"],
    },
  },
  {
    name: "lemonade_transcribe_audio",
    description:
      "Transcribe a local audio file with a Whisper-class model. Prefer audio_path; use audio_base64 only for bytes in memory. `model` is optional: omitted, a loaded or downloaded transcription model, else allow_download: true downloads the default, Whisper-Tiny.",
    inputSchema: {
      type: "object",
      properties: {
        model: { type: "string", description: "Optional; omitted, a loaded or downloaded transcription model." },
        allow_download: { type: "boolean", description: "Permit downloading the default model when none is loaded or downloaded. Defaults to false." },
        audio_path: { type: "string", description: "Absolute path of a local audio file. Preferred over audio_base64." },
        audio_base64: { type: "string" },
        language: { type: "string" },
        prompt: { type: "string" },
        response_format: { type: "string", enum: ["json", "verbose_json", "text", "srt", "vtt"] },
        temperature: { type: "number" },
      },
    },
  },
  {
    name: "lemonade_generate_image",
    description:
      "Generate PNG images from a prompt. Prefer output_path (one image) or output_dir (several): both are confined to the server's MCP image folder. `model` is optional: omitted, a loaded or downloaded image model, else allow_download: true downloads the default, SD-Turbo.",
    inputSchema: {
      type: "object",
      properties: {
        model: { type: "string", description: "Optional; omitted, a loaded or downloaded image model." },
        allow_download: { type: "boolean", description: "Permit downloading the default model when none is loaded or downloaded. Defaults to false." },
        prompt: { type: "string" },
        output_path: { type: "string", description: "The PNG to write (one image), inside the MCP image folder." },
        output_dir: { type: "string", description: "The folder to write images into under unique names, inside the MCP image folder." },
        size: { type: "string", description: "WIDTHxHEIGHT, e.g. 512x512." },
        n: { type: "integer", minimum: 1 },
        negative_prompt: { type: "string" },
        seed: { type: "integer" },
        steps: { type: "integer" },
        cfg_scale: { type: "number" },
      },
      required: ["prompt"],
    },
  },
  {
    name: "lemonade_omni",
    description:
      "One multimodal turn against a Lemonade Omni collection (planner LLM with image, image-edit and speech components). Use lemonade_chat for plain text.",
    inputSchema: {
      type: "object",
      properties: {
        model: { type: "string", description: "A collection.omni model (its id as lemonade_list_models gives it); omitted, a downloaded collection, else LMX-Omni-5.5B-Lite with allow_download." },
        allow_download: { type: "boolean", description: "Permit downloading the default collection when none is downloaded. Defaults to false." },
        messages: { type: "array", items: { type: "object" } },
        tools: { type: "array", items: { type: "object" } },
        tool_choice: {},
        output_dir: { type: "string" },
      },
      required: ["messages"],
    },
  },
] as const;

/** Resolves a client-named path (the argument `label`) inside the sandbox folder; refuses `..`
 * and symlink escapes, in Lemonade's words. */
export function sandboxPath(root: string, requested: string, label: string): string {
  if (!requested) throw new ToolError(`\`${label}\` must not be empty.`);
  mkdirSync(root, { recursive: true });
  const realRoot = realpathSync(root);
  const target = resolve(realRoot, requested);
  const inside = (p: string) => {
    const rel = relative(realRoot, p);
    return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
  };
  const refused = () =>
    new ToolError(`\`${label}\` must resolve to a location inside the MCP image sandbox (${realRoot}). Set LEMONADE_MCP_IMAGE_DIR to change the sandbox root. Rejected: ${requested}`);
  if (!inside(target)) throw refused();
  // Walk up to the deepest part that exists: a symbolic link there must not lead out.
  let probe = target;
  for (;;) {
    try {
      lstatSync(probe);
      break;
    } catch {
      probe = dirname(probe);
    }
  }
  const real = realpathSync(probe);
  if (real !== realRoot && !inside(real)) throw refused();
  return target;
}

function requireString(args: Json, key: string): string {
  const v = args[key];
  if (typeof v !== "string") throw new ToolError(`Missing or non-string argument: ${key}`);
  return v;
}

function requireMessages(args: Json): unknown[] {
  if (!Array.isArray(args.messages)) throw new ToolError("Missing or non-array argument: messages");
  return args.messages;
}

/** Clients that speak Anthropic's shapes (Claude Desktop) send content as text blocks; the engine
 * reads a string, so the blocks' text is joined into one. */
function flattenMessages(messages: unknown[]): unknown[] {
  return messages.map((m) => {
    if (!isJson(m) || !Array.isArray(m.content)) return m;
    const joined = m.content.map((b) => (typeof b === "string" ? b : isJson(b) && b.type === "text" && typeof b.text === "string" ? b.text : "")).join("");
    return { ...m, content: joined };
  });
}

/** The collection lemonade_omni runs when none is named (its default, as Lemonade's). */
const DEFAULT_OMNI = "LMX-Omni-5.5B-Lite";

/** The model each tool downloads, when none is named, loaded or downloaded, only with
 * `allow_download` (Lemonade's defaults: small, so an unattended download stays cheap). */
const DEFAULT_MODELS = { llm: "Qwen3.5-4B-MTP-GGUF", transcription: "Whisper-Tiny", image: "SD-Turbo" } as const;

/** What lemonade_list_models reports, as Lemonade's gateway does: the loaded models as
 * /v1/health lists them; the downloaded and the suggested ones by the ids /v1/models lists them
 * by (names every other tool takes). */
async function listModelsTool(ctx: Pick<ServerContext, "catalog" | "cloud" | "proxy" | "scheduler">, args: Json): Promise<ToolResult> {
  const all = ctx.catalog.all();
  const loaded = loadedEntries(ctx, all);
  const supported = all.filter((m) => ctx.catalog.isSupported(m));
  const entry = (m: CatalogModel): { model_name: string; recipe: string; labels: string[]; size_gb?: number } => ({ model_name: ctx.catalog.publicId(m, all), recipe: m.recipe, labels: m.labels, ...(m.size ? { size_gb: m.size } : {}) });
  const available =
    args.include_available === false
      ? []
      : supported.filter((m) => ctx.catalog.isDownloaded(m)).map((m) => ({ ...entry(m), downloaded: true, suggested: m.suggested }));
  const suggested = args.include_suggested === false ? [] : supported.filter((m) => m.suggested && !ctx.catalog.isDownloaded(m)).map(entry);
  // A loaded LLM, else the model loaded last.
  const recommended = (loaded.find((m) => m.type === "llm") ?? loaded.at(-1))?.model_name ?? "";
  const summary = { loaded, available, suggested_to_pull: suggested, recommended_chat_model: recommended };
  let line = loaded.length ? `Loaded models: ${loaded.map((m) => `${m.model_name} (${m.type})`).join(", ")}. ` : "No models are currently loaded. ";
  if (recommended) line += `Use \`${recommended}\` for chat unless the user asks otherwise.`;
  else if (suggested.length) line += `No loaded LLM. Suggested models to pull: ${suggested.map((m) => m.model_name).join(", ")}.`;
  return toolResult([text(line), text(JSON.stringify(summary))]);
}

/** A tool that found no model to run and asks the caller to name one or allow the default's
 * download (Lemonade's `needs_model` answer). */
function needsModel(kind: string, defaultModel: string, hint: string): ToolResult {
  const status = { status: "needs_model", tool_type: kind, default_model: defaultModel, retry_with: { model: hint, allow_download: true } };
  const message = `No ${kind} model is currently loaded or downloaded on this lemonade server. Re-call this tool with an explicit \`model\` (${hint}; call \`lemonade_list_models\` to see what's available), or pass \`allow_download: true\` to download and load the default (${defaultModel}), which may be a multi-GB download.`;
  return { content: [text(message), text(JSON.stringify(status))], isError: true };
}

type ToolModelType = keyof typeof DEFAULT_MODELS;

/** The model a tool runs: the one named, else a loaded one of the type, else a downloaded one,
 * else the default with `allow_download`; otherwise the `needs_model` answer. */
function modelForTool(ctx: Pick<ServerContext, "catalog" | "scheduler">, args: Json, type: ToolModelType): string | ToolResult {
  if (typeof args.model === "string" && args.model) return args.model;
  const loaded = ctx.scheduler.list().find((i) => i.model.type === type);
  if (loaded) return loaded.model.id;
  const downloaded = ctx.catalog.all().find((m) => m.type === type && ctx.catalog.isSupported(m) && ctx.catalog.isDownloaded(m));
  if (downloaded) return downloaded.id;
  if (args.allow_download === true) return DEFAULT_MODELS[type];
  return needsModel(type, DEFAULT_MODELS[type], "an explicit model name");
}

/** A model the registry has but this system filters out, answered before anything loads, with
 * a suggested model of the same kind that runs here (Lemonade's "not available" answer). */
function notAvailableHere(ctx: Pick<ServerContext, "catalog">, name: string, kind: (m: CatalogModel) => boolean, noun: string): ToolResult | null {
  const model = ctx.catalog.find(name);
  // A name the registry does not have fails as Lemonade's load of it does.
  if (!model) throw new ToolError(`Model not found: ${name}`);
  if (ctx.catalog.isSupported(model)) return null;
  const alternative = ctx.catalog
    .all()
    .filter((m) => m.suggested && kind(m) && ctx.catalog.isSupported(m))
    .map((m) => m.id)
    .sort()[0];
  const next = alternative
    ? ` Try '${alternative}' for portable ${noun}, or call \`lemonade_list_models\` to see what's available.`
    : " Call `lemonade_list_models` to discover what's available.";
  return { content: [text(`Model '${name}' is not available on this lemonade server. ${ctx.catalog.unsupportedReason(model)}${next}`)], isError: true };
}

/** The chat request keys lemonade_chat and lemonade_omni pass on as they are. */
const CHAT_KEYS = ["temperature", "top_p", "max_tokens", "stop", "seed", "presence_penalty", "frequency_penalty", "tools", "tool_choice", "response_format", "chat_template_kwargs"];

async function chatTool(ctx: Pick<ServerContext, "catalog" | "proxy" | "scheduler">, args: Json, signal: AbortSignal): Promise<ToolResult> {
  const messages = requireMessages(args);
  const model = modelForTool(ctx, args, "llm");
  if (typeof model !== "string") return model;
  const unavailable = notAvailableHere(ctx, model, (m) => m.type === "llm" && m.source === "huggingface", "chat");
  if (unavailable) return unavailable;
  const body: Json = { messages: flattenMessages(messages) };
  for (const k of CHAT_KEYS) if (args[k] !== undefined) body[k] = args[k];
  // Reasoning would spend a small max_tokens budget before the answer: off unless asked for.
  body.chat_template_kwargs ??= { enable_thinking: false };
  const res = await ctx.proxy.toModel({
    model,
    path: "/v1/chat/completions",
    body,
    check: (m, named) => (m.type === "llm" ? null : ApiError.of(E.notAnLlm, `Model ${named(m)} is not a chat model; use lemonade_list_models to find one`)),
    signal,
    endpoint: "mcp_chat",
    generation: true,
  });
  const answer = await res.json();
  const message = firstMessage(answer);
  const content = typeof message.content === "string" ? message.content : "";
  const reasoning = typeof message.reasoning_content === "string" ? message.reasoning_content : "";
  // A reasoning model that spent its budget thinking: the thinking, marked, rather than nothing.
  const choice: unknown = isJson(answer) && Array.isArray(answer.choices) ? answer.choices[0] : undefined;
  const cutShort = isJson(choice) && choice.finish_reason === "length" ? "; finish_reason=length" : "";
  const said = !content && reasoning ? `[reasoning only${cutShort}]\n${reasoning}` : content;
  return toolResult([text(said), ...toolCallsText(message)]);
}

/** Checks a model exists and is of the kind a tool needs, before any file is touched. */
function modelOfType(ctx: Pick<ServerContext, "catalog">, name: string, type: string, hint: string) {
  const model = ctx.catalog.get(name);
  if (model.type !== type) throw new ToolError(`Model ${ctx.catalog.publicId(model)} is not a ${type} model. ${hint}`);
  return model;
}

async function transcribeTool(ctx: Pick<ServerContext, "catalog" | "proxy" | "scheduler">, args: Json, signal: AbortSignal): Promise<ToolResult> {
  const name = modelForTool(ctx, args, "transcription");
  if (typeof name !== "string") return name;
  const path = typeof args.audio_path === "string" ? args.audio_path : undefined;
  const base64 = typeof args.audio_base64 === "string" ? args.audio_base64 : undefined;
  if (path === undefined && base64 === undefined) {
    throw new ToolError("Provide either `audio_path` (path to a local audio file) or `audio_base64` (base64-encoded audio bytes).");
  }
  let bytes: Buffer<ArrayBuffer>;
  if (path !== undefined) {
    if (!existsSync(path)) throw new ToolError(`audio_path not found: ${path}`);
    try {
      bytes = readFileSync(path);
    } catch {
      throw new ToolError(`Failed to open audio_path: ${path}`);
    }
    if (!bytes.length) throw new ToolError(`audio_path is empty: ${path}`);
  } else {
    bytes = Buffer.from(base64!, "base64");
    if (!bytes.length) throw new ToolError("audio_base64 decoded to zero bytes. If you meant to pass a file path, use the `audio_path` argument instead.");
  }
  const unavailable = notAvailableHere(ctx, name, (m) => m.type === "transcription", "transcription");
  if (unavailable) return unavailable;
  const asked = args.response_format ?? "json";
  const format = TRANSCRIPTION_FORMATS.find((f) => f === asked);
  if (!format) throw new ToolError(`'response_format' must be one of ${TRANSCRIPTION_FORMATS.join(", ")}`);
  const model = modelOfType(ctx, name, "transcription", "Use a Whisper model such as Whisper-Tiny.");
  const wav = await toWav16k(new Blob([bytes]));
  const request = {
    wav,
    language: typeof args.language === "string" ? args.language : undefined,
    prompt: typeof args.prompt === "string" ? args.prompt : undefined,
    temperature: typeof args.temperature === "number" ? String(args.temperature) : undefined,
    signal,
  };
  // The bare transcript, then the whole answer (timestamps and segments for callers that need them).
  const raw = await whisperInference(ctx, model.id, { ...request, format });
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  const transcript = isJson(parsed) && typeof parsed.text === "string" ? parsed.text.trim() : raw;
  return toolResult([text(transcript), text(isJson(parsed) ? JSON.stringify(parsed) : JSON.stringify({ text: raw }))]);
}

/** The image request keys lemonade_generate_image passes on. */
const IMAGE_KEYS = ["size", "n", "quality", "style", "negative_prompt", "seed", "steps", "cfg_scale"];

async function imageTool(ctx: Pick<ServerContext, "catalog" | "config" | "options" | "proxy" | "scheduler">, args: Json, signal: AbortSignal): Promise<ToolResult> {
  const prompt = requireString(args, "prompt");
  const name = modelForTool(ctx, args, "image");
  if (typeof name !== "string") return name;
  const hasPath = typeof args.output_path === "string";
  const hasDir = typeof args.output_dir === "string";
  if (hasPath && hasDir) throw new ToolError("Provide at most one of `output_path` or `output_dir`, not both.");
  // Paths are checked first: a refused path is refused whatever the model.
  const target = hasPath ? sandboxPath(ctx.config.mcpImageDir, String(args.output_path), "output_path") : undefined;
  const dir = hasDir ? sandboxPath(ctx.config.mcpImageDir, String(args.output_dir), "output_dir") : undefined;
  const unavailable = notAvailableHere(ctx, name, (m) => m.type === "image", "image generation");
  if (unavailable) return unavailable;
  const model = modelOfType(ctx, name, "image", "Use lemonade_list_models to find an image model.");
  const request: Json = { model: model.id, prompt };
  for (const k of IMAGE_KEYS) if (args[k] !== undefined) request[k] = args[k];
  const out = await generateImages(ctx, request, signal, "mcp_generate_image");
  const data: unknown[] = Array.isArray(out.data) ? out.data : [];
  const images = data.flatMap((d) => (isJson(d) && typeof d.b64_json === "string" ? [d.b64_json] : []));
  if (!images.length) throw new ToolError("Image generation returned no images");
  if (target === undefined && dir === undefined) return toolResult(images.map((b64) => ({ type: "image", data: b64, mimeType: "image/png" })));
  if (target !== undefined && images.length > 1) throw new ToolError("`output_path` only supports a single image; use `output_dir` when n > 1.");
  mkdirSync(dir ?? dirname(target!), { recursive: true });
  const stamp = Date.now().toString(16);
  const paths = images.map((b64, i) => {
    // output_path is written as named; output_dir gets names no other call can take.
    const path = target ?? join(dir!, `image_${stamp}-${crypto.randomUUID().slice(0, 4)}_${i}.png`);
    writeFileSync(path, Buffer.from(b64, "base64"));
    return path;
  });
  const summary = paths.length === 1 ? `Wrote image to: ${paths[0]}` : `Wrote ${paths.length} images:`;
  return toolResult([text(summary), ...(paths.length > 1 ? paths.map((p) => text(p)) : []), text(JSON.stringify({ paths }))]);
}

async function omniTool(ctx: Pick<ServerContext, "catalog" | "config" | "library" | "logger" | "options" | "proxy" | "standIns">, args: Json, signal: AbortSignal): Promise<ToolResult> {
  const messages = requireMessages(args);
  // Named, else a downloaded collection (no network), else the default only with allow_download.
  let name = typeof args.model === "string" && args.model ? args.model : ctx.catalog.all().find((m) => m.omni && ctx.catalog.isDownloaded(m))?.id;
  if (!name) {
    if (args.allow_download !== true) return needsModel("omni", DEFAULT_OMNI, "an Omni collection name, recipe=collection.omni");
    name = DEFAULT_OMNI;
  }
  const model = ctx.catalog.find(name);
  if (!model) {
    return { content: [text(`Unknown model '${name}'. Call \`lemonade_list_models\` to discover available Omni collections (recipe = collection.omni), or omit \`model\` to use the default (${DEFAULT_OMNI}).`)], isError: true };
  }
  if (!model.omni) {
    return { content: [text(`Model '${name}' is not an Omni collection (recipe='${model.recipe}'). Use \`lemonade_chat\` for plain LLMs, or pass an Omni collection name (e.g. ${DEFAULT_OMNI}).`)], isError: true };
  }
  const dir = typeof args.output_dir === "string" ? sandboxPath(ctx.config.mcpImageDir, args.output_dir, "output_dir") : undefined;
  const body: Json = { model: model.id, messages: flattenMessages(messages) };
  for (const k of CHAT_KEYS) if (args[k] !== undefined) body[k] = args[k];
  const { answer, text: said, artifacts } = await omniTurn(ctx, ctx.catalog.get(model.id), body, signal);
  const content: Json[] = [text(said)];
  if (dir !== undefined) {
    if (artifacts.length) mkdirSync(dir, { recursive: true });
    const stamp = Date.now().toString(16);
    const paths = artifacts.map((a, i) => {
      const path = join(dir, `omni_${stamp}-${crypto.randomUUID().slice(0, 4)}_${i}.${a.type === "image" ? "png" : "mp3"}`);
      writeFileSync(path, Buffer.from(a.data, "base64"));
      return path;
    });
    content.push(...paths.map((p, i) => text(`${artifacts[i]!.type} -> ${p}`)), text(JSON.stringify({ paths })));
  } else {
    content.push(...artifacts.map((a) => ({ type: a.type, data: a.data, mimeType: a.mimeType })));
  }
  content.push(...toolCallsText(firstMessage(answer)));
  return toolResult(content);
}

/** What the MCP tools use of the server. */
export type McpContext = Pick<ServerContext, "aliases" | "catalog" | "cloud" | "config" | "library" | "logger" | "options" | "proxy" | "recipeOptions" | "scheduler" | "standIns">;

async function callTool(ctx: McpContext, params: unknown, signal: AbortSignal): Promise<ToolResult> {
  const name = isJson(params) ? params.name : undefined;
  const args = (isJson(params) ? params.arguments : undefined) ?? {};
  if (typeof name !== "string") throw new RpcError(RPC.invalidParams, "tools/call requires a string `name` parameter");
  if (!isJson(args)) throw new RpcError(RPC.invalidParams, "tools/call `arguments` must be an object");
  const tools: Record<string, () => Promise<ToolResult>> = {
    lemonade_list_models: () => listModelsTool(ctx, args),
    lemonade_chat: () => chatTool(ctx, args, signal),
    lemonade_transcribe_audio: () => transcribeTool(ctx, args, signal),
    lemonade_generate_image: () => imageTool(ctx, args, signal),
    lemonade_omni: () => omniTool(ctx, args, signal),
  };
  const tool = tools[name];
  // An unknown tool is the calling model's mistake to see and correct, like any tool failure.
  if (!tool) return { content: [text(`Unknown tool: ${name}`)], isError: true };
  try {
    return await tool();
  } catch (err) {
    // Tool failures, whatever their kind, are results (mcp.md), so the calling model sees them
    // and can correct itself.
    return { content: [text(`Error: ${err instanceof ToolError || err instanceof ApiError ? err.message : scrubPaths((err as Error).message)}`)], isError: true };
  }
}

async function dispatch(ctx: McpContext, msg: McpRequest, signal: AbortSignal): Promise<unknown> {
  switch (msg.method) {
    case "initialize": {
      const asked = isJson(msg.params) ? msg.params.protocolVersion : undefined;
      return {
        protocolVersion: PROTOCOL_VERSIONS.find((v) => v === asked) ?? PROTOCOL_VERSIONS[0],
        capabilities: { tools: {} },
        serverInfo: { name: "lemonade-mcp", version: VERSION },
      };
    }
    case "ping":
      return {};
    case "tools/list":
      return { tools: TOOLS };
    case "tools/call":
      return callTool(ctx, msg.params, signal);
    default:
      throw new RpcError(RPC.methodNotFound, `Unknown method: ${msg.method}`);
  }
}

type RpcId = McpResponse["id"];

const rpcError = (id: RpcId | undefined, code: number, message: string): McpResponse => ({ jsonrpc: "2.0", id: id ?? null, error: { code, message } });

const isId = (id: unknown): id is RpcId => id === null || typeof id === "string" || typeof id === "number";

/** One message as JSON-RPC 2.0 defines a request (a notification when it has no id). */
function isRequest(msg: unknown): msg is McpRequest {
  return isJson(msg) && msg.jsonrpc === "2.0" && typeof msg.method === "string" && (msg.id === undefined || isId(msg.id));
}

/** Answers one message; null for a notification (no id), which gets no answer. A message that is
 * no request is answered -32600 even without an id (mcp.md: a missing `method` is -32600). */
async function handleOne(ctx: McpContext, msg: unknown, signal: AbortSignal): Promise<McpResponse | null> {
  if (!isJson(msg)) return rpcError(null, RPC.invalidRequest, "Request must be a JSON object");
  if (!isRequest(msg)) {
    const id = isId(msg.id) ? msg.id : null;
    if (typeof msg.method !== "string") return rpcError(id, RPC.invalidRequest, "Missing `method` field");
    return rpcError(id, RPC.invalidRequest, "Not a JSON-RPC 2.0 request: expected {jsonrpc: \"2.0\", method, id?, params?}");
  }
  const m = msg;
  // The client's acknowledgements are taken silently, even sent with an id.
  if (m.method === "notifications/initialized" || m.method === "notifications/cancelled") return null;
  const isNotification = !("id" in m);
  try {
    const result = await dispatch(ctx, m, signal);
    return isNotification ? null : { jsonrpc: "2.0", id: m.id ?? null, result };
  } catch (err) {
    if (isNotification) return null;
    if (err instanceof RpcError) return rpcError(m.id, err.code, err.message);
    ctx.logger.error("MCP", `${m.method} failed: ${(err as Error).message}`);
    return rpcError(m.id, RPC.internal, (err as Error).message);
  }
}

/** A body the server cannot take: a JSON-RPC error with no id. One that is not JSON is answered
 * 200, as every JSON-RPC error is (mcp.md's error model); one too large keeps its HTTP status. */
export function mcpBodyError(status: number, message: string): Response {
  if (status === 400) return Response.json(rpcError(null, /JSON/.test(message) ? RPC.parseError : RPC.invalidRequest, message));
  return Response.json(rpcError(null, RPC.invalidRequest, message), { status });
}

/** GET /mcp: 405 with a JSON-RPC error, as Lemonade answers it (no server-initiated stream). */
export function mcpGetRefused(): Response {
  return Response.json(rpcError(null, RPC.invalidRequest, "GET /mcp not supported; use POST with a JSON-RPC body"), { status: 405, headers: { allow: "POST" } });
}

/** One POST /mcp: a message or a batch in, the answers out (202 when nothing needs one). */
export async function handleMcp(ctx: McpContext, raw: string, signal: AbortSignal): Promise<Response> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    return Response.json(rpcError(null, RPC.parseError, `Invalid JSON: ${(err as Error).message}`));
  }
  if (!Array.isArray(parsed) && !isJson(parsed)) return Response.json(rpcError(null, RPC.invalidRequest, "Request must be a JSON object or array"));
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) return Response.json(rpcError(null, RPC.invalidRequest, "Batch request must not be empty"));
    const answers = (await Promise.all(parsed.map((m) => handleOne(ctx, m, signal)))).filter((a) => a !== null);
    if (!answers.length) return new Response(null, { status: 202 });
    return Response.json(answers);
  }
  const answer = await handleOne(ctx, parsed, signal);
  return answer ? Response.json(answer) : new Response(null, { status: 202 });
}

