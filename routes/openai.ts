// OpenAI-compatible inference routes: each one forwards to the model's engine through server/proxy.
import type { Elysia } from "elysia";
import { bind } from "./bind.ts";
import { openai as spec } from "../spec/index.ts";
import { proxyToEngine } from "../server/proxy.ts";
import type { ServerContext } from "../server/context.ts";

/** Lemonade-only fields, read by the server and not sent on to the engine. */
function splitLemonadeFields(body: Record<string, unknown>) {
  const { ctx_size, ...engineBody } = body;
  return { engineBody, loadOptions: ctx_size === undefined ? undefined : { ctx_size } };
}

export function openaiRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  for (const [def, path] of [
    [spec.chatCompletions, "/v1/chat/completions"],
    [spec.completions, "/v1/completions"],
  ] as const) {
    bind(app, def, ({ body, request }) => {
      const { engineBody, loadOptions } = splitLemonadeFields(body);
      return proxyToEngine(ctx, {
        model: body.model,
        path,
        body: engineBody,
        stream: body.stream === true,
        type: "llm",
        loadOptions,
        signal: request.signal,
      });
    });
  }
}
