// collection.omni on chat completions (openai.md § Server-Side Tools): the collection's chat
// component plans with the built-in tools (generate_image, edit_image, text_to_speech — those its
// components can serve) merged with the client's; the server runs the built-in calls against the
// components and feeds the results back, returns a client tool call to the client
// (`finish_reason: "tool_calls"`), and embeds the media it made in the assistant's `content`.
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { ServerContext } from "../runtime/context.ts";
import type { TargetKind } from "../runtime/targets.ts";
import { speak } from "./audio.ts";
import { edit, generateImages } from "./images.ts";
import { engineAnswer, hasVision, needsLlm, toEngineBody, type EngineAnswer, type EngineMessage, type EngineToolCall } from "./openai.ts";
import { asJson, isJson, jsonItems, type Json } from "../lib/json.ts";
import type { ChatCompletionRequest } from "../spec/openai.ts";

/** Rounds of tool calls one request may take before it ends with what it has. */
export const MAX_TOOL_ROUNDS = 6;
/** Media goes out in stream deltas of at most this many characters. */
const DELTA_CHARS = 16_000;

const SYSTEM_PROMPT =
  "You are a multimodal assistant. You can draw pictures with generate_image, change a picture with edit_image and speak text aloud with text_to_speech. Call a tool when the user asks for an image or for speech; otherwise answer in text. After a tool has run, tell the user briefly what you made.";

interface Roles {
  chat: CatalogModel;
  image?: CatalogModel;
  edit?: CatalogModel;
  tts?: CatalogModel;
}

/** Which component plays which part: the first chat model plans, the first image model draws, an
 * image model labelled `edit` edits, the first speech model speaks. */
export function omniRoles(ctx: Pick<ServerContext, "catalog">, collection: CatalogModel): Roles {
  const parts = (ctx.catalog.omniSpec(collection)?.components ?? []).map((name) => ctx.catalog.find(name)).filter((m): m is CatalogModel => m !== undefined);
  const chat = parts.find((m) => m.type === "llm");
  if (!chat) throw ApiError.of(E.invalidArgument, `Collection ${ctx.catalog.publicId(collection)} has no chat model among its components`, "model");
  return {
    chat,
    image: parts.find((m) => m.type === "image" && !m.labels.includes("edit")) ?? parts.find((m) => m.type === "image"),
    edit: parts.find((m) => m.type === "image" && m.labels.includes("edit")),
    tts: parts.find((m) => m.type === "tts"),
  };
}

const fn = (name: string, description: string, properties: Json, required: string[]) => ({ type: "function", function: { name, description, parameters: { type: "object", properties, required } } });

function builtinTools(roles: Roles): Json[] {
  const tools: Json[] = [];
  if (roles.image) tools.push(fn("generate_image", "Draw an image from a text description.", { prompt: { type: "string" }, size: { type: "string", description: "WIDTHxHEIGHT" } }, ["prompt"]));
  if (roles.edit) tools.push(fn("edit_image", "Change the last image of the conversation as described.", { prompt: { type: "string" } }, ["prompt"]));
  if (roles.tts) tools.push(fn("text_to_speech", "Speak text aloud.", { text: { type: "string" }, voice: { type: "string" } }, ["text"]));
  return tools;
}

const BUILTIN = new Set(["generate_image", "edit_image", "text_to_speech"]);

/** A file a built-in tool made: base64 bytes and their type. */
export interface Artifact {
  type: "image" | "audio";
  data: string;
  mimeType: "image/png" | "audio/mpeg";
}

interface ToolOutput {
  artifact: Artifact;
  /** The artifact as the assistant's content embeds it. */
  media: string;
  /** What the planner is told. */
  result: string;
}

const DATA_IMAGE = /data:image\/[\w.+-]+;base64,[A-Za-z0-9+/=]+/g;

/** The conversation's last image: one made this turn, else the last a message carries (an
 * `image_url` part, or media an earlier answer embedded). */
function lastImage(messages: Json[], artifacts: Artifact[]): Blob | null {
  const made = artifacts.filter((a) => a.type === "image").pop();
  const urls: string[] = made ? [`data:${made.mimeType};base64,${made.data}`] : [];
  for (const m of made ? [] : messages) {
    const parts = typeof m.content === "string" ? [m.content] : jsonItems(m.content).map((p) => (typeof p.text === "string" ? p.text : String(asJson(p.image_url).url ?? p.image_url ?? "")));
    for (const part of parts) urls.push(...(part.match(DATA_IMAGE) ?? []));
  }
  const url = urls.pop();
  if (!url) return null;
  const [head, data] = url.split(",") as [string, string];
  return new Blob([Buffer.from(data, "base64")], { type: head.slice("data:".length, head.indexOf(";")) });
}

/** Runs one built-in call. */
async function runTool(ctx: Pick<ServerContext, "catalog" | "logger" | "options" | "proxy" | "standIns">, roles: Roles, name: string, args: Json, context: { messages: Json[]; artifacts: Artifact[] }, signal: AbortSignal): Promise<ToolOutput> {
  if (name === "generate_image" || name === "edit_image") {
    const model = name === "edit_image" ? (roles.edit ?? roles.image) : roles.image;
    if (!model) throw new Error(`${name} has no image model in this collection`);
    let answer: Json;
    if (name === "edit_image") {
      const image = lastImage(context.messages, context.artifacts);
      if (!image) throw new Error("there is no image in the conversation to edit");
      const form = new FormData();
      form.set("model", model.id);
      form.set("prompt", String(args.prompt ?? ""));
      form.set("response_format", "b64_json");
      form.set("image", image, "image.png");
      answer = asJson(await (await edit(ctx, new Request("http://omni.local/v1/images/edits", { method: "POST", body: form, signal }), "edit", "omni")).json());
    } else {
      answer = await generateImages(ctx, { model: model.id, prompt: String(args.prompt ?? ""), ...(args.size ? { size: String(args.size) } : {}), response_format: "b64_json" }, signal, "omni");
    }
    const b64 = jsonItems(answer.data)[0]?.b64_json;
    if (typeof b64 !== "string" || !b64) throw new Error(`${ctx.catalog.publicId(model)} returned no image`);
    return { artifact: { type: "image", data: b64, mimeType: "image/png" }, media: `![generated image](data:image/png;base64,${b64})`, result: "The image was generated and shown to the user." };
  }
  if (!roles.tts) throw new Error("text_to_speech has no speech model in this collection");
  const res = await speak(ctx, { model: roles.tts.id, input: String(args.text ?? ""), ...(args.voice ? { voice: String(args.voice) } : {}), response_format: "mp3" }, signal);
  const audio = Buffer.from(await res.arrayBuffer()).toString("base64");
  return { artifact: { type: "audio", data: audio, mimeType: "audio/mpeg" }, media: `<audio>data:audio/mpeg;base64,${audio}</audio>`, result: "The speech was generated and played to the user." };
}

async function complete(ctx: Pick<ServerContext, "proxy">, roles: Roles, messages: Json[], tools: unknown[], body: Json, signal: AbortSignal): Promise<EngineAnswer> {
  // The Lemonade extensions (thinking, max_completion_tokens, ctx_size, ...) as a plain chat has them.
  const { engineBody, loadOptions } = toEngineBody(body);
  const { model: _m, messages: _x, tools: _t, stream: _s, stream_options: _o, route_trace: _r, ...rest } = engineBody;
  const res = await ctx.proxy.toModel({
    model: roles.chat.id,
    path: "/v1/chat/completions",
    body: { ...rest, messages, ...(tools.length ? { tools } : {}), stream: false },
    loadOptions,
    check: needsLlm(),
    signal,
    endpoint: "chat_completions",
    generation: true,
  });
  return engineAnswer(await res.json());
}

/** What one turn made: the chat completion (media embedded in its content), the planner's own
 * text, and the artifacts in the order they were made. */
export interface OmniTurn {
  answer: EngineAnswer;
  text: string;
  artifacts: Artifact[];
}

/** The built-in system prompt, before the client's: in the client's own system message when it
 * opens with one (some chat templates take a single system message), else a message of its own. */
function withSystemPrompt(prompt: string, messages: Json[]): Json[] {
  const [first, ...rest] = messages;
  if (first?.role === "system" && typeof first.content === "string") return [{ ...first, content: `${prompt}\n\n${first.content}` }, ...rest];
  return [{ role: "system", content: prompt }, ...messages];
}

const EMBEDDED_MEDIA = /!\[[^\]]*\]\(data:image\/[^)]+\)|<audio>\s*data:audio\/[^<]+<\/audio>/g;

/** The conversation as the planner reads it: media earlier answers embedded become a short note
 * (their base64 would fill its context), and attached images a note when it cannot see. The
 * tools still find the images in the client's own messages. */
function forPlanner(messages: Json[], sees: boolean): Json[] {
  return messages.map((m) => {
    const { content } = m;
    if (typeof content === "string") return content.includes("data:") ? { ...m, content: content.replace(EMBEDDED_MEDIA, (x) => (x.startsWith("!") ? "(an image was shown)" : "(speech was played)")) } : m;
    if (sees || !Array.isArray(content)) return m;
    return { ...m, content: content.map((p: unknown) => (isJson(p) && p.type === "image_url" ? { type: "text", text: "(an image is attached)" } : p)) };
  });
}

/** What a collection.omni turn uses of the server. */
type OmniContext = Pick<ServerContext, "catalog" | "library" | "logger" | "options" | "proxy" | "standIns">;

/** The loop; `emit` receives content as it is made (media the moment its tool finishes). */
async function run(ctx: OmniContext, collection: CatalogModel, body: Json, signal: AbortSignal, emit: (content: string) => void): Promise<OmniTurn> {
  // A collection is downloaded on first use, components and all.
  await ctx.library.ensureDownloaded(collection);
  const roles = omniRoles(ctx, collection);
  const clientTools: unknown[] = Array.isArray(body.tools) ? body.tools : [];
  const tools = [...builtinTools(roles), ...clientTools];
  const prompt = ctx.catalog.omniSpec(collection)?.systemPrompt ?? SYSTEM_PROMPT;
  const conversation = jsonItems(body.messages);
  const messages = withSystemPrompt(prompt, forPlanner(conversation, hasVision(roles.chat)));
  let content = "";
  const texts: string[] = [];
  const artifacts: Artifact[] = [];
  const add = (text: string) => {
    content += text;
    emit(text);
  };
  /** The answer to send: the last upstream one, with the turn's content and the finish it had. */
  const finish = (answer: EngineAnswer, message: EngineMessage, reason: string, toolCalls: EngineToolCall[] = []): OmniTurn => {
    const choice = { ...(answer.choices?.[0] ?? { index: 0 }), message: { ...message, role: "assistant", content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) }, finish_reason: reason };
    if (!toolCalls.length) delete choice.message.tool_calls;
    return { answer: { ...answer, choices: [choice] }, text: texts.join("\n\n"), artifacts };
  };
  let last: EngineAnswer & Json = { object: "chat.completion", created: Math.floor(Date.now() / 1000) };
  for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
    const answer = await complete(ctx, roles, messages, tools, body, signal);
    last = answer;
    const message = answer.choices?.[0]?.message ?? {};
    const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
    const ours = calls.filter((c) => BUILTIN.has(c.function?.name ?? ""));
    const theirs = calls.filter((c) => !BUILTIN.has(c.function?.name ?? ""));
    if (message.content) {
      texts.push(String(message.content));
      if (!ours.length) add(`${content ? "\n\n" : ""}${message.content}`);
    }
    if (!ours.length) return finish(answer, message, theirs.length ? "tool_calls" : (answer.choices?.[0]?.finish_reason ?? "stop"), theirs);
    messages.push({ role: "assistant", content: message.content ?? null, tool_calls: ours });
    for (const call of ours) {
      const name = call.function?.name ?? "";
      let args: Json = {};
      try {
        args = asJson(JSON.parse(String(call.function?.arguments ?? "{}")));
      } catch {
        // The planner's arguments are not JSON: the tool runs with none, and says what went wrong.
      }
      try {
        const { artifact, media, result } = await runTool(ctx, roles, name, args, { messages: conversation, artifacts }, signal);
        artifacts.push(artifact);
        add(content ? `\n\n${media}` : media);
        messages.push({ role: "tool", tool_call_id: call.id, content: result });
      } catch (err) {
        messages.push({ role: "tool", tool_call_id: call.id, content: `The tool failed: ${(err as Error).message}` });
      }
    }
    // The client's own calls in the same round go back to it, with the media made so far.
    if (theirs.length) return finish(answer, message, "tool_calls", theirs);
  }
  const stopped = `(Stopped after ${MAX_TOOL_ROUNDS} rounds of tool calls.)`;
  texts.push(stopped);
  add(`${content ? "\n\n" : ""}${stopped}`);
  return finish(last, {}, "length");
}

/** One whole turn, for callers that take the artifacts apart (MCP's lemonade_omni). */
export function omniTurn(ctx: OmniContext, collection: CatalogModel, body: Json, signal: AbortSignal): Promise<OmniTurn> {
  return run(ctx, collection, body, signal, () => {});
}

/** A chat completion chunk of one stream (every chunk carries the stream's id). */
const chunk = (id: string, model: string, delta: Json, finish: string | null = null) =>
  `data: ${JSON.stringify({ id, object: "chat.completion.chunk", model, created: Math.floor(Date.now() / 1000), choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** A chat completions request naming an omni collection: one answer, or a stream of its content. */
export async function omniChat(ctx: OmniContext, collection: CatalogModel, body: ChatCompletionRequest, signal: AbortSignal): Promise<Response> {
  const name = body.model;
  if (body.stream !== true) {
    const { answer } = await run(ctx, collection, body, signal, () => {});
    return Response.json({ ...answer, model: body.model });
  }
  const id = `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`;
  const usage = body.stream_options?.include_usage === true;
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (s: string) => controller.enqueue(encoder.encode(s));
      send(chunk(id, name, { role: "assistant", content: "" }));
      try {
        const { answer } = await run(ctx, collection, body, signal, (text) => {
          for (let i = 0; i < text.length; i += DELTA_CHARS) send(chunk(id, name, { content: text.slice(i, i + DELTA_CHARS) }));
        });
        const choice = answer.choices?.[0] ?? {};
        if (choice.message?.tool_calls) send(chunk(id, name, { tool_calls: choice.message.tool_calls.map((c, index) => ({ index, ...c })) }, "tool_calls"));
        else send(chunk(id, name, {}, choice.finish_reason === "length" ? "length" : "stop"));
        // OpenAI's usage chunk: no choices, the last round's counts.
        if (usage && answer.usage) send(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", model: name, created: Math.floor(Date.now() / 1000), choices: [], usage: answer.usage })}\n\n`);
      } catch (err) {
        // The documented error in a stream: `Error: <message>` as content, then a stop.
        send(chunk(id, name, { content: `Error: ${(err as Error).message}` }));
        send(chunk(id, name, {}, "stop"));
      }
      send("data: [DONE]\n\n");
      controller.close();
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}

/** collection.omni models: loading one loads its components; a chat naming one runs the tool loop. */
export function omniKind(ctx: OmniContext & Pick<ServerContext, "scheduler">): TargetKind {
  return {
    claims: (model) => model.omni !== undefined,
    target: (model) => ({
      speaks: "openai",
      async load({ name }) {
        await ctx.library.ensureDownloaded(model);
        const parts = ctx.catalog.omniSpec(model)!.components.map((c) => ctx.catalog.get(c));
        // Each component loads with its own options, not the request's.
        for (const part of parts) {
          // Speech an in-process recipe (espeak-ng) serves has no engine to start.
          if (part.type === "tts" && ctx.standIns.serving(part, "speech")) continue;
          await ctx.scheduler.load(part, {});
        }
        return { message: `Loaded ${name}: ${parts.map((p) => ctx.catalog.publicId(p)).join(", ")}`, checkpoint: "", tookOptions: false };
      },
      forward(req) {
        // Only a chat body has `messages`: the check narrows the client's body to one.
        if (req.path !== "/v1/chat/completions" || !req.client || !("messages" in req.client)) {
          throw ApiError.of(E.omniChatOnly, `Model ${ctx.catalog.publicId(model)} is a collection.omni, which serves chat completions only`, "model");
        }
        return omniChat(ctx, model, req.client, req.signal);
      },
    }),
  };
}
