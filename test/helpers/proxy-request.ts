// A chat request as a route hands it to the proxy, for tests that drive runtime/proxy.ts directly.
import type { ProxyRequest } from "../../runtime/request.ts";

export const chatRequest = (model: string, extra: Partial<ProxyRequest> = {}): ProxyRequest => ({
  model,
  path: "/v1/chat/completions",
  body: { messages: [{ role: "user", content: "hi" }] },
  check: () => null,
  signal: new AbortController().signal,
  endpoint: "chat_completions",
  generation: true,
  ...extra,
});
