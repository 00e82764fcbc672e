// The one error type handlers and services throw. Each protocol adapter renders it in its own
// body shape (protocols/*/errors); the HTTP layer picks the adapter from the route's spec.

/** The parts of a documented error row (spec/errors.ts) an error is made from. `when` is
 * required so that only a documented row, not an ad-hoc `{status, code}`, fits. */
export interface ErrorRowLike {
  status: number;
  code: string;
  when: string;
  type?: string;
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
  /** What failed, without the model's name, for a message that names the model itself. */
  reason?: string;
  /** Documented fields of the error object beside message/type/code (`env_var` of auth_conflict). */
  fields?: Record<string, unknown>;
}

export class ApiError extends Error {
  extras: ErrorExtras = {};

  readonly status: number;
  readonly code: string;

  // Protected: an error is made from a row (`ApiError.of`, or a subclass passing its row), so tsc
  // refuses an ad-hoc code.
  protected constructor(
    private readonly row: ErrorRowLike,
    message: string,
    readonly param?: string,
    status = row.status,
  ) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = row.code;
  }

  /** An error of a documented row, with a message saying what exactly went wrong. */
  static of(row: ErrorRowLike, message: string, param?: string): ApiError {
    return new ApiError(row, message, param);
  }

  /** The same error answered with another status: an engine's own status replaces its row's. */
  withStatus(status: number): ApiError {
    return new ApiError(this.row, this.message, this.param, status).with(this.extras);
  }

  /** The same error in other words (saying which step failed, say). */
  reworded(message: string): ApiError {
    return new ApiError(this.row, message, this.param, this.status).with(this.extras);
  }

  with(extras: ErrorExtras): this {
    this.extras = { ...this.extras, ...extras };
    return this;
  }

  get type(): string {
    if (this.row.type) return this.row.type;
    return TYPE_BY_STATUS[this.status] ?? (this.status >= 500 ? "server_error" : "invalid_request_error");
  }
}
