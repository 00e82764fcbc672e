// What a trace span records and the settings it is built under, shared by the span's capture
// (observability/telemetry.ts) and its export (observability/otlp.ts, loaded only when tracing).

export type Semantics = "openinference" | "otel_genai";

/** config.json's `telemetry` section, read. */
export interface TelemetrySettings {
  enabled: boolean;
  hideInputs: boolean;
  hideOutputs: boolean;
  hideThinking: boolean;
  /** Adopt a caller's W3C `traceparent`. */
  trustTraceContext: boolean;
  maxQueue: number;
  /** Longest text attribute, in bytes; longer ones are cut. */
  maxAttributeLength: number;
  endpoint: string;
  protocol: "http/protobuf" | "http/json";
  semantics: Semantics[];
  headers: Record<string, string>;
  maxRetries: number;
  backoffBaseS: number;
  batchSize: number;
  batchTimeoutS: number;
  /** Custom request headers a session id is read from, before the well-known ones. */
  sessionHeaders: string[];
  /** Custom request headers the client is named by, before the well-known ones. */
  clientHeaders: string[];
}

/** OpenInference's span kinds, as Lemonade records them. */
export type SpanKindName = "LLM" | "EMBEDDING" | "RERANKER";

export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface TokenUsage {
  prompt?: number;
  completion?: number;
  total?: number;
}

/** One ended inference span, as the exporter builds it into OpenTelemetry's. */
export interface SpanRecord {
  kind: SpanKindName;
  /** `chat.completions`, `completions`, `responses`, `embeddings`, `reranking`. */
  name: string;
  model: string;
  /** ms since the epoch, fractional. */
  startMs: number;
  endMs: number;
  /** The caller's `traceparent`, when trusted and sent (a malformed one starts a new root). */
  traceparent?: string;
  userId?: string;
  sessionId?: string;
  /** The `X-Client-Session-Id` a Lemonade client sent. */
  clientSessionId?: string;
  /** The API key the caller presented, for the /spans/stream channel's rules (hashed there, and
   * never exported). */
  callerKey?: string;
  /** The request's input, cut to length. */
  input: string;
  messages: { role: string; content: string }[];
  error?: string;
  /** The answer's text, thinking included as `<think>` blocks. */
  output: string;
  toolCalls: ToolCall[];
  usage: TokenUsage;
}

/** The exporter's side: what otlp.ts's `OtlpExporter` does. */
export interface SpanExporter {
  /** Queues the span for export; `onEnded` gets it as an OTLP/JSON span object once it has ended. */
  export(record: SpanRecord, settings: TelemetrySettings, onEnded?: (span: Record<string, unknown>) => void): void;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** Cuts text to `max` UTF-8 bytes (never inside a character), marked when cut. */
export function truncate(text: string, max: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= max) return text;
  const mark = "... [TRUNCATED]";
  const budget = max > mark.length ? max - mark.length : max;
  let end = budget;
  // Back off continuation bytes (10xxxxxx) so the cut falls on a character's start.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  const head = new TextDecoder().decode(bytes.subarray(0, end));
  return max > mark.length ? head + mark : head;
}
