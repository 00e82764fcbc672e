// Anthropic's Messages API, forwarded through the same proxy to llama.cpp's Anthropic layer.
// Unknown fields are dropped, never refused, and named in a warning header.
import type { Elysia } from "elysia";
import { bind } from "./bind.ts";
import { anthropic as spec } from "../spec/index.ts";
import { proxyToEngine } from "../server/proxy.ts";
import { needsLlm } from "./openai.ts";
import type { ServerContext } from "../server/context.ts";

const KNOWN = new Set<string>(spec.MESSAGES_FIELDS);

function splitKnown(body: Record<string, unknown>) {
  const known: Record<string, unknown> = {};
  const ignored: string[] = [];
  for (const [k, v] of Object.entries(body)) (KNOWN.has(k) ? (known[k] = v) : ignored.push(k));
  return { known, ignored };
}

export function anthropicRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  for (const [def, path, generation] of [
    [spec.messages, "/v1/messages", true],
    [spec.countTokens, "/v1/messages/count_tokens", false],
  ] as const) {
    bind(app, def, async ({ body, request }) => {
      const { known, ignored } = splitKnown(body);
      if (ignored.length) ctx.logger.warn("Anthropic", `Ignoring unsupported fields: ${ignored.join(", ")}`);
      const res = await proxyToEngine(ctx, {
        model: body.model,
        path,
        body: known,
        stream: generation && body.stream === true,
        check: needsLlm(),
        signal: request.signal,
        endpoint: generation ? "messages" : "count_tokens",
        generation,
      });
      if (ignored.length) res.headers.set(spec.WARNING_HEADER, `ignored unsupported fields: ${ignored.join(", ")}`);
      return res;
    });
  }
}
