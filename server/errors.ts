// Errors as clients see them. Handlers throw ApiError; the app turns it into the body shape of the
// route's family: OpenAI's `{"error": {message, type, code, param}}` or Ollama's `{"error": "..."}`.
import type { ErrorStyle } from "../spec/endpoint.ts";
import type { ErrorRow } from "../spec/errors.ts";

const TYPE_BY_STATUS: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  405: "invalid_request_error",
  409: "conflict_error",
  501: "not_implemented_error",
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param?: string,
    /** The error's type, where the docs name one; else derived from the status. */
    private readonly explicitType?: string,
  ) {
    super(message);
    this.name = "ApiError";
  }

  /** An error of a documented row, with a message saying what exactly went wrong. */
  static of(row: ErrorRow, message: string, param?: string): ApiError {
    return new ApiError(row.status, row.code, message, param);
  }

  get type(): string {
    if (this.explicitType) return this.explicitType;
    return TYPE_BY_STATUS[this.status] ?? (this.status >= 500 ? "server_error" : "invalid_request_error");
  }
}

export function errorBody(err: ApiError, style: ErrorStyle): unknown {
  if (style === "ollama") return { error: err.message };
  // Anthropic's shape; its SDKs read error.type and error.message.
  if (style === "anthropic") return { type: "error", error: { type: err.type, message: err.message } };
  const error: Record<string, string> = { message: err.message, type: err.type };
  if (err.code) error.code = err.code;
  if (err.param) error.param = err.param;
  return { error };
}

export function errorResponse(err: ApiError, style: ErrorStyle, headers: Record<string, string> = {}): Response {
  return Response.json(errorBody(err, style), { status: err.status, headers });
}
