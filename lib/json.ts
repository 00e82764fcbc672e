// The one name for a JSON object in transit (a request or engine body, a file's contents).

/** A JSON object; its fields are checked where they are read. */
export type Json = Record<string, unknown>;

/** Whether a parsed value is a JSON object (not an array, not null). */
export function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A JSON object whose fields are read without checks: the protocol bodies that do not yet take
 * their definitions' `Static<>` types. New code uses `Json`. */
export type UncheckedJson = Record<string, any>;

/** A value read as a JSON object: itself when it is one, else an empty one. */
export const asJson = (value: unknown): Json => (isJson(value) ? value : {});

/** The JSON objects among a value's items: none when it is not an array. */
export const jsonItems = (value: unknown): Json[] => (Array.isArray(value) ? value.filter(isJson) : []);

/** Any JSON value, where a value need not be an object (the job engine's context and its paths). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
