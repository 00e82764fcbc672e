// The one error type handlers and services throw. Each protocol adapter renders it in its own
// body shape (protocols/*/errors); the HTTP layer picks the adapter from the route's spec.

/** The parts of a documented error row (spec/errors.ts) an error is made from. */
export interface ErrorRowLike {
  status: number;
  code: string;
}

const TYPE_BY_STATUS: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  405: "invalid_request_error",
  409: "conflict_error",
  501: "not_implemented_error",
};

/** Fields some errors carry beside message/type/code: the engine's own error body (`details`),
 * whether sending the request again may succeed (`retryable`). */
export interface ErrorExtras {
  details?: unknown;
  retryable?: boolean;
  /** The engine answered with (or failed with) this error, rather than the server refusing the request. */
  fromEngine?: boolean;
  /** Seconds a client should wait before sending it again (the Retry-After header). */
  retryAfterS?: number;
  /** Documented fields of the error object beside message/type/code (`env_var` of auth_conflict). */
  fields?: Record<string, unknown>;
}

export class ApiError extends Error {
  extras: ErrorExtras = {};

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
  static of(row: ErrorRowLike, message: string, param?: string): ApiError {
    return new ApiError(row.status, row.code, message, param);
  }

  with(extras: ErrorExtras): this {
    this.extras = { ...this.extras, ...extras };
    return this;
  }

  get type(): string {
    if (this.explicitType) return this.explicitType;
    return TYPE_BY_STATUS[this.status] ?? (this.status >= 500 ? "server_error" : "invalid_request_error");
  }
}
