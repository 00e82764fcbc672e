// The Anthropic Messages dialect: forwarded to llama.cpp's own Anthropic layer, with unknown
// fields dropped (and named in a warning header), never refused.
import type { ApiError } from "../lib/api-error.ts";
import type { StreamRule } from "../runtime/proxy.ts";

/** `{"type": "error", "error": {type, message}}`: its SDKs read error.type and error.message. */
export function anthropicErrorBody(err: ApiError): unknown {
  return { type: "error", error: { type: err.type, message: err.message } };
}

/** A Messages stream ends with `message_stop`. */
export const messagesStream: StreamRule = {
  ending: (tail) => (tail.includes('"type":"message_stop"') ? "" : null),
  errorEvent: (message) => `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "api_error", message } })}\n\n`,
};

/** The fields llama.cpp's layer takes, and the names of the ones it would not. */
export function splitKnown(body: Record<string, unknown>, known: ReadonlySet<string>) {
  const kept: Record<string, unknown> = {};
  const ignored: string[] = [];
  for (const [k, v] of Object.entries(body)) (known.has(k) ? (kept[k] = v) : ignored.push(k));
  return { known: kept, ignored };
}
