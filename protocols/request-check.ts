// A request made in-process (an Ollama, MCP, omni or job step calling a route's protocol directly)
// checked against the schema the route itself validates its body with, so no caller reaches an
// engine with less than a client would.
import type { Static, TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";

/** `value` as `schema`'s type, or a 400 `invalid_argument` naming its first bad field after `refusal`. */
export function checkedRequest<S extends TSchema>(schema: S, value: unknown, refusal: string): Static<S> {
  if (Value.Check(schema, value)) return value;
  const first = Value.Errors(schema, value).First();
  throw ApiError.of(E.invalidArgument, `${refusal}: ${first ? `${first.path || "/"} ${first.message}` : "invalid"}`, first?.path.slice(1) || undefined);
}
