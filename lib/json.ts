// The one name for a JSON object in transit (a request or engine body, a file's contents).

/** A JSON object; its fields are checked where they are read. */
export type Json = Record<string, unknown>;

/** A JSON object whose fields are read without checks: the protocol bodies that do not yet take
 * their definitions' `Static<>` types. New code uses `Json`. */
export type UncheckedJson = Record<string, any>;

/** Any JSON value, where a value need not be an object (the job engine's context and its paths). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
