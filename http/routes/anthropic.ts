// Anthropic's Messages API, forwarded through the same proxy to llama.cpp's Anthropic layer.
import { anthropic as spec, metricsLabel } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { messagesStream, splitKnown } from "../../protocols/anthropic.ts";
import { needsLlm } from "../../protocols/openai.ts";
import type { Binder } from "../bind.ts";

const KNOWN = new Set<string>(spec.MESSAGES_FIELDS);

export function anthropicRoutes(bind: Binder, ctx: ServerContext): void {
  for (const [def, path, generation] of [
    [spec.messages, "/v1/messages", true],
    [spec.countTokens, "/v1/messages/count_tokens", false],
  ] as const) {
    const label = metricsLabel(def);
    bind.http(def, async ({ body, request }) => {
      const { known, ignored } = splitKnown(body as Record<string, unknown>, KNOWN);
      if (ignored.length) ctx.logger.warn("Anthropic", `Ignoring unsupported fields: ${ignored.join(", ")}`);
      const res = await ctx.proxy.toModel({
        model: body.model,
        path,
        body: known,
        stream: generation && (body as { stream?: boolean }).stream === true ? messagesStream : undefined,
        check: needsLlm(),
        signal: request.signal,
        endpoint: label,
        generation,
      });
      if (ignored.length) res.headers.set(spec.WARNING_HEADER, `ignored unsupported fields: ${ignored.join(", ")}`);
      return res;
    });
  }
}
