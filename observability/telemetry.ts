// OpenTelemetry tracing of inference requests (Lemonade's telemetry guide): one span per chat,
// completion, responses, embeddings or rerank request, exported over OTLP/HTTP to the configured
// collector. This module gathers what a span records while its request runs (the request's
// input, the session it belongs to, the caller's trace context, the answer or the failure) and
// holds the `telemetry.*` settings, changed live. The OpenTelemetry packages are loaded
// (observability/otlp.ts) only once telemetry is enabled, so that a server that never traces
// never pays for them in memory.
import { isJson, jsonItems, type Json } from "../lib/json.ts";
import { headerApiKey } from "../lib/api-key.ts";
import type { Logger } from "./logger.ts";
import { callerAttributes, type SpanAttribute, type SpanBus } from "./span-bus.ts";
import { truncate, type Semantics, type SpanExporter, type SpanKindName, type SpanRecord, type TelemetrySettings, type TokenUsage, type ToolCall } from "./span-record.ts";

const headerList = (v: unknown): string[] => (typeof v === "string" ? [v] : Array.isArray(v) ? v.filter((h): h is string => typeof h === "string") : []).map((h) => h.trim()).filter(Boolean);
const num = (v: unknown, d: number) => (typeof v === "number" && Number.isFinite(v) ? v : d);
const bool = (v: unknown) => v === true;

/** The settings from the effective configuration's `telemetry` object (defaults where absent). */
export function telemetrySettings(section: unknown): TelemetrySettings {
  const t = isJson(section) ? section : {};
  const otlp = isJson(t.otlp) ? t.otlp : {};
  const session = isJson(t.session) && isJson(t.session.headers) ? t.session.headers : {};
  const headers = isJson(otlp.headers) ? otlp.headers : {};
  const semantics = Array.isArray(otlp.semantics) ? otlp.semantics.filter((s): s is Semantics => s === "openinference" || s === "otel_genai") : ["openinference", "otel_genai"];
  return {
    enabled: bool(t.enabled),
    hideInputs: bool(t.hide_inputs),
    hideOutputs: bool(t.hide_outputs),
    hideThinking: bool(t.hide_thinking),
    trustTraceContext: bool(t.trust_incoming_trace_context),
    maxQueue: Math.max(1, num(t.max_queue_capacity, 1000)),
    maxAttributeLength: Math.max(1, num(t.max_attribute_length, 4096)),
    endpoint: typeof otlp.endpoint === "string" ? otlp.endpoint : "http://localhost:4318/v1/traces",
    protocol: otlp.protocol === "http/json" ? "http/json" : "http/protobuf",
    semantics: semantics as Semantics[],
    headers: Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => typeof e[1] === "string")),
    maxRetries: Math.max(0, num(otlp.max_retries, 0)),
    backoffBaseS: Math.max(0, num(otlp.retry_backoff_base_s, 5)),
    batchSize: Math.max(1, num(otlp.send_batch_size, 100)),
    batchTimeoutS: Math.max(0.001, num(otlp.batch_timeout_s, 1)),
    sessionHeaders: headerList(session.id),
    clientHeaders: headerList(session.client),
  };
}

/** Session headers coding agents and Lemonade's clients send, in the order they are read. */
const SESSION_HEADERS = ["x-opencode-session", "x-session-id", "x-client-session-id", "mcp-session-id", "x-conversation-id", "session-id"];
const CLIENT_HEADERS = ["x-opencode-client", "x-client-id", "x-client-name"];

/** The first non-empty value among the headers named. */
function firstHeader(headers: Headers, names: string[]): string {
  for (const name of names) {
    const value = headers.get(name)?.trim();
    if (value) return value;
  }
  return "";
}

const text = (v: unknown): string => (typeof v === "string" ? v : v === undefined ? "" : JSON.stringify(v));

/** The input of a request body, by kind: the messages of a chat, a prompt, an embedding's input. */
function inputOf(kind: SpanKindName, body: Json, max: number): Pick<SpanRecord, "input" | "messages"> {
  if (kind === "EMBEDDING") return { input: truncate(text(body.input ?? body), max), messages: [] };
  if (kind === "RERANKER") return { input: truncate(JSON.stringify(body), max), messages: [] };
  const items = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : null;
  if (items) {
    return {
      input: truncate(JSON.stringify(items), max),
      messages: jsonItems(items).map((m) => ({ role: typeof m.role === "string" ? m.role : "user", content: truncate(text(m.content), max) })),
    };
  }
  const prompt = typeof body.prompt === "string" ? body.prompt : typeof body.input === "string" ? body.input : null;
  if (prompt !== null) {
    const input = truncate(prompt, max);
    return { input, messages: [{ role: "user", content: input }] };
  }
  return { input: truncate(JSON.stringify(body), max), messages: [] };
}

/** What an answer (whole, or the events of a stream) says: text, thinking, tool calls, tokens. */
class AnswerReader {
  content = "";
  reasoning = "";
  readonly toolCalls: ToolCall[] = [];
  usage: TokenUsage = {};

  /** A whole JSON answer, or one event of a stream. */
  read(answer: Json, streamed: boolean): void {
    this.readUsage(answer);
    const type = typeof answer.type === "string" ? answer.type : "";
    if (type === "response.output_text.delta" || type === "response.reasoning_text.delta") {
      if (type === "response.output_text.delta") this.content += text(answer.delta);
      else this.reasoning += text(answer.delta);
      return;
    }
    if (type.startsWith("response.")) {
      // A Responses stream's final event carries the whole response: read it once, at its end.
      if (isJson(answer.response) && type === "response.completed" && !this.content) this.readResponse(answer.response);
      else if (isJson(answer.response)) this.readUsage(answer.response);
      return;
    }
    if (Array.isArray(answer.output)) return this.readResponse(answer);
    // Anthropic's Messages API, from a provider that speaks it: text and thinking blocks or deltas.
    if (type === "message" || type === "message_start" || type === "content_block_delta" || type === "message_delta") {
      if (isJson(answer.message)) this.readUsage(answer.message);
      const parts = type === "message" ? jsonItems(answer.content) : isJson(answer.delta) ? [answer.delta] : [];
      for (const part of parts) {
        if (typeof part.text === "string") this.content += part.text;
        if (typeof part.thinking === "string") this.reasoning += part.thinking;
      }
      return;
    }
    const [choice] = jsonItems(answer.choices);
    if (!choice) return;
    const part = isJson(choice.delta) ? choice.delta : isJson(choice.message) ? choice.message : choice;
    if (typeof part.content === "string") this.content += part.content;
    if (typeof choice.text === "string") this.content += choice.text;
    if (typeof part.reasoning_content === "string") this.reasoning += part.reasoning_content;
    for (const call of jsonItems(part.tool_calls)) {
      const fn = isJson(call.function) ? call.function : {};
      const index = streamed && typeof call.index === "number" ? call.index : this.toolCalls.length;
      const entry = (this.toolCalls[index] ??= { id: "", name: "", arguments: "" });
      if (typeof call.id === "string") entry.id = call.id;
      if (typeof fn.name === "string") entry.name += fn.name;
      entry.arguments += text(fn.arguments);
    }
  }

  private readResponse(response: Json): void {
    this.readUsage(response);
    for (const item of jsonItems(response.output)) {
      if (item.type === "function_call") {
        this.toolCalls.push({ id: text(item.call_id ?? item.id), name: text(item.name), arguments: text(item.arguments) });
        continue;
      }
      for (const part of jsonItems(item.content)) {
        if (typeof part.text !== "string") continue;
        if (item.type === "reasoning") this.reasoning += part.text;
        else this.content += part.text;
      }
    }
  }

  private readUsage(answer: Json): void {
    const u = isJson(answer.usage) ? answer.usage : null;
    const t = isJson(answer.timings) ? answer.timings : null;
    const n = (v: unknown) => (typeof v === "number" ? v : undefined);
    if (u) {
      const prompt = n(u.prompt_tokens) ?? n(u.input_tokens);
      const completion = n(u.completion_tokens) ?? n(u.output_tokens);
      this.usage = { prompt: prompt ?? this.usage.prompt, completion: completion ?? this.usage.completion, total: n(u.total_tokens) ?? this.usage.total };
    } else if (t && this.usage.prompt === undefined) {
      this.usage = { prompt: n(t.prompt_n), completion: n(t.predicted_n) };
    }
  }

  /** The answer's text, its thinking first as a `<think>` block. */
  output(): string {
    return this.reasoning ? `<think>\n${this.reasoning}\n</think>\n${this.content}` : this.content;
  }
}

/** What a span knows when it starts. */
export type SpanStart = Omit<SpanRecord, "endMs" | "output" | "toolCalls" | "usage" | "error">;

/** One inference request's span while it runs: started by a route, ended once (the first end wins). */
export class InferenceSpan {
  private ended = false;
  private readonly answer = new AnswerReader();
  private readonly decoder = new TextDecoder();
  private pending = "";
  private streamed = false;

  constructor(
    private readonly record: SpanStart,
    /** Where the ended span goes (the server's Telemetry queues it for export). */
    private readonly submit: (record: SpanRecord) => void,
  ) {}

  /** A chunk of the engine's event stream (SSE), read for the answer's text and tokens. */
  chunk(bytes: Uint8Array): void {
    this.streamed = true;
    const blocks = (this.pending + this.decoder.decode(bytes, { stream: true })).replace(/\r/g, "").split("\n\n");
    this.pending = blocks.pop()!;
    for (const block of blocks) this.event(block);
  }

  private event(block: string): void {
    const data = block
      .split("\n")
      .filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(l[5] === " " ? 6 : 5))
      .join("\n");
    if (!data || data === "[DONE]") return;
    try {
      const parsed: unknown = JSON.parse(data);
      if (isJson(parsed)) this.answer.read(parsed, true);
    } catch {
      // Not JSON (a keep-alive, a partial line): nothing to read.
    }
  }

  /** The request succeeded: `body` is its whole answer (none for a stream, whose chunks were read). */
  succeed(body?: string): void {
    if (this.ended) return;
    if (this.streamed && this.pending.trim()) this.event(this.pending);
    if (!this.streamed && body) {
      try {
        const parsed: unknown = JSON.parse(body);
        if (isJson(parsed)) {
          if (this.record.kind === "LLM") this.answer.read(parsed, false);
          else this.readOther(parsed, body);
        }
      } catch {
        // An answer that is not JSON records no output.
      }
    }
    this.finish();
  }

  /** Embeddings and rerank answers: their token counts, and a short account of what came back. */
  private readOther(parsed: Json, body: string): void {
    this.answer.read(parsed, false);
    if (this.record.kind === "RERANKER") this.answer.content = body;
    else {
      const vectors = jsonItems(parsed.data);
      const dims = Array.isArray(vectors[0]?.embedding) ? vectors[0].embedding.length : 0;
      this.answer.content = `${vectors.length} embedding(s) of ${dims} dimensions`;
    }
  }

  /** The request failed: a load that failed, an engine error, a stream that broke off. */
  fail(message: string): void {
    if (this.ended) return;
    this.finish(message || "The request failed");
  }

  private finish(error?: string): void {
    this.ended = true;
    this.submit({
      ...this.record,
      endMs: performance.timeOrigin + performance.now(),
      output: error ? "" : this.answer.output(),
      toolCalls: error ? [] : this.answer.toolCalls.filter(Boolean),
      usage: error ? {} : this.answer.usage,
      ...(error ? { error } : {}),
    });
  }
}

export interface TelemetryHealth {
  enabled: boolean;
  captures?: ("inputs" | "outputs" | "thinking")[];
}

/** The server's tracing: its settings (live), the spans it starts, and their exporter, loaded on
 * first use. */
export class Telemetry {
  private current: TelemetrySettings = telemetrySettings({});
  private exporter: Promise<SpanExporter> | null = null;

  /** `spans`: where ended spans also go, with who asked for them, while a /spans/stream client
   * listens. */
  constructor(private readonly deps: { version: string; logger: Logger; fetch?: typeof fetch; spans?: SpanBus }) {}

  get settings(): TelemetrySettings {
    return this.current;
  }

  /** Takes new settings at once: the next span reads them, the exporter its next batch. */
  configure(settings: TelemetrySettings): void {
    const was = this.current;
    this.current = settings;
    if (settings.enabled !== was.enabled) this.deps.logger.info("Telemetry", `Telemetry ${settings.enabled ? "enabled" : "disabled"}`);
    else if (settings.enabled && settings.endpoint !== was.endpoint) this.deps.logger.info("Telemetry", `Telemetry endpoint changed to: ${settings.endpoint}`);
    if (settings.enabled) this.loadExporter();
  }

  private loadExporter(): Promise<SpanExporter> {
    this.exporter ??= import("./otlp.ts").then(
      (m) => new m.OtlpExporter({ version: this.deps.version, logger: this.deps.logger, fetch: this.deps.fetch ?? fetch, settings: () => this.current }),
    );
    return this.exporter;
  }

  /** The `telemetry` object of /v1/health. */
  health(): TelemetryHealth {
    const s = this.current;
    if (!s.enabled) return { enabled: false };
    const captures: TelemetryHealth["captures"] = [];
    if (!s.hideInputs) captures.push("inputs");
    if (!s.hideOutputs) captures.push("outputs");
    if (!s.hideThinking) captures.push("thinking");
    return { enabled: true, captures };
  }

  /** A span for an inference request, or undefined while telemetry is off. */
  start(kind: SpanKindName, name: string, model: string, body: Json, headers: Headers): InferenceSpan | undefined {
    const s = this.current;
    if (!s.enabled) return undefined;
    const max = s.maxAttributeLength;
    const session = typeof body.session_id === "string" ? truncate(body.session_id, max) : this.sessionOf(headers, max);
    const traceparent = s.trustTraceContext ? headers.get("traceparent") ?? undefined : undefined;
    const clientSessionId = headers.get("x-client-session-id") ?? undefined;
    const callerKey = headerApiKey(headers) ?? undefined;
    const record: SpanStart = {
      kind,
      name,
      model,
      startMs: performance.timeOrigin + performance.now(),
      ...inputOf(kind, body, max),
      ...(traceparent ? { traceparent } : {}),
      ...(typeof body.user === "string" ? { userId: truncate(body.user, max) } : {}),
      ...(session ? { sessionId: session } : {}),
      ...(clientSessionId ? { clientSessionId } : {}),
      ...(callerKey ? { callerKey } : {}),
    };
    return new InferenceSpan(record, (ended) => this.submit(ended));
  }

  /** The session named by the request's headers (configured ones first), as `<client>/<session>`
   * when a client header names the client. */
  private sessionOf(headers: Headers, max: number): string {
    const s = this.current;
    const session = firstHeader(headers, [...s.sessionHeaders, ...SESSION_HEADERS]);
    if (!session) return "";
    const client = firstHeader(headers, [...s.clientHeaders, ...CLIENT_HEADERS]);
    return truncate(client ? `${client}/${session}` : session, max);
  }

  /** An ended span, to the exporter's queue (with the settings in force as it ended). */
  submit(record: SpanRecord): void {
    const settings = this.current;
    if (!settings.enabled) return;
    this.loadExporter().then(
      (exporter) => exporter.export(record, settings, this.publisher(record)),
      (err: Error) => this.deps.logger.error("Telemetry", `The OpenTelemetry exporter could not be loaded: ${err.message}`),
    );
  }

  /** Hands the ended span to the span bus, tied to its caller, when a channel listens. */
  private publisher(record: SpanRecord): ((span: Record<string, unknown>) => void) | undefined {
    const bus = this.deps.spans;
    if (!bus?.listening) return undefined;
    const caller = callerAttributes(record.callerKey ?? null, record.clientSessionId ?? null);
    return (span) => {
      const attributes = Array.isArray(span.attributes) ? (span.attributes as SpanAttribute[]) : [];
      bus.publish({ ...span, attributes: [...attributes, ...caller] });
    };
  }

  /** Sends every queued span now (POST /internal/telemetry/flush); resolves once they are sent. */
  async flush(): Promise<void> {
    if (this.exporter) await (await this.exporter).flush();
  }

  /** Sends what is queued (server shutdown), waiting at most `limitMs` for the collector. */
  async shutdown(limitMs: number): Promise<void> {
    if (!this.exporter) return;
    const exporter = await this.exporter;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([exporter.shutdown(), new Promise<void>((resolve) => (timer = setTimeout(resolve, limitMs)))]);
    clearTimeout(timer);
  }
}
