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
  notSupportedOllama: row(501, "", "Lemonade does not support this Ollama operation"),
  internal: row(500, "", "The request fails unexpectedly"),
} as const;

export type ErrorName = keyof typeof E;
