// OpenAI-compatible inference routes: each translates with protocols/openai (and
// protocols/responses) and forwards through the proxy (runtime/proxy.ts); audio goes to
// protocols/audio.
import { metricsLabel, openai as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import type { ProxyRequest } from "../../runtime/proxy.ts";
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
import { route as routeRequest, ROUTE_HEADER } from "../../protocols/routing.ts";
import { omniChat } from "../../protocols/omni.ts";
import type { Binder } from "../bind.ts";
import type { UncheckedJson as Json } from "../../lib/json.ts";

export function openaiRoutes(bind: Binder, ctx: Pick<ServerContext, "catalog" | "config" | "library" | "logger" | "options" | "proxy" | "scheduler" | "standIns" | "stats">): void {
  /** Binds an inference route; `routable` ones let a collection.router pick the model first. */
  const forward = (def: Parameters<Binder["http"]>[0], path: string, build: (body: Json, engineBody: Json) => Partial<ProxyRequest>, routable = false) => {
    const label = metricsLabel(def);
    bind.http(def, async ({ body, request }) => {
      const json = body as Json;
      // A chat naming an omni collection runs its server-side tool loop.
      const collection = def === spec.chatCompletions ? ctx.catalog.find(String(json.model ?? "")) : undefined;
      if (collection?.omni) return omniChat(ctx, collection, json, request.signal);
      const routed = routable ? await routeRequest(ctx, json, request.signal) : null;
      const { engineBody, loadOptions } = toEngineBody(json);
      delete engineBody.route_trace;
      const route = build(json, engineBody);
      if (routed) {
        const reshape = route.reshape;
        if (routed.reshape) route.reshape = (a) => routed.reshape!(reshape ? reshape(a) : a);
        if (routed.stream && route.stream === routed.plain) route.stream = routed.stream;
      }
      const res = await ctx.proxy.toModel({
        model: routed?.decision.route_to ?? json.model,
        path,
        body: engineBody,
        check: needsLlm(),
        loadOptions,
        signal: request.signal,
        endpoint: label,
        generation: true,
        ...route,
        stream: json.stream === true ? route.stream : undefined,
      });
      if (routed) res.headers.set(ROUTE_HEADER, routed.decision.matched_rule || "default");
      return res;
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
