// Turns whatever a request failed with (a framework parse or validation error, an ApiError from a
// handler, an unexpected throw) into the documented error, rendered by the protocol adapter whose
// shape the route's definition names, so no stack trace or HTML reaches a client.
import { ApiError } from "../lib/api-error.ts";
import { E, MODEL_ERROR_CODES } from "../spec/errors.ts";
import type { EndpointDef, ErrorStyle } from "../spec/endpoint.ts";
import { anthropicErrorBody } from "../protocols/anthropic.ts";
import { ollamaErrorBody } from "../protocols/ollama.ts";
import { openaiErrorBody } from "../protocols/openai.ts";

interface SchemaIssue {
  path: string;
  message: string;
  value: unknown;
}

/** `/b/c` -> `b.c`, `/messages/0/role` -> `messages[0].role`. */
export function fieldName(pointer: string): string {
  return pointer
    .split("/")
    .filter(Boolean)
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join("");
}

/** The first schema issue as a documented 400: missing_argument when the value is absent,
 * invalid_argument when it is there but wrong, invalid_json when the body is not an object. */
export function schemaIssueToError(on: string, issues: SchemaIssue[], rootValue: unknown, invalidFieldMessage?: EndpointDef["invalidFieldMessage"]): ApiError {
  if (on === "body" && (typeof rootValue !== "object" || rootValue === null || Array.isArray(rootValue))) {
    return ApiError.of(E.invalidJson, "The request body must be a JSON object");
  }
  const issue = issues[0];
  if (!issue) return ApiError.of(E.invalidArgument, `Invalid ${on}`);
  const field = fieldName(issue.path);
  const where = on === "query" ? "query parameter" : on === "params" ? "path parameter" : "argument";
  if (issue.value === undefined) {
    return ApiError.of(E.missingArgument, `Missing required ${where} '${field}'`, field);
  }
  const own = on === "body" ? invalidFieldMessage?.(issue.path.split("/").filter(Boolean)) : undefined;
  if (own) return ApiError.of(E.invalidArgument, own, field);
  const detail = issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
  return ApiError.of(E.invalidArgument, `Invalid ${where} '${field}': ${detail}`, field);
}

/** The error style of a path no definition matched (a 404): Ollama's root-level `/api/*`, else
 * OpenAI's (`/api/v0` and `/api/v1` are Lemonade prefixes). Matched routes use their definition's. */
export function unmatchedErrorStyle(pathname: string): ErrorStyle {
  return pathname.startsWith("/api/") && !/^\/api\/v[01](\/|$)/.test(pathname) ? "ollama" : "openai";
}

interface FrameworkError {
  code: string | number;
  error: unknown;
}

/** Maps an Elysia lifecycle error onto an ApiError. */
export function toApiError({ code, error }: FrameworkError, pathname: string, def?: EndpointDef): ApiError {
  if (error instanceof ApiError) return error;
  switch (code) {
    case "PARSE": {
      // Elysia wraps what the body parser threw (http/body.ts: size, depth, syntax).
      const cause = (error as Error)?.cause;
      return cause instanceof ApiError ? cause : ApiError.of(E.invalidJson, "The request body is not valid JSON");
    }
    case "VALIDATION": {
      const v = error as { type?: string; all?: SchemaIssue[]; value?: unknown };
      return schemaIssueToError(v.type ?? "body", v.all ?? [], v.value, def?.invalidFieldMessage);
    }
    case "NOT_FOUND":
      return ApiError.of(E.routeNotFound, `No route for ${pathname}`);
    default:
      return ApiError.of(E.unexpected, `Internal server error: ${(error as Error)?.message ?? String(error)}`);
  }
}

/** Lemonade's own endpoints document `{"status": "error", "message"}` (unload) and `{"error":
 * "<string>"}` (pull); one body carries both, and the code clients branch on. */
function lemonadeErrorBody(err: ApiError): unknown {
  const body: Record<string, unknown> = { status: "error", message: err.message, error: err.message, type: err.type };
  if (err.code) body.code = err.code;
  if (err.param) body.param = err.param;
  if (err.extras.retryable !== undefined) body.retryable = err.extras.retryable;
  if (err.extras.details !== undefined) body.details = err.extras.details;
  return body;
}

const MODEL_ERRORS = new Set(MODEL_ERROR_CODES);

/** lemonade.md's `{"status": "error", "message"}` with the code beside it, as on Lemonade's other
 * routes, and the error object Lemonade's clients read it from. */
function lemonadeModelErrorBody(err: ApiError): unknown {
  const model = MODEL_ERRORS.has(err.code);
  const error: Record<string, unknown> = { ...err.extras.fields, message: err.message, type: model ? err.code : err.type };
  if (err.code) error.code = err.code;
  const param = err.param ?? (model ? "model" : undefined);
  if (param) error.param = param;
  if (err.extras.retryable !== undefined) error.retryable = err.extras.retryable;
  if (err.extras.details !== undefined) error.details = err.extras.details;
  return { status: "error", message: err.message, ...(err.code ? { code: err.code } : {}), error };
}

const BODIES: Record<ErrorStyle, (err: ApiError) => unknown> = {
  lemonade: lemonadeErrorBody,
  lemonade_model: lemonadeModelErrorBody,
  openai: openaiErrorBody,
  ollama: ollamaErrorBody,
  anthropic: anthropicErrorBody,
};

export function errorResponse(err: ApiError, style: ErrorStyle, headers: Record<string, string> = {}): Response {
  const all: Record<string, string> = { ...headers };
  if (err.extras.retryAfterS !== undefined) all["retry-after"] = String(err.extras.retryAfterS);
  return Response.json(BODIES[style](err), { status: err.status, headers: all });
}
