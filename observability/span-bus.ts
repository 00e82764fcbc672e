// Finished spans, published as OTLP/JSON span objects to whoever listens in-process: the
// /spans/stream WebSocket channel subscribes here. The tracer (observability/telemetry.ts) calls
// `publish` for each span it ends; a span carries who asked for it in two attributes, the salted
// hash of the caller's key (`lemon.auth_token_hash`) and the client's session id
// (`lemon.client_session_id`), which decide which connections may see it.

/** One OTLP/JSON attribute value (the kinds a span here carries). */
export type SpanAttributeValue = { stringValue: string } | { intValue: string | number } | { doubleValue: number } | { boolValue: boolean };

export interface SpanAttribute {
  key: string;
  value: SpanAttributeValue;
}

/** A finished span as OTLP/JSON writes it (`traceId`, `spanId`, `name`, times, `attributes`,
 * `status`, ...): only `attributes` is read here, everything else passes through as it is. */
export interface SpanEvent {
  attributes?: SpanAttribute[];
  [field: string]: unknown;
}

export type SpanListener = (span: SpanEvent) => void;

export const AUTH_TOKEN_HASH_ATTRIBUTE = "lemon.auth_token_hash";
export const CLIENT_SESSION_ID_ATTRIBUTE = "lemon.client_session_id";

/** A salt drawn once per process: the hash of a key is comparable within this server only. */
const SALT = Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join("");

/** The salted SHA-256 of a caller's key, as spans and channel connections record it; "" for none. */
export function hashToken(token: string): string {
  if (token === "") return "";
  return new Bun.CryptoHasher("sha256").update(SALT + token).digest("hex");
}

/** The attributes that tie a span to its caller: the key it presented and its session id
 * (`X-Client-Session-Id`); either is left out when absent. */
export function callerAttributes(token: string | null, clientSessionId: string | null): SpanAttribute[] {
  const attrs: SpanAttribute[] = [];
  if (token) attrs.push({ key: AUTH_TOKEN_HASH_ATTRIBUTE, value: { stringValue: hashToken(token) } });
  if (clientSessionId) attrs.push({ key: CLIENT_SESSION_ID_ATTRIBUTE, value: { stringValue: clientSessionId } });
  return attrs;
}

/** A string attribute's value, or "" when the span lacks it. */
export function stringAttribute(span: SpanEvent, key: string): string {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value && "stringValue" in value ? value.stringValue : "";
}

export class SpanBus {
  private readonly listeners = new Set<SpanListener>();

  /** Whether anyone listens: a tracer with no exporter configured builds spans only then. */
  get listening(): boolean {
    return this.listeners.size > 0;
  }

  subscribe(listener: SpanListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Hands a finished span to every listener; one listener's failure does not stop the others. */
  publish(span: SpanEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(span);
      } catch {
        // A closed socket's send throwing must not lose the span for the other listeners.
      }
    }
  }
}
