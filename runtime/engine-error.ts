// How an engine's failure reaches a client: its error answer (llama.cpp's and whisper.cpp's
// `{"error": {code, message, type}}`, or a bare string) becomes one ApiError of the row of its
// error type, and an engine that cannot be reached becomes a retryable 503. Messages never carry
// local file paths or the HTTP client's internals.
import { ApiError } from "../lib/api-error.ts";
import { scrubPaths } from "../lib/scrub.ts";
import { isJson, type Json } from "../lib/json.ts";
import { E, type ErrorRow } from "../spec/errors.ts";

/** llama-server's error types (whisper-server answers the same), each a row. */
const ENGINE_ROWS: Record<string, ErrorRow> = {
  [E.engineInvalidRequest.code]: E.engineInvalidRequest,
  [E.engineAuthentication.code]: E.engineAuthentication,
  [E.enginePermission.code]: E.enginePermission,
  [E.engineNotFound.code]: E.engineNotFound,
  [E.engineServer.code]: E.engineServer,
  [E.engineNotSupported.code]: E.engineNotSupported,
  [E.engineUnavailable.code]: E.engineUnavailable,
};

/** The engine's answer to a request that failed: normalised, with its own body in `details`. */
export function engineError(status: number, text: string, modelName: string): ApiError {
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the text is the message.
  }
  const raw = (isJson(body) ? body.error : undefined) ?? body;
  // An object is llama.cpp's `{message, type}`; an array says nothing of its own.
  const error: Json = isJson(raw) ? raw : Array.isArray(raw) ? {} : { message: String(raw ?? "") };
  const message = scrubPaths(String(error.message ?? "").trim()) || `The ${modelName} engine answered ${status}`;
  const details = typeof body === "object" && body !== null ? scrubDeep(body) : { message };
  if (error.type === "exceed_context_size_error") {
    return ApiError.of(E.contextLengthExceeded, message).with({ details, fromEngine: true });
  }
  const known = typeof error.type === "string" && Object.hasOwn(ENGINE_ROWS, error.type) ? ENGINE_ROWS[error.type] : undefined;
  const row = known ?? (status >= 400 && status < 500 ? E.engineRefused : E.engineFailed);
  // The engine's own status stands (the docs' "the backend's own status replaces this one").
  return ApiError.of(row, message).withStatus(status >= 400 ? status : 500).with({ details, fromEngine: true });
}

/** An engine that could not be reached, even after the model was loaded again. */
export function engineUnavailable(modelName: string, why: string): ApiError {
  return ApiError.of(E.backendUnavailable, `The ${modelName} engine ${why}; try again`).with({ retryable: true, fromEngine: true });
}

function scrubDeep(value: unknown): unknown {
  if (typeof value === "string") return scrubPaths(value);
  if (Array.isArray(value)) return value.map(scrubDeep);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubDeep(v)]));
  }
  return value;
}
