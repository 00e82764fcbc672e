// The OTLP/HTTP exporter of observability/telemetry.ts, loaded only once telemetry is enabled: an
// ended request's record becomes an OpenTelemetry span (the SDK's tracer, the caller's W3C trace
// context as its parent when trusted), its attributes named by the OpenInference and
// OpenTelemetry GenAI conventions (either or both, in one span), queued in a bounded queue that
// drops its oldest span when full, and sent in batches as protobuf or JSON by the OTLP
// serializers, retried with backoff on transient failures and dropped on a refusal.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context } from "@opentelemetry/api";
import { parseTraceParent } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOnSampler, TracerProvider, type ReadableSpan, type SpanProcessor } from "@opentelemetry/sdk-trace";
import { JsonTraceSerializer, ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import {
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_SYSTEM,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from "@opentelemetry/semantic-conventions/incubating";
import { SemanticConventions as OI } from "@arizeai/openinference-semantic-conventions";
import type { Logger } from "./logger.ts";
import { truncate, type SpanExporter, type SpanRecord, type TelemetrySettings } from "./span-record.ts";

const SERVICE = "lemonade-server";
const REDACTED = "[REDACTED]";

/** Thinking blocks in the forms models write them, as one tag pair. */
const THINK_OPEN = /<\|think\|>|<thought>/g;
const THINK_CLOSE = /<\/\|think\|>|<\/think\|>|<\/thought>/g;

/** The output with its thinking removed (hide_thinking) or written as `<think>` blocks. */
function thinking(output: string, hide: boolean): string {
  const standard = output.replace(THINK_OPEN, "<think>").replace(THINK_CLOSE, "</think>");
  if (!hide) return standard;
  return standard.replace(/<think>[\s\S]*?(<\/think>|$)/g, "").trim();
}

/** The span's attributes in the conventions configured: every name from the conventions' packages. */
export function spanAttributes(r: SpanRecord, s: TelemetrySettings): Attributes {
  const a: Attributes = {};
  const max = s.maxAttributeLength;
  const input = s.hideInputs ? REDACTED : r.input;
  const content = (c: string) => (s.hideInputs ? REDACTED : c);
  const output = s.hideOutputs ? REDACTED : thinking(r.output, s.hideThinking);
  const toolsJson = JSON.stringify(r.toolCalls.map((t) => ({ id: t.id, type: "function", function: { name: t.name, arguments: t.arguments } })));
  const finalOutput = !output && r.toolCalls.length && !s.hideOutputs ? toolsJson : output;
  const llm = r.kind === "LLM";
  const { prompt, completion } = r.usage;
  const total = r.usage.total ?? (prompt !== undefined && completion !== undefined ? prompt + completion : undefined);
  const prefix = llm ? "llm" : r.kind === "EMBEDDING" ? "embedding" : "reranker";

  if (s.semantics.includes("openinference")) {
    a[OI.OPENINFERENCE_SPAN_KIND] = r.kind;
    a[llm ? OI.LLM_MODEL_NAME : r.kind === "EMBEDDING" ? OI.EMBEDDING_MODEL_NAME : OI.RERANKER_MODEL_NAME] = r.model;
    a[OI.INPUT_VALUE] = input;
    if (r.userId) a[OI.USER_ID] = r.userId;
    if (r.sessionId) a[OI.SESSION_ID] = r.sessionId;
    r.messages.forEach((m, i) => {
      a[`${OI.LLM_INPUT_MESSAGES}.${i}.${OI.MESSAGE_ROLE}`] = m.role;
      a[`${OI.LLM_INPUT_MESSAGES}.${i}.${OI.MESSAGE_CONTENT}`] = content(m.content);
    });
    if (!r.error) {
      a[OI.OUTPUT_VALUE] = truncate(finalOutput, max);
      if (llm && (output || r.toolCalls.length)) {
        const out = `${OI.LLM_OUTPUT_MESSAGES}.0`;
        a[`${out}.${OI.MESSAGE_ROLE}`] = "assistant";
        if (output) a[`${out}.${OI.MESSAGE_CONTENT}`] = truncate(output, max);
        if (!s.hideOutputs) {
          r.toolCalls.forEach((t, i) => {
            const call = `${out}.${OI.MESSAGE_TOOL_CALLS}.${i}`;
            if (t.id) a[`${call}.${OI.TOOL_CALL_ID}`] = truncate(t.id, max);
            if (t.name) a[`${call}.${OI.TOOL_CALL_FUNCTION_NAME}`] = truncate(t.name, max);
            if (t.arguments) a[`${call}.${OI.TOOL_CALL_FUNCTION_ARGUMENTS_JSON}`] = truncate(t.arguments, max);
          });
        }
      }
      if (prompt !== undefined) a[`${prefix}.usage.prompt_tokens`] = a[OI.LLM_TOKEN_COUNT_PROMPT] = prompt;
      if (completion !== undefined) a[`${prefix}.usage.completion_tokens`] = a[OI.LLM_TOKEN_COUNT_COMPLETION] = completion;
      if (total !== undefined) a[`${prefix}.usage.total_tokens`] = a[OI.LLM_TOKEN_COUNT_TOTAL] = total;
    }
  }

  if (s.semantics.includes("otel_genai")) {
    a[ATTR_GEN_AI_OPERATION_NAME] = r.kind === "EMBEDDING" ? "embeddings" : r.kind === "RERANKER" ? "rerank" : r.name === "completions" ? "completion" : "chat";
    a[ATTR_GEN_AI_REQUEST_MODEL] = r.model;
    a[ATTR_GEN_AI_PROVIDER_NAME] = "lemonade";
    a[ATTR_GEN_AI_SYSTEM] = "lemonade";
    if (r.sessionId) a[ATTR_GEN_AI_CONVERSATION_ID] = r.sessionId;
    r.messages.forEach((m, i) => {
      a[`${ATTR_GEN_AI_INPUT_MESSAGES}.${i}.role`] = m.role;
      a[`${ATTR_GEN_AI_INPUT_MESSAGES}.${i}.content`] = content(m.content);
    });
    if (!r.error) {
      if (prompt !== undefined) a[ATTR_GEN_AI_USAGE_INPUT_TOKENS] = prompt;
      if (completion !== undefined) a[ATTR_GEN_AI_USAGE_OUTPUT_TOKENS] = completion;
      if (llm && output) {
        a[`${ATTR_GEN_AI_OUTPUT_MESSAGES}.0.role`] = "assistant";
        a[`${ATTR_GEN_AI_OUTPUT_MESSAGES}.0.content`] = truncate(output, max);
      }
    }
  }
  if (r.clientSessionId) a["lemon.client_session_id"] = truncate(r.clientSessionId, max);
  return a;
}

/** Where a batch goes: spans queued under other settings go where those said. */
interface Destination {
  endpoint: string;
  protocol: TelemetrySettings["protocol"];
  headers: Record<string, string>;
}

/** The exporter's headers: the configured ones, then OTEL_EXPORTER_OTLP_HEADERS; never a
 * content type or length, nor a name or value that could split the request. */
function exportHeaders(configured: Record<string, string>, env: string | undefined, logger: Logger): Record<string, string> {
  const out: Record<string, string> = {};
  const pairs = [
    ...Object.entries(configured),
    ...(env ?? "").split(",").flatMap((item) => {
      const eq = item.indexOf("=");
      return eq > 0 ? [[item.slice(0, eq), item.slice(eq + 1)] as [string, string]] : [];
    }),
  ];
  for (const [rawKey, rawValue] of pairs) {
    const key = rawKey.trim();
    const value = rawValue.trim();
    if (!key) continue;
    if (/[\r\n\0]/.test(key + value)) {
      logger.warn("Telemetry", "Rejected an OTLP header whose name or value holds CR, LF or NUL");
      continue;
    }
    if (["content-type", "content-length"].includes(key.toLowerCase())) {
      logger.warn("Telemetry", `The OTLP header ${key} is set by the exporter and cannot be overridden`);
      continue;
    }
    out[key] = value;
  }
  return out;
}

interface Queued {
  span: ReadableSpan;
  dest: Destination;
  at: number;
}

const sameDest = (a: Destination, b: Destination) =>
  a.endpoint === b.endpoint && a.protocol === b.protocol && JSON.stringify(a.headers) === JSON.stringify(b.headers);

/** The span processor: a bounded queue (its oldest span dropped when full), exported in batches
 * of `send_batch_size` or after `batch_timeout_s`, one batch at a time. */
class OtlpQueue implements SpanProcessor {
  private readonly queue: Queued[] = [];
  private dropped = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private sending: Promise<void> | null = null;
  /** Cuts a retry's backoff short (a flush or shutdown). */
  private wake: (() => void) | null = null;
  private flushing = false;
  /** Where each started span goes, and the settings it ended under. */
  readonly routes = new WeakMap<object, { dest: Destination; settings: TelemetrySettings }>();

  constructor(
    private readonly deps: { logger: Logger; fetch: typeof fetch; settings: () => TelemetrySettings },
  ) {}

  onStart(): void {}

  onEnding(): void {}

  onEnd(span: ReadableSpan): void {
    const next = this.routes.get(span);
    if (!next) return;
    if (this.queue.length >= next.settings.maxQueue) {
      this.queue.shift();
      this.dropped++;
      if (this.dropped % 100 === 1) this.deps.logger.warn("Telemetry", `Telemetry queue full (capacity ${next.settings.maxQueue}): dropped the oldest span. Total dropped: ${this.dropped}`);
    }
    this.queue.push({ span, dest: next.dest, at: Date.now() });
    this.schedule();
  }

  /** Sends a batch when one is full or its oldest span has waited long enough. */
  private schedule(): void {
    if (this.sending || !this.queue.length) return;
    const s = this.deps.settings();
    const waited = Date.now() - this.queue[0]!.at;
    if (this.queue.length >= s.batchSize || waited >= s.batchTimeoutS * 1000) {
      this.clearTimer();
      this.sending = this.drain(false)
        .catch((err: Error) => this.deps.logger.error("Telemetry", `Exporting spans failed: ${err.message}`))
        .finally(() => {
          this.sending = null;
          this.schedule();
        });
      return;
    }
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.schedule();
      }, s.batchTimeoutS * 1000 - waited);
      this.timer.unref?.();
    }
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Sends batches: while each is due, or (`all`) until the queue is empty. */
  private async drain(all: boolean): Promise<void> {
    for (;;) {
      const s = this.deps.settings();
      if (!this.queue.length) return;
      if (!all && this.queue.length < s.batchSize && Date.now() - this.queue[0]!.at < s.batchTimeoutS * 1000) return;
      const dest = this.queue[0]!.dest;
      const batch: ReadableSpan[] = [];
      for (let i = 0; i < this.queue.length && batch.length < s.batchSize; ) {
        if (sameDest(this.queue[i]!.dest, dest)) batch.push(this.queue.splice(i, 1)[0]!.span);
        else i++;
      }
      await this.send(batch, dest);
    }
  }

  /** One batch to the collector: a success, a refusal (4xx but 429: dropped at once), or a
   * transient failure retried up to `max_retries` times with exponential backoff and jitter. */
  private async send(batch: ReadableSpan[], dest: Destination): Promise<void> {
    const json = dest.protocol === "http/json";
    const body = (json ? JsonTraceSerializer : ProtobufTraceSerializer).serializeRequest(batch);
    if (!body) return;
    const { logger } = this.deps;
    for (let attempt = 0; ; attempt++) {
      let detail: string;
      let retryable = true;
      try {
        const res = await this.deps.fetch(dest.endpoint, {
          method: "POST",
          headers: { ...dest.headers, "content-type": json ? "application/json" : "application/x-protobuf" },
          body: body as Uint8Array<ArrayBuffer>,
          signal: AbortSignal.timeout(10_000),
        });
        const answer = await res.text().catch(() => "");
        if (res.ok) {
          logger.debug("Telemetry", `Sent ${batch.length} span(s) to ${dest.endpoint}`);
          return;
        }
        detail = `status ${res.status}: ${answer.slice(0, 200)}`;
        retryable = !(res.status >= 400 && res.status < 500 && res.status !== 429);
      } catch (err) {
        detail = (err as Error).message;
      }
      logger.error("Telemetry", `Failed to send a telemetry batch to ${dest.endpoint} (${detail}); the receiver may be down or unreachable`);
      if (!retryable) {
        logger.warn("Telemetry", `Telemetry batch of ${batch.length} span(s) dropped: the receiver refused it`);
        return;
      }
      const { maxRetries, backoffBaseS } = this.deps.settings();
      if (this.flushing || attempt >= maxRetries) {
        logger.warn("Telemetry", maxRetries > 0 ? `Telemetry batch dropped after ${maxRetries} retries` : "Telemetry batch dropped (retries disabled)");
        return;
      }
      const delayS = Math.min(backoffBaseS * 2 ** Math.min(attempt, 10), 60) * (0.5 + Math.random());
      logger.debug("Telemetry", `Retrying the batch in ${delayS.toFixed(2)} s (attempt ${attempt + 1} of ${maxRetries})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayS * 1000);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
      if (this.flushing) {
        logger.debug("Telemetry", "A flush cut the batch's retries short");
        return;
      }
    }
  }

  /** Sends everything queued now, the batch in flight first (its retries cut short). */
  async forceFlush(): Promise<void> {
    this.flushing = true;
    try {
      this.wake?.();
      this.clearTimer();
      while (this.sending) await this.sending;
      await this.drain(true);
    } finally {
      this.flushing = false;
    }
  }

  shutdown(): Promise<void> {
    return this.forceFlush();
  }
}

/** One ended span as OTLP/JSON writes it (the same encoding the JSON exporter sends). */
function otlpJsonSpan(span: ReadableSpan): Record<string, unknown> {
  const request = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest([span])));
  return request.resourceSpans?.[0]?.scopeSpans?.[0]?.spans?.[0] ?? {};
}

export class OtlpExporter implements SpanExporter {
  private readonly queue: OtlpQueue;
  private readonly provider: TracerProvider;
  private readonly tracer;
  /** The exporter's headers for the configured ones, worked out (and warned about) once. */
  private headers: { from: Record<string, string>; out: Record<string, string> } | null = null;

  constructor(private readonly deps: { version: string; logger: Logger; fetch: typeof fetch; settings: () => TelemetrySettings }) {
    this.queue = new OtlpQueue(deps);
    this.provider = new TracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: SERVICE, [ATTR_SERVICE_VERSION]: deps.version }),
      // Every request is traced; a caller's unsampled flag does not hide Lemonade's own span.
      sampler: new AlwaysOnSampler(),
      // Lengths are cut by max_attribute_length; the count is the conventions' (one per message).
      spanLimits: { attributeCountLimit: 100_000 },
      spanProcessors: [this.queue],
    });
    this.tracer = this.provider.getTracer(SERVICE, deps.version);
  }

  /** The caller's trace, when it sent a valid `traceparent` (any version but ff; 00 exactly). */
  private parent(traceparent: string | undefined): Context {
    const parsed = traceparent ? parseTraceParent(traceparent.trim().toLowerCase()) : null;
    return parsed ? trace.setSpanContext(ROOT_CONTEXT, { ...parsed, isRemote: true }) : ROOT_CONTEXT;
  }

  export(record: SpanRecord, settings: TelemetrySettings, onEnded?: (span: Record<string, unknown>) => void): void {
    const span = this.tracer.startSpan(record.name, { kind: SpanKind.SERVER, startTime: record.startMs, attributes: spanAttributes(record, settings) }, this.parent(record.traceparent));
    span.setStatus(record.error ? { code: SpanStatusCode.ERROR, message: record.error } : { code: SpanStatusCode.OK });
    if (this.headers?.from !== settings.headers) {
      this.headers = { from: settings.headers, out: exportHeaders(settings.headers, process.env.OTEL_EXPORTER_OTLP_HEADERS, this.deps.logger) };
    }
    this.queue.routes.set(span, { settings, dest: { endpoint: settings.endpoint, protocol: settings.protocol, headers: this.headers.out } });
    span.end(record.endMs);
    if (onEnded) onEnded(otlpJsonSpan(span as unknown as ReadableSpan));
  }

  flush(): Promise<void> {
    return this.queue.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.queue.shutdown();
  }
}
