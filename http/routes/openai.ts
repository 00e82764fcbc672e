// OpenAI-compatible inference routes: each translates with protocols/openai (and
// protocols/responses) and forwards through the proxy (runtime/proxy.ts); audio goes to
// protocols/audio.
import { metricsLabel, openai as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import type { ProxyRequest } from "../../runtime/request.ts";
import {
  chatStream,
  legacyLogprobs,
  mappedStream,
  needsEmbedder,
  needsLlm,
  toCompletionBody,
  toEngineBody,
  visionCheck,
} from "../../protocols/openai.ts";
import { checkResponsesBody, responsesCheck, responsesStream } from "../../protocols/responses.ts";
import { speak, transcribe } from "../../protocols/audio.ts";
import type { Binder } from "../bind.ts";
import type { UncheckedJson as Json } from "../../lib/json.ts";

export function openaiRoutes(bind: Binder, ctx: Pick<ServerContext, "catalog" | "config" | "library" | "logger" | "options" | "proxy" | "scheduler" | "standIns" | "stats">): void {
  /** Binds an inference route; on `collections` ones a collection (a router, an omni) may serve the request. */
  const forward = (def: Parameters<Binder["http"]>[0], path: string, build: (body: Json, engineBody: Json) => Partial<ProxyRequest>, collections = false) => {
    const label = metricsLabel(def);
    bind.http(def, ({ body, request }) => {
      const json = body as Json;
      const { engineBody, loadOptions } = toEngineBody(json);
      delete engineBody.route_trace;
      const route = build(json, engineBody);
      return ctx.proxy.toModel({
        model: json.model,
        path,
        body: engineBody,
        check: needsLlm(),
        loadOptions,
        signal: request.signal,
        endpoint: label,
        generation: true,
        ...route,
        stream: json.stream === true ? route.stream : undefined,
        ...(collections ? { client: json } : {}),
      });
    });
  };

  forward(spec.chatCompletions, "/v1/chat/completions", (body) => ({ stream: chatStream, check: visionCheck(needsLlm(), body) }), true);
  forward(spec.completions, "/v1/completions", (_, engineBody) => {
    const { body, logprobs } = toCompletionBody(engineBody);
    if (!logprobs) return { body, stream: chatStream };
    const fix = (answer: Json) => {
      const convert = legacyLogprobs();
      for (const choice of answer.choices ?? []) convert(choice);
      return answer;
    };
    const streamed = mappedStream(() => {
      const convert = legacyLogprobs();
      return (ev) => {
        for (const choice of ev.choices ?? []) convert(choice);
        return ev;
      };
    });
    return { body, reshape: fix, stream: streamed };
  }, true);
  forward(spec.responses, "/v1/responses", (body) => {
    checkResponsesBody(body);
    return { stream: responsesStream(body.model), check: responsesCheck(body) };
  });
  forward(spec.embeddings, "/v1/embeddings", () => ({ check: needsEmbedder, generation: false }));
  bind.http(spec.audioSpeech, ({ body, request }) => speak(ctx, body, request.signal));
  bind.http(spec.audioTranscriptions, ({ request }) => transcribe(ctx, request));
}
