// The Anthropic Messages dialect, adapted onto the OpenAI chat path: a Messages request becomes a
// chat completion for llama.cpp, its answer (JSON or stream) becomes a Message. llama.cpp has a
// native Messages layer, but it reports stop sequences as `end_turn`, treats a named tool choice
// as any tool, drops `output_config`, cannot turn thinking off, and names the model by its file;
// this adapter does each of those as Anthropic's API does. Unknown fields are dropped and named in
// a warning, never refused.
import { ApiError } from "../lib/api-error.ts";
import { E, MODEL_ERROR_CODES } from "../spec/errors.ts";
import { sseFramer, type StreamRule } from "../runtime/stream-pump.ts";
import { anthropic as spec } from "../spec/index.ts";
import { asJson, jsonItems, type Json } from "../lib/json.ts";
import type { MessagesRequest, MessagesResponse } from "../spec/anthropic.ts";
import { engineAnswer, type EngineAnswer, type EngineToolCall } from "./openai.ts";
import { loadFailed } from "./ollama.ts";

/** Anthropic's error types by status; another 4xx is the caller's to fix, another 5xx the API's. */
const ANTHROPIC_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  409: "conflict_error",
  413: "request_too_large",
  429: "rate_limit_error",
  504: "timeout_error",
  529: "overloaded_error",
};

/** `{"type": "error", "error": {type, message}}`: its SDKs read error.type and error.message, and
 * the type is Anthropic's name for the status, whatever the error's own type elsewhere. */
export function anthropicErrorBody(err: ApiError): unknown {
  const type = ANTHROPIC_TYPES[err.status] ?? (err.status >= 400 && err.status < 500 ? "invalid_request_error" : "api_error");
  const message = err.code === E.missingArgument.code && err.param ? `${err.param} is required` : err.message;
  return { type: "error", error: { type, message } };
}

/** The loading errors a Messages request answers as Lemonade's does, the model not found: every
 * model error but a residency conflict, which keeps its 409. */
const LOAD_FAILURES = new Set(MODEL_ERROR_CODES.filter((code) => code !== E.routerResidencyConflict.code));

/** A failed load of `model` as Anthropic's route answers it (404, whatever failed; a residency
 * conflict keeps its 409); any other failure passes unchanged. */
export function messagesLoadError(model: string) {
  return (err: unknown): never => {
    if (err instanceof ApiError && !err.extras.fromEngine && LOAD_FAILURES.has(err.code)) {
      throw ApiError.of(E.messagesLoadFailed, loadFailed(model));
    }
    throw err;
  };
}

function errorEvent(err: ApiError): string {
  return `event: error\ndata: ${JSON.stringify(anthropicErrorBody(err))}\n\n`;
}

const KNOWN = new Set<string>(spec.MESSAGES_FIELDS);

/** The fields the adapter takes, and the names of the ones it would not. */
export function splitKnown(body: Json, known: ReadonlySet<string> = KNOWN): { known: Json; ignored: string[] } {
  const kept: Json = {};
  const ignored: string[] = [];
  for (const [k, v] of Object.entries(body)) (known.has(k) ? (kept[k] = v) : ignored.push(k));
  return { known: kept, ignored };
}

/** How the warning header joins its warnings, as Lemonade's adapter does. */
export const WARNING_SEPARATOR = " | ";

/** What a Messages request has that the adapter drops, in Lemonade's words: each field it does
 * not take, `metadata` (taken, never used), a `beta` query value other than `true`. */
export function messagesWarnings(body: Json, beta: string | null): string[] {
  const { ignored } = splitKnown(body);
  const dropped = body.metadata !== undefined ? ["metadata", ...ignored] : ignored;
  return [...(beta !== null && beta !== "true" ? [`Ignored unsupported beta query value: ${beta}`] : []), ...dropped.map((k) => `Ignored '${k}' field`)];
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : jsonItems(content)
        .filter((b) => b.type === "text")
        .map((b) => b.text)
        .join("\n");

function imagePart(block: Json): Json {
  const src = asJson(block.source);
  const url = src.type === "url" ? src.url : `data:${String(src.media_type ?? "image/png")};base64,${String(src.data ?? "")}`;
  return { type: "image_url", image_url: { url } };
}

/** Anthropic messages (and `system`) → OpenAI chat messages. */
export function toChatMessages(system: unknown, messages: MessagesRequest["messages"]): Json[] {
  const out: Json[] = [];
  const sys = textOf(system);
  if (sys) out.push({ role: "system", content: sys });
  for (const m of messages) {
    if (typeof m.content === "string") {
      out.push({ role: m.role, content: m.content });
      continue;
    }
    const parts: Json[] = [];
    const toolCalls: Json[] = [];
    let reasoning = "";
    for (const b of jsonItems(m.content)) {
      if (b.type === "text") parts.push({ type: "text", text: b.text });
      else if (b.type === "image") parts.push(imagePart(b));
      else if (b.type === "thinking") reasoning += String(b.thinking ?? "");
      else if (b.type === "tool_use") {
        toolCalls.push({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
      } else if (b.type === "tool_result") {
        out.push({ role: "tool", tool_call_id: b.tool_use_id, content: typeof b.content === "string" ? b.content : textOf(b.content) });
      }
    }
    if (!parts.length && !toolCalls.length && !reasoning) continue;
    const msg: Json = { role: m.role, content: parts.every((p) => p.type === "text") ? parts.map((p) => p.text).join("\n") : parts };
    if (toolCalls.length) msg.tool_calls = toolCalls;
    if (reasoning) msg.reasoning_content = reasoning;
    out.push(msg);
  }
  return out;
}

const TOOL_CHOICES: Record<string, string> = { auto: "auto", any: "required", none: "none", tool: "required" };

/** A Messages request → the chat completion body llama.cpp runs. */
export function toChatBody(body: MessagesRequest): Json {
  const out: Json = {
    model: body.model,
    messages: toChatMessages(body.system, body.messages),
    max_tokens: body.max_tokens,
    // Which stop sequence ended the answer is only in llama.cpp's verbose fields.
    verbose: true,
    response_fields: ["stopping_word"],
  };
  for (const k of ["temperature", "top_p", "top_k"] as const) if (body[k] !== undefined) out[k] = body[k];
  if (body.stop_sequences !== undefined) out.stop = body.stop_sequences;
  const toolChoice = asJson(body.tool_choice);
  if (Array.isArray(body.tools) && body.tools.length) {
    const tools = jsonItems(body.tools).map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description ?? "", parameters: t.input_schema ?? { type: "object" } },
    }));
    // llama.cpp takes no named function (it would treat one as `auto`): a call is required, and
    // the named tool is the only one offered.
    out.tools = toolChoice.type === "tool" ? tools.filter((t) => t.function.name === toolChoice.name) : tools;
  }
  const choice = typeof toolChoice.type === "string" && Object.hasOwn(TOOL_CHOICES, toolChoice.type) ? TOOL_CHOICES[toolChoice.type] : undefined;
  if (choice) out.tool_choice = choice;
  if (toolChoice.disable_parallel_tool_use) out.parallel_tool_calls = false;
  const thinking = asJson(body.thinking);
  if (thinking.type === "disabled") out.chat_template_kwargs = { enable_thinking: false };
  else if (thinking.type === "enabled") {
    out.chat_template_kwargs = { enable_thinking: true };
    if (typeof thinking.budget_tokens === "number") out.thinking_budget_tokens = thinking.budget_tokens;
  }
  // `output_config` is a field the adapter takes that the definition does not name.
  const { output_config }: Json = body;
  const format = asJson(asJson(output_config).format);
  if (format.type === "json_schema") {
    out.response_format = { type: "json_schema", json_schema: { name: "output", schema: format.schema ?? { type: "object" } } };
  }
  if (body.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return out;
}

/** Why generation stopped, as Anthropic names it. */
function stopReason(finish: string | null | undefined, stoppingWord: string | undefined): { stop_reason: string; stop_sequence: string | null } {
  if (finish === "tool_calls") return { stop_reason: "tool_use", stop_sequence: null };
  if (finish === "length") return { stop_reason: "max_tokens", stop_sequence: null };
  if (stoppingWord) return { stop_reason: "stop_sequence", stop_sequence: stoppingWord };
  return { stop_reason: "end_turn", stop_sequence: null };
}

function usageOf(usage: EngineAnswer["usage"]) {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    input_tokens: Math.max(0, (usage?.prompt_tokens ?? 0) - cached),
    output_tokens: usage?.completion_tokens ?? 0,
    cache_read_input_tokens: cached,
  };
}

const messageId = (id: unknown) => `msg_${String(id ?? crypto.randomUUID()).replace(/^chatcmpl-/, "")}`;

function toolInput(args: unknown): unknown {
  if (typeof args !== "string") return args ?? {};
  try {
    return JSON.parse(args || "{}");
  } catch {
    return {};
  }
}

/** A Message as the adapter answers it: the definition's, with Anthropic's `stop_sequence`, the
 * cache count in `usage`, and the warnings about dropped fields. */
export type Message = MessagesResponse & {
  stop_sequence: string | null;
  usage: { cache_read_input_tokens: number };
  warnings?: string[];
};

/** Whether a Messages request asked for thinking blocks: Anthropic's API sends them only then. */
export const wantsThinking = (body: MessagesRequest): boolean => asJson(body.thinking).type === "enabled";

/** A chat completion → a Message, named as the client named the model: thinking (when asked for),
 * then a text block (always, empty when nothing else came, as Lemonade's adapter answers), then
 * the tool calls. */
export function toMessage(chat: EngineAnswer, model: string, warnings: string[], thinking = false): Message {
  const choice = chat.choices?.[0] ?? {};
  const msg = choice.message ?? {};
  const content: Json[] = [];
  if (thinking && msg.reasoning_content) content.push({ type: "thinking", thinking: msg.reasoning_content, signature: "" });
  const calls = msg.tool_calls ?? [];
  if (msg.content || !calls.length) content.push({ type: "text", text: msg.content ?? "" });
  for (const c of calls) content.push({ type: "tool_use", id: c.id, name: c.function?.name, input: toolInput(c.function?.arguments) });
  const out: Message = {
    id: messageId(chat.id),
    type: "message",
    role: "assistant",
    model,
    content,
    ...stopReason(choice.finish_reason, chat.__verbose?.stopping_word),
    usage: usageOf(chat.usage),
  };
  if (warnings.length) out.warnings = warnings;
  return out;
}

const sse = (type: string, data: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** Anthropic's framing: SSE, its `ping` event for the keep-alive, its error event. */
const anthropicFramer = sseFramer(errorEvent, sse("ping", {}));

/** A provider that speaks Anthropic's API itself: its events pass through as they are. */
export const anthropicPassthrough: StreamRule = {
  framer: anthropicFramer,
  ending: (tail) => (tail.includes("message_stop") ? "" : null),
};

/** The stream rule for one Messages request: chat chunks become Anthropic's events (thinking
 * events only when the request asked for thinking). */
export function messagesStream(model: string, warnings: string[], thinking = false): StreamRule {
  return {
    framer: anthropicFramer,
    translate: () => {
      let started = false;
      let finished = false;
      let block: { kind: string; index: number; toolIndex?: number } | null = null;
      let nextIndex = 0;
      // Whether a text or tool block was sent: with neither, the answer still gets an empty text block.
      let answered = false;
      let finish: string | undefined;
      let stoppingWord: string | undefined;
      let usage: EngineAnswer["usage"];
      const open = (kind: string, contentBlock: Json, toolIndex?: number) => {
        let out = close();
        block = { kind, index: nextIndex++, toolIndex };
        out += sse("content_block_start", { index: block.index, content_block: contentBlock });
        return out;
      };
      const close = () => {
        if (!block) return "";
        const out = sse("content_block_stop", { index: block.index });
        block = null;
        return out;
      };
      const start = (id: unknown) => {
        if (started) return "";
        started = true;
        const message: Json = { id: messageId(id), type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
        return sse("message_start", { message });
      };
      return {
        event(data) {
          if (data === "[DONE]") {
            finished = true;
            let out = start(undefined);
            if (!answered) out += open("text", { type: "text", text: "" });
            out += close();
            const delta = stopReason(finish, stoppingWord);
            // The warnings ride on message_delta, as Lemonade's adapter sends them.
            return out + sse("message_delta", { delta, usage: usageOf(usage), ...(warnings.length ? { warnings } : {}) }) + sse("message_stop", {});
          }
          const ev = engineAnswer(JSON.parse(data));
          let out = start(ev.id);
          if (ev.usage) usage = ev.usage;
          if (ev.__verbose?.stopping_word) stoppingWord = ev.__verbose.stopping_word;
          const choice = ev.choices?.[0];
          if (!choice) return out;
          const d = choice.delta ?? {};
          if (thinking && d.reasoning_content) {
            if (block?.kind !== "thinking") out += open("thinking", { type: "thinking", thinking: "", signature: "" });
            out += sse("content_block_delta", { index: block!.index, delta: { type: "thinking_delta", thinking: d.reasoning_content } });
          }
          if (d.content) {
            answered = true;
            if (block?.kind !== "text") out += open("text", { type: "text", text: "" });
            out += sse("content_block_delta", { index: block!.index, delta: { type: "text_delta", text: d.content } });
          }
          for (const tc of d.tool_calls ?? ([] as EngineToolCall[])) {
            answered = true;
            if (tc.id || block?.kind !== "tool" || block.toolIndex !== tc.index) {
              out += open("tool", { type: "tool_use", id: tc.id, name: tc.function?.name ?? "", input: {} }, tc.index);
            }
            if (tc.function?.arguments) {
              out += sse("content_block_delta", { index: block!.index, delta: { type: "input_json_delta", partial_json: tc.function.arguments } });
            }
          }
          if (choice.finish_reason) finish = choice.finish_reason;
          return out;
        },
        end: () => (finished ? "" : null),
      };
    },
  };
}
