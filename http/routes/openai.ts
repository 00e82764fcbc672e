// OpenAI-compatible inference routes: each translates with protocols/openai and forwards through
// the proxy (runtime/proxy.ts); audio goes to protocols/audio.
import { metricsLabel, openai as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { chatStream, needsEmbedder, needsLlm, responsesStream, toEngineBody } from "../../protocols/openai.ts";
import { speak, transcribe } from "../../protocols/audio.ts";
import type { Binder } from "../bind.ts";

export function openaiRoutes(bind: Binder, ctx: ServerContext): void {
  const routes = [
    [spec.chatCompletions, "/v1/chat/completions", needsLlm(), chatStream, true],
    [spec.completions, "/v1/completions", needsLlm(), chatStream, true],
    [spec.responses, "/v1/responses", needsLlm("model_not_applicable"), responsesStream, true],
    [spec.embeddings, "/v1/embeddings", needsEmbedder, undefined, false],
  ] as const;
  for (const [def, path, check, rule, generation] of routes) {
    const label = metricsLabel(def);
    bind.http(def, ({ body, request }) => {
      const { engineBody, loadOptions } = toEngineBody(body as Record<string, unknown>);
      return ctx.proxy.toModel({
        model: body.model,
        path,
        body: engineBody,
        stream: rule && (body as { stream?: boolean }).stream === true ? rule : undefined,
        check,
        loadOptions,
        signal: request.signal,
        endpoint: label,
        generation,
      });
    });
  }
  bind.http(spec.audioSpeech, ({ body }) => speak(ctx, body));
  bind.http(spec.audioTranscriptions, ({ request }) => transcribe(ctx, request));
}
