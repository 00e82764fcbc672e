// The documented error rows. An endpoint lists the rows it can answer; the docs' Errors table is
// rendered from them, and server code raises errors by these same names so code and table agree.

export interface ErrorRow {
  status: number;
  /** The `error.code` field; empty where the docs give none. */
  code: string;
  /** The docs' "When" column. */
  when: string;
}

const row = (status: number, code: string, when: string): ErrorRow => ({ status, code, when });

export const E = {
  invalidJson: row(400, "invalid_json", "The body is not a JSON object"),
  payloadTooLarge: row(413, "payload_too_large", "The body is larger than LEMONADE_MAX_BODY_MB"),
  missingArgument: row(400, "missing_argument", "A required argument is missing"),
  invalidArgument: row(
    400,
    "invalid_argument",
    "An argument or a value nested in it has the wrong JSON type, or a value its schema does not list",
  ),
  unauthorized: row(401, "invalid_api_key", "`LEMONADE_API_KEY` is set and the request does not carry it"),
  adminUnauthorized: row(
    401,
    "invalid_api_key",
    "`LEMONADE_ADMIN_API_KEY` is set and the request does not carry it",
  ),
  aliasNotFound: row(404, "alias_not_found", "No alias of that name exists"),
  modelNotFound: row(404, "model_not_found", "The requested model is not in the registry"),
  modelNotSupported: row(
    404,
    "model_not_supported",
    "The requested model is filtered out on this system, such as a model whose recipe cannot run here",
  ),
  slotsPinned: row(
    409,
    "slots_pinned_error",
    "Every loaded model of the requested model's type is pinned, so none can be unloaded to make room",
  ),
  modelLoadError: row(
    500,
    "model_load_error",
    "Loading the requested model fails, such as a model that is not downloaded or a backend that does not start",
  ),
  optionsIoError: row(500, "internal_error", "Reading or saving the model's options fails, for example on an unwritable options file"),
  notSupportedOllama: row(501, "", "Lemonade does not support this Ollama operation"),
  internal: row(500, "", "The request fails unexpectedly"),
  backendError: row(500, "", "The backend reports an error; the backend's own status replaces this one when it sends one"),
} as const;

/** What any route that loads the model it names can answer. */
export const LOADING_ERRORS: ErrorRow[] = [E.modelNotSupported, E.modelNotFound, E.slotsPinned, E.backendError, E.modelLoadError];

export type ErrorName = keyof typeof E;
