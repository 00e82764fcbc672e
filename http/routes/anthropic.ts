// Anthropic's Messages API: adapted by protocols/anthropic onto the chat path and forwarded
// through the same proxy; token counting goes to llama.cpp's own count_tokens.
import { anthropic as spec, metricsLabel } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { anthropicPassthrough, messagesLoadError, messagesStream, messagesWarnings, splitKnown, toChatBody, toMessage, WARNING_SEPARATOR, wantsThinking } from "../../protocols/anthropic.ts";
import { engineAnswer, needsLlm, visionCheck } from "../../protocols/openai.ts";
import type { Binder } from "../bind.ts";
import type { MessagesRequest } from "../../spec/anthropic.ts";

export function anthropicRoutes(bind: Binder, ctx: Pick<ServerContext, "logger" | "proxy" | "telemetry">): void {
  const messagesLabel = metricsLabel(spec.messages);
  // A failed load answers as Lemonade's route does, whichever step finds it.
  bind.http(spec.messages, ({ body, request }) => messages(body, request).catch(messagesLoadError(body.model)));
  const messages = async (body: MessagesRequest, request: Request) => {
    // A provider that speaks Anthropic's API gets the request as the client sent it.
    if (ctx.proxy.target(body.model).speaks === "anthropic") {
      return ctx.proxy.toModel({
        model: body.model,
        path: "/v1/messages",
        body,
        stream: body.stream === true ? anthropicPassthrough : undefined,
        check: needsLlm(),
        signal: request.signal,
        span: ctx.telemetry.start("LLM", "chat.completions", body.model, body, request.headers),
        endpoint: messagesLabel,
        generation: true,
      });
    }
    // The chat body is made of the fields the adapter takes; each other one, and what it drops
    // (metadata, a beta flag other than true), is a warning in Lemonade's words.
    const warnings = messagesWarnings(body, new URL(request.url).searchParams.get("beta"));
    if (warnings.length) ctx.logger.warn("Anthropic", `Compatibility warnings: ${warnings.join(WARNING_SEPARATOR)}`);
    const chat = toChatBody(body);
    const res = await ctx.proxy.toModel({
      model: body.model,
      path: "/v1/chat/completions",
      body: chat,
      stream: body.stream === true ? messagesStream(body.model, warnings, wantsThinking(body)) : undefined,
      reshape: (answer) => toMessage(engineAnswer(answer), body.model, warnings, wantsThinking(body)),
      check: visionCheck(needsLlm(), chat),
      signal: request.signal,
      // Traced as Lemonade traces it: the chat request it becomes.
      span: ctx.telemetry.start("LLM", "chat.completions", body.model, chat, request.headers),
      endpoint: messagesLabel,
      generation: true,
    });
    if (warnings.length) res.headers.set(spec.WARNING_HEADER, warnings.join(WARNING_SEPARATOR));
    return res;
  };

  const countLabel = metricsLabel(spec.countTokens);
  bind.http(spec.countTokens, async ({ body, request }) => {
    const { known, ignored } = splitKnown(body);
    const passthrough = ctx.proxy.target(body.model).speaks === "anthropic";
    const res = await ctx.proxy.toModel({
      model: body.model,
      path: "/v1/messages/count_tokens",
      body: passthrough ? body : known,
      check: needsLlm(),
      signal: request.signal,
      endpoint: countLabel,
      generation: false,
    });
    if (ignored.length) res.headers.set(spec.WARNING_HEADER, ignored.map((k) => `Ignored '${k}' field`).join(WARNING_SEPARATOR));
    return res;
  });
}
