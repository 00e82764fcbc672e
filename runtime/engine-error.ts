// How an engine's failure reaches a client: its error answer (llama.cpp's and whisper.cpp's
// `{"error": {code, message, type}}`, or a bare string) becomes one ApiError with Lemonade's type
// and code, and an engine that cannot be reached becomes a retryable 503. Messages never carry
// local file paths or the HTTP client's internals.
import { ApiError } from "../lib/api-error.ts";
import { scrubPaths } from "../lib/scrub.ts";

/** The engine's answer to a request that failed: normalised, with its own body in `details`. */
export function engineError(status: number, text: string, modelId: string): ApiError {
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the text is the message.
  }
  const raw = (body as { error?: unknown } | null)?.error ?? body;
  const error = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : { message: String(raw ?? "") };
  const message = scrubPaths(String(error.message ?? "").trim()) || `The ${modelId} engine answered ${status}`;
  const details = typeof body === "object" && body !== null ? scrubDeep(body) : { message };
  if (error.type === "exceed_context_size_error") {
    const err = new ApiError(400, "context_length_exceeded", message, undefined, "invalid_request_error");
    return err.with({ details, fromEngine: true });
  }
  const code = typeof error.type === "string" && error.type ? error.type : status >= 500 ? "backend_error" : "invalid_request";
  const type = status >= 400 && status < 500 ? "invalid_request_error" : "backend_error";
  return new ApiError(status >= 400 ? status : 500, code, message, undefined, type).with({ details, fromEngine: true });
}

/** An engine that could not be reached, even after the model was loaded again. */
export function engineUnavailable(modelId: string, why: string): ApiError {
  return new ApiError(503, "backend_unavailable", `The ${modelId} engine ${why}; try again`, undefined, "backend_error").with({ retryable: true, fromEngine: true });
}

function scrubDeep(value: unknown): unknown {
  if (typeof value === "string") return scrubPaths(value);
  if (Array.isArray(value)) return value.map(scrubDeep);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubDeep(v)]));
  }
  return value;
}
