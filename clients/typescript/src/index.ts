// A typed client for a Lemonade server: openapi-fetch over the types openapi-typescript generates
// from the server's OpenAPI document (src/schema.ts, `bun run sdk`), plus helpers for its streams.
export type * from "./schema.ts";
export { createLemonadeClient, type LemonadeClient, type LemonadeClientOptions } from "./client.ts";
export { ndjsonLines, sseEvents, stream, StreamError, type SseEvent, type StreamPath, type StreamEvent } from "./streams.ts";
