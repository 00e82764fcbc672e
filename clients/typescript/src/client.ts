// The typed client: openapi-fetch over the generated `paths`, the API key sent as a bearer token.
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { paths } from "./schema.ts";

/** `data` is typed as the JSON answer of each route (a streaming answer is read with `stream`). */
export type LemonadeClient = Client<paths, "application/json">;

export interface LemonadeClientOptions extends ClientOptions {
  /** `LEMONADE_API_KEY` (or the admin key), sent as a bearer token. */
  apiKey?: string;
}

/** A client for the server at `baseUrl`: `client.POST("/v1/load", { body: { model_name } })`. */
export function createLemonadeClient(baseUrl = "http://localhost:13305", { apiKey, ...options }: LemonadeClientOptions = {}): LemonadeClient {
  const client = createClient<paths, "application/json">({ baseUrl, ...options });
  if (apiKey) {
    client.use({
      onRequest({ request }) {
        request.headers.set("authorization", `Bearer ${apiKey}`);
        return request;
      },
    });
  }
  return client;
}
