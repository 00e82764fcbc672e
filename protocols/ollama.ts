// The Ollama dialect on top of the OpenAI-shaped path: requests become OpenAI chat, completion
// and embedding bodies for the proxy, answers (JSON or SSE) become Ollama's JSON or NDJSON, model
// views become Ollama's, and every failure becomes Ollama's status and `{"error": "..."}` here.
import { basename } from "node:path";
import { ApiError } from "../lib/api-error.ts";
import type { CatalogModel } from "../models/catalog.ts";
import { DownloadStopped } from "../models/downloads.ts";
import { parseCheckpoint } from "../models/hf-cache.ts";
import type { ServerContext } from "../runtime/context.ts";
import type { ModelCheck } from "../runtime/request.ts";
import type { InferenceSpan } from "../observability/telemetry.ts";
import { ndjsonFramer, type StreamRule } from "../runtime/stream-pump.ts";
import { E, ollama as spec } from "../spec/index.ts";
import { generateImages, needsImageModel } from "./images.ts";
import { embeddingVectors, engineAnswer, needsLlm, toEngineBody, visionCheck, type EngineAnswer, type EngineToolCall } from "./openai.ts";
import { asJson, jsonItems, type Json } from "../lib/json.ts";
import type {
  ChatRequest,
  ChatResponse,
  DeleteRequest,
  EmbedRequest,
  EmbedResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
  GenerateRequest,
  GenerateResponse,
  PsResponse,
  PullRequest,
  PullResponse,
  ShowRequest,
  ShowResponse,
  TagsResponse,
} from "../spec/ollama.ts";

const CREATED_AT = "2024-01-01T00:00:00Z";

const OPTION_KEYS = ["temperature", "top_p", "seed", "stop", "num_predict", "repeat_penalty"] as const;

/** Sampling options from `options`, with top-level keys winning, in OpenAI/llama.cpp names. */
export function samplingFrom(body: Json): Json {
  const merged: Json = { ...asJson(body.options) };
  for (const k of OPTION_KEYS) if (body[k] !== undefined) merged[k] = body[k];
  const out: Json = {};
  if (merged.temperature !== undefined) out.temperature = merged.temperature;
  if (merged.top_p !== undefined) out.top_p = merged.top_p;
  if (merged.seed !== undefined) out.seed = merged.seed;
  if (merged.stop !== undefined) out.stop = merged.stop;
  if (merged.num_predict !== undefined && Number(merged.num_predict) >= 0) out.max_tokens = merged.num_predict;
  // Sent as OpenAI's frequency_penalty (ollama.md), as Lemonade's adapter sends it.
  if (merged.repeat_penalty !== undefined) out.frequency_penalty = merged.repeat_penalty;
  return out;
}

/** The load options a request carries: `ctx_size`, else `options.num_ctx`. */
function loadCtx(body: { ctx_size?: number; options?: Json }): number | undefined {
  const size = body.ctx_size ?? body.options?.num_ctx;
  return typeof size === "number" ? size : undefined;
}

function imageUrl(b64: string): string {
  const mime = b64.startsWith("/9j/") ? "image/jpeg" : b64.startsWith("R0lG") ? "image/gif" : b64.startsWith("UklG") ? "image/webp" : "image/png";
  return `data:${mime};base64,${b64}`;
}

/** Ollama messages -> OpenAI messages: images become image parts, tool-call arguments strings,
 * and a tool result named by `tool_name` answers the earliest unanswered call of that name. */
export function toOpenAIMessages(messages: Json[]): Json[] {
  const unanswered: { id: unknown; name: unknown }[] = [];
  return messages.map((m) => {
    const out: Json = { role: m.role, content: m.content ?? "" };
    if (Array.isArray(m.images) && m.images.length) {
      out.content = [
        ...(m.content ? [{ type: "text", text: m.content }] : []),
        ...m.images.map((img: unknown) => ({ type: "image_url", image_url: { url: imageUrl(String(img)) } })),
      ];
    }
    if (Array.isArray(m.tool_calls)) {
      const calls = m.tool_calls.map((c: unknown, i) => {
        const call = asJson(c);
        const fn = asJson(call.function);
        return {
          id: call.id ?? `call_${i}`,
          type: "function",
          function: { name: fn.name, arguments: typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments ?? {}) },
        };
      });
      out.tool_calls = calls;
      unanswered.splice(0, unanswered.length, ...calls.map((c) => ({ id: c.id, name: c.function.name })));
    }
    if (m.role === "tool") {
      const id = m.tool_call_id ?? unanswered.find((c) => c.name === m.tool_name)?.id;
      if (id) {
        out.tool_call_id = id;
        const at = unanswered.findIndex((c) => c.id === id);
        if (at >= 0) unanswered.splice(at, 1);
      }
      if (m.tool_name) out.name = m.tool_name;
    }
    return out;
  });
}

/** OpenAI tool calls -> Ollama's, whose arguments are objects. */
function toOllamaToolCalls(calls: EngineToolCall[] | undefined): Json[] | undefined {
  if (!calls?.length) return undefined;
  return calls.map((c) => {
    let args: unknown = c.function?.arguments ?? {};
    if (typeof args === "string") {
      try {
        args = JSON.parse(args || "{}");
      } catch {
        args = { raw: args };
      }
    }
    return { function: { name: c.function?.name, arguments: args } };
  });
}

const ns = (ms: number | undefined) => Math.round((ms ?? 0) * 1e6);

function counts(usage: EngineAnswer["usage"], timings: EngineAnswer["timings"]) {
  return {
    prompt_eval_count: usage?.prompt_tokens ?? 0,
    eval_count: usage?.completion_tokens ?? 0,
    total_duration: 0,
    load_duration: 0,
    prompt_eval_duration: ns(timings?.prompt_ms),
    eval_duration: ns(timings?.predicted_ms),
  };
}

/** `{"error": "..."}` */
export function ollamaErrorBody(err: ApiError): unknown {
  return { error: err.code === E.missingArgument.code && err.param ? requiredMessage(err.param) : err.message };
}

/** A missing field as Ollama's server words it. */
const requiredMessage = (field: string) => `${field} is required`;

/** What an Ollama route was doing when it failed. */
export type OllamaStep = "serve" | "pull" | "delete";

/** Ollama's statuses (ollama.md): serving, a model that cannot be found or loaded is 404
 * whatever the cause (pinned slots included), a `collection.router` residency conflict 409, and a
 * request mistake keeps its 400; what the engine answers is 500, a context overflow 400. A failed
 * pull is 500; a failed delete is 404 when the model is not there, else 500. */
export function ollamaError(err: unknown, step: OllamaStep = "serve", notFound?: string): ApiError {
  if (!(err instanceof ApiError)) return ApiError.of(E.internal, (err as Error)?.message ?? String(err));
  if (step === "pull") return ApiError.of(E.ollamaPullFailed, err.message);
  if (step === "delete") return ApiError.of(err.status === 404 ? E.ollamaModelNotFound : E.ollamaDeleteFailed, err.message);
  if (err.extras.fromEngine) return ApiError.of(err.code === E.contextLengthExceeded.code ? E.ollamaContextOverflow : E.ollamaBackendError, err.message);
  if (err.code === E.routerResidencyConflict.code) return err;
  if (err.status === 400 || err.status === 499) return err;
  return ApiError.of(E.ollamaLoadFailed, notFound ?? err.message);
}

const rethrow = (step: OllamaStep, notFound?: string) => (err: unknown): never => {
  throw ollamaError(err, step, notFound);
};

/** What a failed load answers, whatever failed, as Ollama's server words it: the generating routes
 * add the hint to pull the model (Lemonade's Anthropic route answers in these words too). */
export const loadFailed = (model: string, pullHint = true) => `model '${stripTag(model)}' not found${pullHint ? ", try pulling it first" : ""}`;

const stripTag = (name: string) => (name.endsWith(":latest") ? name.slice(0, -":latest".length) : name);

/** The proxy's answer as JSON (it has already turned an engine's error answer into a throw). */
async function engineJson(res: Response): Promise<unknown> {
  return JSON.parse(await res.text());
}

const line = (value: unknown) => `${JSON.stringify(value)}\n`;

/** NDJSON with `{"error": "..."}` as the one line a failed stream ends with. */
const ollamaFramer = ndjsonFramer((err) => line(ollamaErrorBody(err)));

/** A whole answer's lines, as one NDJSON body. */
function ndjson(lines: unknown[]): Response {
  return new Response(lines.map(line).join(""), { headers: ollamaFramer.headers });
}

/** Turns the engine's chat chunks into Ollama lines: `event` for each chunk, `last` after `[DONE]`. */
interface OllamaLines<L> {
  event(ev: EngineAnswer): L[];
  last(): L[];
}

/** The stream rule for an Ollama answer made from the engine's stream (one `make` per stream); an
 * error event from the engine fails the stream with Ollama's error line. */
function ollamaStream<L>(make: () => OllamaLines<L>): StreamRule {
  return {
    framer: ollamaFramer,
    translate: () => {
      const lines = make();
      let done = false;
      return {
        event(data) {
          if (data === "[DONE]") {
            done = true;
            return lines.last().map(line).join("");
          }
          const ev = engineAnswer(JSON.parse(data));
          if (ev.error) throw ApiError.of(E.backendError, String(asJson(ev.error).message ?? ev.error));
          return lines.event(ev).map(line).join("");
        },
        end: () => (done ? "" : null),
      };
    },
  };
}

/** `keep_alive: 0` with nothing to say: unload the model (Ollama's way of freeing memory). */
async function maybeUnload<R extends object>(
  ctx: Pick<ServerContext, "catalog" | "scheduler">,
  body: ChatRequest | GenerateRequest,
  empty: boolean,
  reply: R,
): Promise<(R & { model: string; created_at: string; done: true; done_reason: string }) | null> {
  if (!(empty && (body.keep_alive === 0 || body.keep_alive === "0" || body.keep_alive === "0s"))) return null;
  const model = registered(ctx, body.model);
  await ctx.scheduler.unload(model.id);
  return { model: String(body.model), created_at: CREATED_AT, ...reply, done: true, done_reason: "unload" };
}

interface Translation {
  model: string;
  path: string;
  body: Json;
  check: ModelCheck;
  endpoint: string;
  signal: AbortSignal;
  ctxSize?: number;
  /** The request's trace span, while telemetry is on. */
  span?: InferenceSpan;
}

/** The engine request: a whole answer, or (with `stream`) the engine's stream as Ollama's lines. */
function call(ctx: Pick<ServerContext, "proxy">, t: Translation, stream?: StreamRule) {
  return ctx.proxy
    .toModel({
      model: t.model,
      path: t.path,
      body: { ...t.body, stream: stream !== undefined, ...(stream ? { stream_options: { include_usage: true } } : {}) },
      stream,
      holdHeaders: true,
      check: t.check,
      loadOptions: t.ctxSize === undefined ? undefined : { ctx_size: t.ctxSize },
      signal: t.signal,
      span: t.span,
      endpoint: t.endpoint,
      generation: true,
    })
    .catch(rethrow("serve", loadFailed(t.model)));
}

/** /api/chat */
async function ollamaChat(ctx: Pick<ServerContext, "proxy">, t: Translation, stream: boolean): Promise<Response> {
  const base = { model: t.model, created_at: CREATED_AT };
  // Tool calls need the whole answer to parse, so a streamed tool request runs non-streaming.
  const hasTools = Array.isArray(t.body.tools) && t.body.tools.length > 0;
  if (!stream || hasTools) {
    const json = engineAnswer(await engineJson(await call(ctx, t)));
    const choice = json.choices?.[0] ?? {};
    const message: ChatResponse["message"] = { role: "assistant", content: choice.message?.content ?? "" };
    if (choice.message?.reasoning_content) message.thinking = choice.message.reasoning_content;
    const toolCalls = toOllamaToolCalls(choice.message?.tool_calls);
    if (toolCalls) message.tool_calls = toolCalls;
    const final: ChatResponse = { ...base, message, done: true, done_reason: choice.finish_reason ?? "stop", ...counts(json.usage, json.timings) };
    if (!stream) return Response.json(final);
    // Two lines, as Lemonade answers it: the whole answer (not yet done), then the done line.
    return ndjson([
      { ...final, done: false } satisfies ChatResponse,
      { ...final, message: { role: "assistant", content: "" } } satisfies ChatResponse,
    ]);
  }
  return call(ctx, t, ollamaStream((): OllamaLines<ChatResponse> => {
    let usage: EngineAnswer["usage"];
    let timings: EngineAnswer["timings"];
    let reason = "stop";
    const empty = { role: "assistant" as const, content: "" };
    return {
      event(ev) {
        usage = ev.usage ?? usage;
        timings = ev.timings ?? timings;
        const choice = ev.choices?.[0];
        if (!choice) return [];
        if (choice.finish_reason) reason = choice.finish_reason;
        const d = choice.delta ?? {};
        if (d.content === undefined && !d.reasoning_content && !d.role) return [];
        const message: ChatResponse["message"] = { role: "assistant", content: d.content ?? "" };
        if (d.reasoning_content) message.thinking = d.reasoning_content;
        return [{ ...base, message, done: false }];
      },
      // Ollama's own clients stop reading at the first `done` line, so it carries the counts too;
      // the documented counts line follows it.
      last: () => [
        { ...base, message: empty, done: true, done_reason: reason, ...counts(usage, timings) },
        { ...base, message: empty, done: true, done_reason: "stop", ...counts(usage, timings) },
      ],
    };
  }));
}

/** /api/generate */
async function ollamaGenerate(ctx: Pick<ServerContext, "proxy">, t: Translation, stream: boolean): Promise<Response> {
  const base = { model: t.model, created_at: CREATED_AT };
  if (!stream) {
    const json = engineAnswer(await engineJson(await call(ctx, t)));
    const choice = json.choices?.[0] ?? {};
    return Response.json({
      ...base,
      response: choice.text ?? "",
      done: true,
      // A whole answer is always "stop" (ollama.md; Lemonade's too), however generation ended.
      done_reason: "stop",
      context: [],
      ...counts(json.usage, undefined),
    } satisfies GenerateResponse);
  }
  return call(ctx, t, ollamaStream((): OllamaLines<GenerateResponse> => {
    let usage: EngineAnswer["usage"];
    let reason = "stop";
    return {
      event(ev) {
        usage = ev.usage ?? usage;
        const choice = ev.choices?.[0];
        if (!choice) return [];
        if (choice.finish_reason) reason = choice.finish_reason;
        return choice.text ? [{ ...base, response: choice.text, done: false }] : [];
      },
      last: () => [
        { ...base, response: "", done: true, done_reason: reason, context: [], ...counts(usage, undefined) },
        { ...base, response: "", done: true, done_reason: "stop", context: [], ...counts(usage, undefined) },
      ],
    };
  }));
}

/** /api/embed and /api/embeddings: OpenAI embeddings, as float arrays in input order. */
async function ollamaEmbed(ctx: Pick<ServerContext, "proxy">, t: Omit<Translation, "path" | "check">): Promise<number[][]> {
  return embeddingVectors(await engineJson(
    await ctx.proxy
      .toModel({
        model: t.model,
        path: "/v1/embeddings",
        body: { ...t.body, encoding_format: "float" },
        check: needsOllamaEmbedder,
        loadOptions: t.ctxSize === undefined ? undefined : { ctx_size: t.ctxSize },
        signal: t.signal,
        span: t.span,
        endpoint: t.endpoint,
        generation: false,
      })
      .catch(rethrow("serve", loadFailed(t.model, false))),
  ));
}

const needsOllamaEmbedder: ModelCheck = (m, named) =>
  m.type === "embedding" ? null : ApiError.of(E.notAnEmbedder, `Model ${named(m)} is not an embedding model`);

/** A registered model by its Ollama name (with or without `:latest`); anything else is Ollama's 404. */
export function registered(ctx: Pick<ServerContext, "catalog">, name: string | undefined): CatalogModel {
  if (!name) throw ApiError.of(E.missingArgument, "name is required", "name");
  const model = ctx.catalog.find(name);
  if (!model || !ctx.catalog.isSupported(model)) throw ApiError.of(E.modelNotFound, `model '${stripTag(name)}' not found`);
  return model;
}

/** Ollama's `format`: "json" or a JSON schema, as OpenAI's response_format. */
function responseFormat(format: unknown): Record<string, unknown> | undefined {
  if (format === "json") return { type: "json_object" };
  if (format && typeof format === "object") return { type: "json_schema", json_schema: { schema: format } };
  return undefined;
}

const tagged = (id: string) => `${id}:latest`;

/** POST /api/chat */
export async function chat(ctx: Pick<ServerContext, "catalog" | "proxy" | "scheduler">, body: ChatRequest, signal: AbortSignal, label: string, span?: InferenceSpan): Promise<Response | ChatResponse> {
  const messages = body.messages ?? [];
  const unloaded = await maybeUnload(ctx, body, messages.length === 0, { message: { role: "assistant" as const, content: "" } });
  if (unloaded) return unloaded;
  const format = responseFormat(body.format);
  const { engineBody } = toEngineBody({
    messages: toOpenAIMessages(messages),
    ...samplingFrom(body),
    ...(body.tools ? { tools: body.tools } : {}),
    ...(format ? { response_format: format } : {}),
    ...(body.think === false ? { enable_thinking: false } : {}),
  });
  return ollamaChat(
    ctx,
    { model: body.model, path: "/v1/chat/completions", body: engineBody, check: visionCheck(needsLlm(), engineBody), endpoint: label, signal, ctxSize: loadCtx(body), span },
    body.stream !== false,
  );
}

/** POST /api/generate; an empty prompt preloads the model, as Ollama clients use it. */
export async function generate(
  ctx: Pick<ServerContext, "catalog" | "options" | "proxy" | "scheduler">,
  body: GenerateRequest,
  signal: AbortSignal,
  label: string,
  span?: InferenceSpan,
): Promise<Response | GenerateResponse> {
  const prompt = body.prompt ?? "";
  const unloaded = await maybeUnload(ctx, body, prompt === "", { response: "" });
  if (unloaded) return unloaded;
  const ctxSize = loadCtx(body);
  const target = ctx.catalog.find(body.model);
  if (target?.type === "image") return ollamaImage(ctx, body, prompt, signal, label);
  if (prompt === "") {
    // acquire can throw before it returns a promise (a name the catalog does not know).
    const lease = await Promise.resolve()
      .then(() => ctx.proxy.acquire(body.model, needsLlm(), { options: ctxSize ? { ctx_size: ctxSize } : undefined, signal }))
      .catch(rethrow("serve", loadFailed(body.model)));
    lease.release();
    return { model: body.model, created_at: CREATED_AT, response: "", done: true, done_reason: "load" };
  }
  return ollamaGenerate(
    ctx,
    { model: body.model, path: "/v1/completions", body: { prompt, ...samplingFrom(body) }, check: needsLlm(), endpoint: label, signal, ctxSize, span },
    body.stream !== false,
  );
}

/** /api/generate naming an image model: one image, never streamed (ollama.md); an empty prompt loads it. */
async function ollamaImage(ctx: Pick<ServerContext, "options" | "proxy">, body: GenerateRequest, prompt: string, signal: AbortSignal, label: string): Promise<GenerateResponse & { image?: string }> {
  const base = { model: body.model, created_at: CREATED_AT, response: "" };
  if (prompt === "") {
    const lease = await Promise.resolve()
      .then(() => ctx.proxy.acquire(body.model, needsImageModel, { signal }))
      .catch(rethrow("serve", loadFailed(body.model)));
    lease.release();
    return { ...base, done: true, done_reason: "load" };
  }
  const request: Json = { model: body.model, prompt };
  for (const key of ["width", "height", "steps", "cfg_scale", "seed"] as const) {
    const value = body[key] ?? body.options?.[key];
    if (value !== undefined) request[key] = value;
  }
  const out = await generateImages(ctx, request, signal, label).catch(rethrow("serve"));
  return { ...base, image: String(jsonItems(out.data)[0]?.b64_json ?? ""), done: true, done_reason: "stop", context: [], ...counts(undefined, undefined) };
}

/** POST /api/embed */
export async function embed(ctx: Pick<ServerContext, "proxy">, body: EmbedRequest, signal: AbortSignal, label: string, span?: InferenceSpan): Promise<EmbedResponse> {
  const embeddings = await ollamaEmbed(ctx, { model: body.model, body: { input: body.input }, endpoint: label, signal, ctxSize: loadCtx(body), span });
  return { model: body.model, embeddings, total_duration: 0, load_duration: 0, prompt_eval_count: 0 };
}

/** POST /api/embeddings (Ollama's older, single-prompt form) */
export async function embeddings(ctx: Pick<ServerContext, "proxy">, body: EmbeddingsRequest, signal: AbortSignal, label: string, span?: InferenceSpan): Promise<EmbeddingsResponse> {
  const text = body.prompt ?? body.input;
  if (text === undefined) throw ApiError.of(E.missingArgument, "Missing required argument 'prompt'", "prompt");
  const [embedding = []] = await ollamaEmbed(ctx, { model: body.model, body: { input: text }, endpoint: label, signal, ctxSize: loadCtx(body), span });
  return { model: body.model, embedding };
}

/** Ollama's `details` block, inferred from name, recipe and checkpoint. */
export function details(model: CatalogModel) {
  const size = /(\d+(?:\.\d+)?)[Bb](?![a-z])/.exec(model.id)?.[1];
  const checkpoint = model.checkpoints.main ?? "";
  const variant = model.source === "huggingface" ? (parseCheckpoint(checkpoint).variant ?? "") : basename(checkpoint);
  const quant = /(I?Q\d+(?:_[A-Z0-9]+)*|F16|BF16|F32)/i.exec(variant)?.[1]?.toUpperCase() ?? "";
  return {
    parent_model: "" as const,
    format: "gguf" as const,
    family: model.recipe,
    families: [model.recipe],
    parameter_size: size ? `${size}B` : "",
    quantization_level: quant,
  };
}

/** POST /api/show */
export function show(ctx: Pick<ServerContext, "catalog" | "options">, body: ShowRequest): ShowResponse {
  // Lemonade's show reads `name` unless it is empty, then `model`.
  const model = registered(ctx, body.name || body.model);
  // A recipe with no context size (speech, images) reads as one sized at load time.
  const ctxSize = ctx.options.resolve(model).ctx_size ?? -1;
  const capabilities = [
    ...(model.type === "llm" ? ["completion"] : model.type === "embedding" ? ["embedding"] : []),
    ...(model.labels.some((l) => l === "tool-calling" || l === "tools") ? ["tools"] : []),
    ...(model.labels.includes("vision") ? ["vision"] : []),
    ...(model.labels.includes("reasoning") ? ["thinking"] : []),
  ];
  return {
    modelfile: `# Modelfile generated by Lemonade\nFROM ${model.checkpoints.main ?? ""}`,
    parameters: `num_ctx ${ctxSize}`,
    template: "",
    details: details(model),
    capabilities,
    model_info: {
      "general.architecture": model.recipe,
      [`${model.recipe}.context_length`]: ctxSize,
      "general.parameter_count": 0,
      "general.file_type": 0,
      "general.quantization_version": 0,
    },
  };
}

/** GET /api/tags: downloaded models, by the ids /v1/models lists them by */
export function tags(ctx: Pick<ServerContext, "catalog">): TagsResponse {
  const all = ctx.catalog.all();
  return {
    models: all
      .filter((m) => ctx.catalog.isSupported(m) && ctx.catalog.isDownloaded(m))
      .map((m) => {
        // The registry's estimate in GiB, as bytes (ollama.md); the files on disk for a model with none.
        const size = m.size ? Math.trunc(m.size * 2 ** 30) : ctx.catalog.files(m).reduce((n, f) => n + f.sizeBytes, 0);
        const id = tagged(ctx.catalog.publicId(m, all));
        return {
          name: id,
          model: id,
          modified_at: "2024-01-01T00:00:00Z",
          size,
          digest: spec.ZERO_DIGEST,
          details: details(m),
        };
      }),
  };
}

/** GET /api/ps: loaded models, by their listed ids */
export function ps(ctx: Pick<ServerContext, "catalog" | "scheduler">): PsResponse {
  const all = ctx.catalog.all();
  return {
    models: ctx.scheduler.list().map((s) => {
      const id = tagged(ctx.catalog.publicId(s.model, all));
      return { name: id, model: id, size: 0, digest: spec.ZERO_DIGEST, details: details(s.model), expires_at: "2099-01-01T00:00:00Z", size_vram: 0 };
    }),
  };
}

/** POST /api/pull: NDJSON progress lines, or one status when `stream` is false. */
export async function pull(ctx: Pick<ServerContext, "catalog" | "library">, body: PullRequest): Promise<Response | PullResponse> {
  // Lemonade's pull and delete read `name` when it is sent (an empty one is missing), else `model`.
  const model = registered(ctx, body.name ?? body.model);
  ctx.library.refuseOffline();
  if (body.stream === false) {
    await ctx.library.install(model).catch(rethrow("pull"));
    return { status: "success" };
  }
  const encoder = new TextEncoder();
  const line = (o: unknown) => encoder.encode(JSON.stringify(o) + "\n");
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(line({ status: "pulling manifest" }));
      try {
        await ctx.library.install(model, (p) =>
          controller.enqueue(line({ status: `downloading ${p.file}`, digest: `sha256:${p.file}`, completed: p.bytes_downloaded, total: p.bytes_total })),
        );
        controller.enqueue(line({ status: "success" }));
        controller.enqueue(line({ status: "success" }));
      } catch (err) {
        // Lemonade's failed pull ends with a line that carries only the error; a stopped
        // download's stream just ends, with neither an error nor a success line.
        if (!(err instanceof DownloadStopped)) controller.enqueue(line({ error: (err as Error).message }));
      }
      controller.close();
    },
  });
  return new Response(stream, { headers: { "content-type": "application/x-ndjson" } });
}

/** DELETE /api/delete */
export async function remove(ctx: Pick<ServerContext, "catalog" | "library">, body: DeleteRequest): Promise<Response> {
  const name = body.name ?? body.model;
  const known = name ? ctx.catalog.find(name) : undefined;
  // Lemonade's delete words an unknown model as its catalog does, unlike show and pull.
  if (name && (!known || !ctx.catalog.isSupported(known))) throw ApiError.of(E.ollamaModelNotFound, `Model not found: ${stripTag(name)}`);
  const model = registered(ctx, name);
  await ctx.library.delete(model.id).catch(rethrow("delete"));
  return new Response(null, { status: 200 });
}
