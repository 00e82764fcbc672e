// The MCP gateway: a JSON-RPC 2.0 dispatcher for MCP's tools capability. Tools run on the same
// paths as the HTTP API (catalog, router, proxy); their failures are `isError` results so a
// calling model can correct itself, while protocol mistakes are JSON-RPC errors.
import { accessSync, constants, lstatSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
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
import { TRANSCRIPTION_FORMATS, transcriptText, whisperInference } from "./whisper.ts";
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
      "Chat completion with any LLM in the registry, loaded on first use. Reasoning is off by default so small max_tokens budgets go to the answer; pass chat_template_kwargs {enable_thinking: true} to turn it on.",
    inputSchema: {
      type: "object",
      properties: {
        model: { type: "string", description: "Model name, e.g. Qwen3-1.7B-GGUF." },
        messages: { type: "array", items: { type: "object" }, description: "OpenAI-style messages." },
        max_tokens: { type: "integer" },
        temperature: { type: "number" },
        tools: { type: "array", items: { type: "object" } },
        tool_choice: {},
        chat_template_kwargs: { type: "object" },
      },
      required: ["model", "messages"],
    },
  },
  {
    name: "lemonade_transcribe_audio",
    description: "Transcribe a local audio file with a Whisper-class model. Prefer audio_path; use audio_base64 only for bytes in memory.",
    inputSchema: {
      type: "object",
      properties: {
        model: { type: "string" },
        audio_path: { type: "string" },
        audio_base64: { type: "string" },
        language: { type: "string" },
        response_format: { type: "string", enum: ["json", "verbose_json", "text", "srt", "vtt"] },
      },
      required: ["model"],
    },
  },
  {
    name: "lemonade_generate_image",
    description:
      "Generate PNG images from a prompt. Prefer output_path (one image) or output_dir (several): both are confined to the server's MCP image folder.",
    inputSchema: {
      type: "object",
      properties: {
        model: { type: "string" },
        prompt: { type: "string" },
        size: { type: "string", description: "WIDTHxHEIGHT, e.g. 512x512." },
        n: { type: "integer", minimum: 1 },
        output_path: { type: "string" },
        output_dir: { type: "string" },
      },
      required: ["model", "prompt"],
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

/** Resolves a client-named path inside the sandbox folder; refuses `..` and symlink escapes. */
export function sandboxPath(root: string, requested: string): string {
  mkdirSync(root, { recursive: true });
  const realRoot = realpathSync(root);
  const target = resolve(realRoot, requested);
  const inside = (p: string) => {
    const rel = relative(realRoot, p);
    return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
  };
  if (!inside(target)) throw new ToolError(`Path ${requested} is outside the MCP image folder ${realRoot}`);
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
  if (!inside(realpathSync(probe))) throw new ToolError(`Path ${requested} leads out of the MCP image folder through a link`);
  return target;
}

function requireString(args: Json, key: string): string {
  const v = args[key];
  if (typeof v !== "string" || !v) throw new ToolError(`Argument '${key}' is required and must be a non-empty string`);
  return v;
}

function requireMessages(args: Json): unknown[] {
  if (!Array.isArray(args.messages) || args.messages.length === 0) throw new ToolError("Missing or non-array argument: messages");
  return args.messages;
}

/** The collection lemonade_omni runs when none is named (its default, as Lemonade's). */
const DEFAULT_OMNI = "LMX-Omni-5.5B-Lite";

/** What lemonade_list_models reports, as Lemonade's gateway does: the loaded models as
 * /v1/health lists them; the downloaded and the suggested ones by the ids /v1/models lists them
 * by (names every other tool takes). */
async function listModelsTool(ctx: Pick<ServerContext, "catalog" | "proxy" | "scheduler">, args: Json): Promise<ToolResult> {
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
  const line = loaded.length
    ? `Loaded models: ${loaded.map((m) => `${m.model_name} (${m.type})`).join(", ")}. ${recommended ? `Use \`${recommended}\` for chat unless the user asks otherwise.` : ""}`
    : `No models are currently loaded. Downloaded: ${available.map((m) => m.model_name).join(", ") || "none"}.`;
  return toolResult([text(line.trim()), text(JSON.stringify(summary))]);
}

/** A tool that found no model to run and asks the caller to name one or allow the default's
 * download (Lemonade's `needs_model` answer). */
function needsModel(kind: string, defaultModel: string, hint: string): ToolResult {
  const status = { status: "needs_model", tool_type: kind, default_model: defaultModel, retry_with: { model: hint, allow_download: true } };
  const message = `No ${kind} model is currently loaded or downloaded on this lemonade server. Re-call this tool with an explicit \`model\` (${hint}; call \`lemonade_list_models\` to see what's available), or pass \`allow_download: true\` to download and load the default (${defaultModel}), which may be a multi-GB download.`;
  return { content: [text(message), text(JSON.stringify(status))], isError: true };
}

async function chatTool(ctx: Pick<ServerContext, "proxy">, args: Json, signal: AbortSignal): Promise<ToolResult> {
  const model = requireString(args, "model");
  const messages = requireMessages(args);
  const body: Json = {
    messages,
    chat_template_kwargs: { enable_thinking: false, ...(isJson(args.chat_template_kwargs) ? args.chat_template_kwargs : {}) },
  };
  for (const k of ["max_tokens", "temperature", "tools", "tool_choice"]) if (args[k] !== undefined) body[k] = args[k];
  const res = await ctx.proxy.toModel({
    model,
    path: "/v1/chat/completions",
    body,
    check: (m) => (m.type === "llm" ? null : ApiError.of(E.notAnLlm, `Model ${m.id} is not a chat model; use lemonade_list_models to find one`)),
    signal,
    endpoint: "mcp_chat",
    generation: true,
  });
  const message = firstMessage(await res.json());
  return toolResult([text(typeof message.content === "string" ? message.content : ""), ...toolCallsText(message)]);
}

/** Checks a model exists and is of the kind a tool needs, before any file is touched. */
function modelOfType(ctx: Pick<ServerContext, "catalog">, name: string, type: string, hint: string) {
  const model = ctx.catalog.get(name);
  if (model.type !== type) throw new ToolError(`Model ${model.id} is not a ${type} model. ${hint}`);
  return model;
}

async function transcribeTool(ctx: Pick<ServerContext, "catalog" | "proxy">, args: Json, signal: AbortSignal): Promise<ToolResult> {
  const name = requireString(args, "model");
  if (!args.audio_path && !args.audio_base64) throw new ToolError("Pass 'audio_path' (preferred) or 'audio_base64'");
  if (args.audio_path) {
    try {
      accessSync(String(args.audio_path), constants.R_OK);
    } catch (err) {
      throw new ToolError(`Cannot read audio_path: ${(err as Error).message}`);
    }
  }
  const asked = args.response_format ?? "json";
  const format = TRANSCRIPTION_FORMATS.find((f) => f === asked);
  if (!format) throw new ToolError(`'response_format' must be one of ${TRANSCRIPTION_FORMATS.join(", ")}`);
  const model = modelOfType(ctx, name, "transcription", "Use a Whisper model such as Whisper-Tiny.");
  const audio = args.audio_path ? Bun.file(String(args.audio_path)) : new Blob([Buffer.from(String(args.audio_base64), "base64")]);
  const wav = await toWav16k(audio);
  const request = { wav, language: typeof args.language === "string" ? args.language : undefined, signal };
  const transcript = format === "json" ? await transcriptText(ctx, model.id, request) : await whisperInference(ctx, model.id, { ...request, format });
  return toolResult([text(transcript)]);
}

async function imageTool(ctx: Pick<ServerContext, "catalog" | "config" | "options" | "proxy">, args: Json, signal: AbortSignal): Promise<ToolResult> {
  const name = requireString(args, "model");
  requireString(args, "prompt");
  // Paths are checked first: a refused path is refused whatever the model.
  if (args.output_path !== undefined) sandboxPath(ctx.config.mcpImageDir, String(args.output_path));
  if (args.output_dir !== undefined) sandboxPath(ctx.config.mcpImageDir, String(args.output_dir));
  const model = modelOfType(ctx, name, "image", "Use lemonade_list_models to find an image model.");
  const request: Json = { model: model.id, prompt: args.prompt, n: typeof args.n === "number" ? args.n : 1 };
  if (typeof args.size === "string") request.size = args.size;
  const out = await generateImages(ctx, request, signal, "mcp_generate_image");
  const data: unknown[] = Array.isArray(out.data) ? out.data : [];
  const images = data.map((d) => Buffer.from(isJson(d) ? String(d.b64_json) : "", "base64"));
  if (args.output_path !== undefined) {
    // One named file: the first image, replacing what was there.
    const target = sandboxPath(ctx.config.mcpImageDir, String(args.output_path));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, images[0]!);
    return toolResult([text(target)]);
  }
  if (args.output_dir !== undefined) {
    const dir = sandboxPath(ctx.config.mcpImageDir, String(args.output_dir));
    mkdirSync(dir, { recursive: true });
    const stamp = Date.now();
    const paths = images.map((bytes, i) => {
      const path = join(dir, `image_${stamp}_${crypto.randomUUID().slice(0, 8)}_${i}.png`);
      writeFileSync(path, bytes);
      return path;
    });
    return toolResult([...paths.map((p) => text(p)), text(JSON.stringify({ paths }))]);
  }
  return toolResult(images.map((bytes) => ({ type: "image", data: bytes.toString("base64"), mimeType: "image/png" })));
}

async function omniTool(ctx: Pick<ServerContext, "catalog" | "config" | "library" | "logger" | "options" | "proxy" | "standIns">, args: Json, signal: AbortSignal): Promise<ToolResult> {
  const messages = requireMessages(args);
  // The folder is checked first: a refused path is refused whatever the model.
  const dir = args.output_dir !== undefined ? sandboxPath(ctx.config.mcpImageDir, String(args.output_dir)) : undefined;
  // Named, else a downloaded collection (no network), else the default only with allow_download.
  let name = typeof args.model === "string" && args.model ? args.model : ctx.catalog.all().find((m) => m.omni && ctx.catalog.isDownloaded(m))?.id;
  if (!name) {
    if (args.allow_download !== true) return needsModel("omni", DEFAULT_OMNI, "an Omni collection name, recipe=collection.omni");
    name = DEFAULT_OMNI;
  }
  const model = ctx.catalog.find(name);
  if (!model) {
    throw new ToolError(`Unknown model '${name}'. Call \`lemonade_list_models\` to discover available Omni collections (recipe = collection.omni), or omit \`model\` to use the default (${DEFAULT_OMNI}).`);
  }
  if (!model.omni) {
    throw new ToolError(`Model '${name}' is not an Omni collection (recipe='${model.recipe}'). Use \`lemonade_chat\` for plain LLMs, or pass an Omni collection name (e.g. ${DEFAULT_OMNI}).`);
  }
  const body: Json = { model: model.id, messages };
  for (const k of ["tools", "tool_choice", "max_tokens", "temperature"]) if (args[k] !== undefined) body[k] = args[k];
  const { answer, text: said, artifacts } = await omniTurn(ctx, ctx.catalog.get(model.id), body, signal);
  const content: Json[] = [text(said)];
  if (dir !== undefined) {
    mkdirSync(dir, { recursive: true });
    const stamp = Date.now();
    const paths = artifacts.map((a, i) => {
      const path = join(dir, `omni_${stamp}_${crypto.randomUUID().slice(0, 8)}_${i}.${a.type === "image" ? "png" : "mp3"}`);
      writeFileSync(path, Buffer.from(a.data, "base64"));
      return path;
    });
    content.push(...paths.map((p) => text(p)), text(JSON.stringify({ paths })));
  } else {
    content.push(...artifacts.map((a) => ({ type: a.type, data: a.data, mimeType: a.mimeType })));
  }
  content.push(...toolCallsText(firstMessage(answer)));
  return toolResult(content);
}

/** What the MCP tools use of the server. */
export type McpContext = Pick<ServerContext, "aliases" | "catalog" | "config" | "library" | "logger" | "options" | "proxy" | "recipeOptions" | "scheduler" | "standIns">;

async function callTool(ctx: McpContext, params: unknown, signal: AbortSignal): Promise<ToolResult> {
  const name = isJson(params) ? params.name : undefined;
  const args = (isJson(params) ? params.arguments : undefined) ?? {};
  if (typeof name !== "string") throw new RpcError(RPC.invalidParams, "tools/call needs params.name");
  if (!isJson(args)) throw new RpcError(RPC.invalidParams, "tools/call params.arguments must be an object");
  const tools: Record<string, () => Promise<ToolResult>> = {
    lemonade_list_models: () => listModelsTool(ctx, args),
    lemonade_chat: () => chatTool(ctx, args, signal),
    lemonade_transcribe_audio: () => transcribeTool(ctx, args, signal),
    lemonade_generate_image: () => imageTool(ctx, args, signal),
    lemonade_omni: () => omniTool(ctx, args, signal),
  };
  const tool = tools[name];
  // An unknown tool is the calling model's mistake to see and correct, like any tool failure.
  if (!tool) return { content: [text(`Unknown tool: ${name}; tools/list names the tools`)], isError: true };
  try {
    return await tool();
  } catch (err) {
    // Tool failures, whatever their kind, are results (mcp.md), so the calling model sees them
    // and can correct itself.
    return { content: [text(err instanceof ToolError || err instanceof ApiError ? err.message : `The tool failed: ${scrubPaths((err as Error).message)}`)], isError: true };
  }
}

async function dispatch(ctx: McpContext, msg: McpRequest, signal: AbortSignal): Promise<unknown> {
  switch (msg.method) {
    case "initialize": {
      const asked = isJson(msg.params) ? msg.params.protocolVersion : undefined;
      return {
        protocolVersion: PROTOCOL_VERSIONS.find((v) => v === asked) ?? PROTOCOL_VERSIONS[0],
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: "lemonade-mcp", version: VERSION },
        instructions: "Call lemonade_list_models first to learn the model names, then lemonade_chat.",
      };
    }
    case "ping":
      return {};
    case "tools/list":
      return { tools: TOOLS };
    case "tools/call":
      return callTool(ctx, msg.params, signal);
    default:
      throw new RpcError(RPC.methodNotFound, `Method not found: ${msg.method}`);
  }
}

type RpcId = McpResponse["id"];

const rpcError = (id: RpcId | undefined, code: number, message: string): McpResponse => ({ jsonrpc: "2.0", id: id ?? null, error: { code, message } });

const isId = (id: unknown): id is RpcId => id === null || typeof id === "string" || typeof id === "number";

/** One message as JSON-RPC 2.0 defines a request (a notification when it has no id). */
function isRequest(msg: unknown): msg is McpRequest {
  return isJson(msg) && msg.jsonrpc === "2.0" && typeof msg.method === "string" && (msg.id === undefined || isId(msg.id));
}

/** Answers one message; null for a notification (no id), which gets no answer. */
async function handleOne(ctx: McpContext, msg: unknown, signal: AbortSignal): Promise<McpResponse | null> {
  if (!isRequest(msg)) {
    const id = isJson(msg) && isId(msg.id) ? msg.id : null;
    return rpcError(id, RPC.invalidRequest, "Not a JSON-RPC 2.0 request: expected {jsonrpc: \"2.0\", method, id?, params?}");
  }
  const m = msg;
  const isNotification = !("id" in m);
  try {
    const result = await dispatch(ctx, m, signal);
    return isNotification ? null : { jsonrpc: "2.0", id: m.id ?? null, result };
  } catch (err) {
    if (isNotification) return null;
    if (err instanceof RpcError) return rpcError(m.id, err.code, err.message);
    ctx.logger.error("MCP", `${m.method} failed: ${(err as Error).message}`);
    return rpcError(m.id, RPC.internal, `Internal error: ${(err as Error).message}`);
  }
}

/** A body the server cannot take: a JSON-RPC error with no id. One that is not JSON is answered
 * 200, as every JSON-RPC error is (mcp.md's error model); one too large keeps its HTTP status. */
export function mcpBodyError(status: number, message: string): Response {
  if (status === 400) return Response.json(rpcError(null, /JSON/.test(message) ? RPC.parseError : RPC.invalidRequest, message));
  return Response.json(rpcError(null, RPC.invalidRequest, message), { status });
}

/** One POST /mcp: a message or a batch in, the answers out (202 when nothing needs one). */
export async function handleMcp(ctx: McpContext, raw: string, signal: AbortSignal): Promise<Response> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    return Response.json(rpcError(null, RPC.parseError, `Parse error: ${(err as Error).message}`));
  }
  if (!Array.isArray(parsed) && (typeof parsed !== "object" || parsed === null)) {
    return Response.json(rpcError(null, RPC.invalidRequest, "Not a JSON-RPC 2.0 request: expected {jsonrpc: \"2.0\", method, id?, params?}"));
  }
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) return Response.json(rpcError(null, RPC.invalidRequest, "Empty batch"));
    const answers = (await Promise.all(parsed.map((m) => handleOne(ctx, m, signal)))).filter((a) => a !== null);
    if (!answers.length) return new Response(null, { status: 202 });
    return Response.json(answers);
  }
  const answer = await handleOne(ctx, parsed, signal);
  return answer ? Response.json(answer) : new Response(null, { status: 202 });
}

