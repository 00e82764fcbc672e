// Ollama's API on top of the OpenAI-shaped path: requests become OpenAI chat/completion/embedding
// bodies for server/proxy, and answers (JSON or SSE) become Ollama's JSON or NDJSON.
import type { ServerContext } from "./context.ts";
import { ApiError } from "./errors.ts";
import { proxyToEngine } from "./proxy.ts";
import { readSse } from "./sse.ts";
import type { CatalogModel } from "../models/catalog.ts";

export const CREATED_AT = "2024-01-01T00:00:00Z";

type Json = Record<string, any>;

const OPTION_KEYS = ["temperature", "top_p", "seed", "stop", "num_predict", "repeat_penalty"] as const;

/** Sampling options from `options`, with top-level keys winning, in OpenAI/llama.cpp names. */
export function samplingFrom(body: Json): Json {
  const merged: Json = { ...(body.options ?? {}) };
  for (const k of OPTION_KEYS) if (body[k] !== undefined) merged[k] = body[k];
  const out: Json = {};
  if (merged.temperature !== undefined) out.temperature = merged.temperature;
  if (merged.top_p !== undefined) out.top_p = merged.top_p;
  if (merged.seed !== undefined) out.seed = merged.seed;
  if (merged.stop !== undefined) out.stop = merged.stop;
  if (merged.num_predict !== undefined && merged.num_predict >= 0) out.max_tokens = merged.num_predict;
  // llama.cpp takes Ollama's repeat_penalty as is; it is the same knob.
  if (merged.repeat_penalty !== undefined) out.repeat_penalty = merged.repeat_penalty;
  return out;
}

/** The load options a request carries: `ctx_size`, else `options.num_ctx`. */
export function loadCtx(body: Json): number | undefined {
  return body.ctx_size ?? body.options?.num_ctx;
}

function imageUrl(b64: string): string {
  const mime = b64.startsWith("/9j/") ? "image/jpeg" : b64.startsWith("R0lG") ? "image/gif" : b64.startsWith("UklG") ? "image/webp" : "image/png";
  return `data:${mime};base64,${b64}`;
}

/** Ollama messages -> OpenAI messages: images become image parts, tool-call arguments strings. */
export function toOpenAIMessages(messages: Json[]): Json[] {
  return messages.map((m) => {
    const out: Json = { role: m.role, content: m.content ?? "" };
    if (Array.isArray(m.images) && m.images.length) {
      out.content = [
        ...(m.content ? [{ type: "text", text: m.content }] : []),
        ...m.images.map((img: string) => ({ type: "image_url", image_url: { url: imageUrl(img) } })),
      ];
    }
    if (Array.isArray(m.tool_calls)) {
      out.tool_calls = m.tool_calls.map((c: Json, i: number) => ({
        id: c.id ?? `call_${i}`,
        type: "function",
        function: {
          name: c.function?.name,
          arguments: typeof c.function?.arguments === "string" ? c.function.arguments : JSON.stringify(c.function?.arguments ?? {}),
        },
      }));
    }
    if (m.role === "tool") {
      if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
      if (m.tool_name) out.name = m.tool_name;
    }
    return out;
  });
}

/** OpenAI tool calls -> Ollama's, whose arguments are objects. */
function toOllamaToolCalls(calls: Json[] | undefined): Json[] | undefined {
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

function counts(usage: Json | undefined, timings: Json | undefined): Json {
  return {
    prompt_eval_count: usage?.prompt_tokens ?? 0,
    eval_count: usage?.completion_tokens ?? 0,
    total_duration: 0,
    load_duration: 0,
    prompt_eval_duration: ns(timings?.prompt_ms),
    eval_duration: ns(timings?.predicted_ms),
  };
}

/** Loading failures are 404 on Ollama's routes; engine failures 500, whatever the engine said. */
export function ollamaError(err: unknown): never {
  if (err instanceof ApiError) {
    if (["model_not_found", "model_not_supported", "model_load_error"].includes(err.code)) {
      throw new ApiError(404, err.code, err.message);
    }
    if (err.status === 409 || err.status === 400) throw err;
    throw new ApiError(500, err.code, err.message);
  }
  throw err;
}

async function engineJson(res: Response): Promise<Json> {
  const text = await res.text();
  if (!res.ok) {
    let message = text;
    try {
      const j = JSON.parse(text);
      message = typeof j.error === "string" ? j.error : (j.error?.message ?? text);
    } catch {}
    throw new ApiError(500, "backend_error", `Backend error (${res.status}): ${message}`);
  }
  return JSON.parse(text);
}

/** The engine's stream events, parsed, up to `[DONE]`; an error event ends it with a throw. */
async function* engineEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<Json> {
  for await (const { data } of readSse(body)) {
    if (data === "[DONE]") return;
    const ev = JSON.parse(data);
    if (ev.error) throw new Error(ev.error.message ?? String(ev.error));
    yield ev;
  }
}

function ndjson(lines: AsyncIterable<Json>): Response {
  const encoder = new TextEncoder();
  const iterator = lines[Symbol.asyncIterator]();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await iterator.next();
        if (done) controller.close();
        else controller.enqueue(encoder.encode(JSON.stringify(value) + "\n"));
      } catch (err) {
        controller.enqueue(encoder.encode(JSON.stringify({ error: (err as Error).message }) + "\n"));
        controller.close();
      }
    },
    async cancel() {
      await iterator.return?.();
    },
  });
  return new Response(body, { headers: { "content-type": "application/x-ndjson" } });
}

/** `keep_alive: 0` with nothing to say: unload the model (Ollama's way of freeing memory). */
export async function maybeUnload(ctx: ServerContext, body: Json, empty: boolean, reply: Json): Promise<Json | null> {
  if (!(empty && (body.keep_alive === 0 || body.keep_alive === "0" || body.keep_alive === "0s"))) return null;
  const model = ctx.catalog.find(body.model);
  if (!model) throw new ApiError(404, "model_not_found", `model '${body.model}' not found`);
  await ctx.router.unload(model.id);
  return { model: body.model, created_at: CREATED_AT, ...reply, done: true, done_reason: "unload" };
}

interface Translation {
  model: string;
  path: string;
  body: Json;
  check: (m: CatalogModel) => ApiError | null;
  endpoint: string;
  signal: AbortSignal;
  ctxSize?: number;
}

function call(ctx: ServerContext, t: Translation, stream: boolean) {
  return proxyToEngine(ctx, {
    model: t.model,
    path: t.path,
    body: { ...t.body, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) },
    stream,
    check: t.check,
    loadOptions: t.ctxSize === undefined ? undefined : { ctx_size: t.ctxSize },
    signal: t.signal,
    endpoint: t.endpoint,
    generation: true,
  }).catch(ollamaError);
}

/** /api/chat */
export async function ollamaChat(ctx: ServerContext, t: Translation, stream: boolean): Promise<Response> {
  const base = { model: t.model, created_at: CREATED_AT };
  // Tool calls need the whole answer to parse, so a streamed tool request runs non-streaming.
  const hasTools = Array.isArray(t.body.tools) && t.body.tools.length > 0;
  if (!stream || hasTools) {
    const json = await engineJson(await call(ctx, t, false));
    const choice = json.choices?.[0] ?? {};
    const message: Json = { role: "assistant", content: choice.message?.content ?? "" };
    if (choice.message?.reasoning_content) message.thinking = choice.message.reasoning_content;
    const toolCalls = toOllamaToolCalls(choice.message?.tool_calls);
    if (toolCalls) message.tool_calls = toolCalls;
    const final = { ...base, message, done: true, done_reason: choice.finish_reason ?? "stop", ...counts(json.usage, json.timings) };
    if (!stream) return Response.json(final);
    return ndjson(
      (async function* () {
        yield { ...base, message, done: false };
        yield { ...final, message: { role: "assistant", content: "" } };
        yield { ...final, message: { role: "assistant", content: "" }, done_reason: "stop" };
      })(),
    );
  }
  const res = await call(ctx, t, true);
  if (!res.ok || !res.body) await engineJson(res);
  return ndjson(
    (async function* () {
      let usage: Json | undefined;
      let timings: Json | undefined;
      let reason = "stop";
      for await (const ev of engineEvents(res.body!)) {
        usage = ev.usage ?? usage;
        timings = ev.timings ?? timings;
        const choice = ev.choices?.[0];
        if (!choice) continue;
        const d = choice.delta ?? {};
        if (d.content !== undefined || d.reasoning_content || d.role) {
          const message: Json = { role: "assistant", content: d.content ?? "" };
          if (d.reasoning_content) message.thinking = d.reasoning_content;
          yield { ...base, message, done: false };
        }
        if (choice.finish_reason) reason = choice.finish_reason;
      }
      // Ollama's own clients stop reading at the first `done` line, so it carries the counts too;
      // the documented counts line follows it.
      yield { ...base, message: { role: "assistant", content: "" }, done: true, done_reason: reason, ...counts(usage, timings) };
      yield { ...base, message: { role: "assistant", content: "" }, done: true, done_reason: "stop", ...counts(usage, timings) };
    })(),
  );
}

/** /api/generate */
export async function ollamaGenerate(ctx: ServerContext, t: Translation, stream: boolean): Promise<Response> {
  const base = { model: t.model, created_at: CREATED_AT };
  if (!stream) {
    const json = await engineJson(await call(ctx, t, false));
    const choice = json.choices?.[0] ?? {};
    return Response.json({
      ...base,
      response: choice.text ?? "",
      done: true,
      done_reason: choice.finish_reason ?? "stop",
      context: [],
      ...counts(json.usage, undefined),
    });
  }
  const res = await call(ctx, t, true);
  if (!res.ok || !res.body) await engineJson(res);
  return ndjson(
    (async function* () {
      let usage: Json | undefined;
      let reason = "stop";
      for await (const ev of engineEvents(res.body!)) {
        usage = ev.usage ?? usage;
        const choice = ev.choices?.[0];
        if (!choice) continue;
        if (choice.text) yield { ...base, response: choice.text, done: false };
        if (choice.finish_reason) reason = choice.finish_reason;
      }
      yield { ...base, response: "", done: true, done_reason: reason, context: [], ...counts(usage, undefined) };
      yield { ...base, response: "", done: true, done_reason: "stop", context: [], ...counts(usage, undefined) };
    })(),
  );
}

/** /api/embed and /api/embeddings: OpenAI embeddings, as float arrays in input order. */
export async function ollamaEmbed(ctx: ServerContext, t: Translation): Promise<number[][]> {
  const json = await engineJson(
    await proxyToEngine(ctx, {
      model: t.model,
      path: "/v1/embeddings",
      body: { ...t.body, encoding_format: "float" },
      stream: false,
      check: t.check,
      loadOptions: t.ctxSize === undefined ? undefined : { ctx_size: t.ctxSize },
      signal: t.signal,
      endpoint: "embeddings",
      generation: false,
    }).catch(ollamaError),
  );
  return [...json.data].sort((a: Json, b: Json) => a.index - b.index).map((d: Json) => d.embedding);
}
