// OpenAI-compatible inference routes: each translates with protocols/openai (and
// protocols/responses) and forwards through the proxy (runtime/proxy.ts); audio goes to
// protocols/audio.
import { metricsLabel, openai as spec } from "../../spec/index.ts";
import type { ChatCompletionRequest, CompletionRequest, EmbeddingsRequest, ResponsesRequest } from "../../spec/openai.ts";
import type { ServerContext } from "../../runtime/context.ts";
import type { ProxyRequest } from "../../runtime/request.ts";
import {
  chatStream,
  legacyLogprobs,
  mappedStream,
  needsEmbedder,
  needsLlm,
  needsLlmFor,
  toCompletionBody,
  toEngineBody,
  visionCheck,
} from "../../protocols/openai.ts";
import { checkResponsesBody, responsesCheck, responsesStream } from "../../protocols/responses.ts";
import { speak, transcribe } from "../../protocols/audio.ts";
import type { Binder } from "../bind.ts";
import { jsonItems, type Json } from "../../lib/json.ts";
import type { SpanKindName } from "../../observability/span-record.ts";

/** The definitions forwarded to a model's engine once translated, and the bodies they take. */
type Forwarded = typeof spec.chatCompletions | typeof spec.completions | typeof spec.responses | typeof spec.embeddings;
type ForwardedBody = ChatCompletionRequest | CompletionRequest | ResponsesRequest | EmbeddingsRequest;

export function openaiRoutes(
  bind: Binder,
  ctx: Pick<ServerContext, "catalog" | "config" | "library" | "logger" | "options" | "proxy" | "scheduler" | "standIns" | "stats" | "telemetry">,
): void {
  /** Each forwarded route's trace span: its OpenInference kind and its name. */
  const spans = new Map<Forwarded, [SpanKindName, string]>([
    [spec.chatCompletions, ["LLM", "chat.completions"]],
    [spec.completions, ["LLM", "completions"]],
    [spec.responses, ["LLM", "responses"]],
    [spec.embeddings, ["EMBEDDING", "embeddings"]],
  ]);
  /** Sends an inference request on to its model: `build` adds what the route's own request needs
   * (its stream rule, its check, the client's body where a collection may serve it). Each route
   * binds its own definition, so that its handler and `build` read the body as its `Static<>` type. */
  const forward = (def: Forwarded, path: string, body: ForwardedBody, request: Request, build: (engineBody: Json) => Partial<ProxyRequest>) => {
    const [kind, name] = spans.get(def)!;
    const span = ctx.telemetry.start(kind, name, body.model, body, request.headers);
    const { engineBody, loadOptions } = toEngineBody(body);
    delete engineBody.route_trace;
    const route = build(engineBody);
    return ctx.proxy.toModel({
      model: body.model,
      path,
      body: engineBody,
      check: needsLlm(),
      loadOptions,
      signal: request.signal,
      span,
      endpoint: metricsLabel(def),
      generation: true,
      ...route,
      // `stream` is the client's, which the engine body keeps as it came.
      stream: engineBody.stream === true ? route.stream : undefined,
    });
  };

  bind.http(spec.chatCompletions, ({ body, request }) =>
    forward(spec.chatCompletions, "/v1/chat/completions", body, request, () => ({ stream: chatStream, check: visionCheck(needsLlmFor("chat completion"), body), client: body })),
  );
  bind.http(spec.completions, ({ body, request }) =>
    forward(spec.completions, "/v1/completions", body, request, (engineBody) => {
      const { body: completion, logprobs } = toCompletionBody(engineBody);
      const check = needsLlmFor("completion");
      if (!logprobs) return { body: completion, stream: chatStream, check, client: body };
      const fix = (answer: Json) => {
        const convert = legacyLogprobs();
        for (const choice of jsonItems(answer.choices)) convert(choice);
        return answer;
      };
      const streamed = mappedStream(() => {
        const convert = legacyLogprobs();
        return (ev) => {
          for (const choice of jsonItems(ev.choices)) convert(choice);
          return ev;
        };
      });
      return { body: completion, reshape: fix, stream: streamed, check, client: body };
    }),
  );
  bind.http(spec.responses, ({ body, request }) => {
    checkResponsesBody(body);
    return forward(spec.responses, "/v1/responses", body, request, () => ({ stream: responsesStream(body.model), check: responsesCheck(body), client: body }));
  });
  bind.http(spec.embeddings, ({ body, request }) =>
    forward(spec.embeddings, "/v1/embeddings", body, request, () => ({ check: needsEmbedder, generation: false })),
  );
  bind.http(spec.audioSpeech, ({ body, request }) => speak(ctx, body, request.signal));
  bind.http(spec.audioTranscriptions, ({ request }) => transcribe(ctx, request));
}
