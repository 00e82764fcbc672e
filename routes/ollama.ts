// Ollama-compatible routes (root-level /api/*).
import type { Elysia } from "elysia";
import { bind } from "./bind.ts";
import { ollama as spec } from "../spec/index.ts";
import { E } from "../spec/errors.ts";
import { ApiError } from "../server/errors.ts";
import { ollamaDetails } from "../server/model-views.ts";
import type { ServerContext } from "../server/context.ts";
import {
  CREATED_AT,
  loadCtx,
  maybeUnload,
  ollamaChat,
  ollamaEmbed,
  ollamaGenerate,
  samplingFrom,
  toOpenAIMessages,
} from "../server/ollama.ts";
import { toEngineBody, needsLlm } from "./openai.ts";
import { deleteModel, installModel, refuseOffline } from "../server/pull.ts";
import type { CatalogModel } from "../models/catalog.ts";

const needsEmbedder = (m: CatalogModel) =>
  m.type === "embedding" ? null : new ApiError(400, "", `Model ${m.id} is not an embedding model`);

/** Ollama's `format`: "json" or a JSON schema, as OpenAI's response_format. */
function responseFormat(format: unknown): Record<string, unknown> | undefined {
  if (format === "json") return { type: "json_object" };
  if (format && typeof format === "object") return { type: "json_schema", json_schema: { schema: format } };
  return undefined;
}

const tagged = (id: string) => `${id}:latest`;

export function ollamaRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  bind(app, spec.chat, async ({ body, request }) => {
    const messages = body.messages ?? [];
    const unloaded = await maybeUnload(ctx, body, messages.length === 0, { message: { role: "assistant", content: "" } });
    if (unloaded) return unloaded;
    const { engineBody } = toEngineBody({
      messages: toOpenAIMessages(messages),
      ...samplingFrom(body),
      ...(body.tools ? { tools: body.tools } : {}),
      ...(responseFormat(body.format) ? { response_format: responseFormat(body.format) } : {}),
      ...(body.think === false ? { enable_thinking: false } : {}),
    });
    return ollamaChat(
      ctx,
      { model: body.model, path: "/v1/chat/completions", body: engineBody, check: needsLlm(), endpoint: "ollama_chat", signal: request.signal, ctxSize: loadCtx(body) },
      body.stream !== false,
    );
  });

  bind(app, spec.generate, async ({ body, request }) => {
    const prompt: string = body.prompt ?? "";
    const unloaded = await maybeUnload(ctx, body, prompt === "", { response: "" });
    if (unloaded) return unloaded;
    if (prompt === "") {
      // An empty prompt preloads the model, as Ollama clients use it.
      const lease = await ctx.router.acquire(body.model, { options: loadCtx(body) ? { ctx_size: loadCtx(body) } : undefined }).catch((e) => {
        throw e instanceof ApiError && e.status < 500 && e.status !== 404 ? e : new ApiError(404, e.code ?? "", e.message);
      });
      lease.release();
      return { model: body.model, created_at: CREATED_AT, response: "", done: true, done_reason: "load" };
    }
    return ollamaGenerate(
      ctx,
      {
        model: body.model,
        path: "/v1/completions",
        body: { prompt, ...samplingFrom(body) },
        check: needsLlm(),
        endpoint: "ollama_generate",
        signal: request.signal,
        ctxSize: loadCtx(body),
      },
      body.stream !== false,
    );
  });

  bind(app, spec.show, ({ body }) => {
    const name = body.model ?? body.name;
    if (!name) throw new ApiError(400, "missing_argument", "Missing required argument 'model'");
    const model = ctx.catalog.find(name);
    if (!model || !ctx.catalog.isSupported(model)) throw new ApiError(404, "model_not_found", `model '${name}' not found`);
    const ctxSize = ctx.router.resolve(model).ctx_size;
    const capabilities = [
      ...(model.type === "llm" ? ["completion"] : model.type === "embedding" ? ["embedding"] : []),
      ...(model.labels.some((l) => l === "tool-calling" || l === "tools") ? ["tools"] : []),
      ...(model.labels.includes("vision") ? ["vision"] : []),
      ...(model.labels.includes("reasoning") ? ["thinking"] : []),
    ];
    return {
      modelfile: `FROM ${model.checkpoints.main ?? ""}`,
      parameters: `num_ctx ${ctxSize}`,
      template: "",
      details: ollamaDetails(model),
      capabilities,
      model_info: {
        "general.architecture": model.recipe,
        [`${model.recipe}.context_length`]: ctxSize,
        "general.parameter_count": 0,
        "general.file_type": 0,
        "general.quantization_version": 0,
      },
    };
  });

  bind(app, spec.embed, async ({ body, request }) => {
    const embeddings = await ollamaEmbed(ctx, {
      model: body.model,
      path: "/v1/embeddings",
      body: { input: body.input },
      check: needsEmbedder,
      endpoint: "ollama_embed",
      signal: request.signal,
      ctxSize: loadCtx(body),
    });
    return { model: body.model, embeddings, total_duration: 0, load_duration: 0, prompt_eval_count: 0 };
  });

  bind(app, spec.embeddings, async ({ body, request }) => {
    const [embedding] = await ollamaEmbed(ctx, {
      model: body.model,
      path: "/v1/embeddings",
      body: { input: body.prompt },
      check: needsEmbedder,
      endpoint: "ollama_embeddings",
      signal: request.signal,
      ctxSize: loadCtx(body),
    });
    return { embedding };
  });

  /** A registered model by Ollama name; anything else is Ollama's 404. */
  const registered = (body: { model?: string; name?: string }) => {
    const name = body.model ?? body.name;
    if (!name) throw new ApiError(400, "missing_argument", "Missing required argument 'model'");
    const model = ctx.catalog.find(name);
    if (!model || !ctx.catalog.isSupported(model)) throw new ApiError(404, "model_not_found", `model '${name}' not found`);
    return model;
  };

  bind(app, spec.pull, async ({ body }) => {
    const model = registered(body);
    refuseOffline(ctx);
    if (body.stream === false) {
      await installModel(ctx, model).catch((e) => {
        throw new ApiError(500, e.code ?? "", e.message);
      });
      return { status: "success" };
    }
    const encoder = new TextEncoder();
    const line = (o: unknown) => encoder.encode(JSON.stringify(o) + "\n");
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(line({ status: "pulling manifest" }));
        try {
          await installModel(ctx, model, (p) =>
            controller.enqueue(
              line({ status: `downloading ${p.file}`, digest: `sha256:${p.file}`, completed: p.bytes_downloaded, total: p.bytes_total }),
            ),
          );
          controller.enqueue(line({ status: "success" }));
          controller.enqueue(line({ status: "success" }));
        } catch (err) {
          controller.enqueue(line({ status: "error", error: (err as Error).message }));
        }
        controller.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "application/x-ndjson" } });
  });

  bind(app, spec.remove, async ({ body }) => {
    const model = registered(body);
    await deleteModel(ctx, model.id).catch((e) => {
      throw new ApiError(e.status === 404 ? 404 : 500, e.code ?? "", e.message);
    });
    return new Response(null, { status: 200 });
  });

  bind(app, spec.tags, () => ({
    models: ctx.catalog
      .all()
      .filter((m) => ctx.catalog.isSupported(m) && ctx.catalog.isDownloaded(m))
      .map((m) => {
        const onDisk = ctx.catalog.files(m).reduce((n, f) => n + f.sizeBytes, 0);
        return {
          name: tagged(m.id),
          model: tagged(m.id),
          modified_at: "2024-01-01T00:00:00Z",
          size: onDisk || Math.round((m.size ?? 0) * 1e9),
          digest: spec.ZERO_DIGEST,
          details: ollamaDetails(m),
        };
      }),
  }));

  bind(app, spec.ps, () => ({
    models: ctx.router.list().map((s) => ({
      name: tagged(s.model.id),
      model: tagged(s.model.id),
      size: 0,
      digest: spec.ZERO_DIGEST,
      details: ollamaDetails(s.model),
      expires_at: "2099-01-01T00:00:00Z",
      size_vram: 0,
    })),
  }));

  bind(app, spec.version, () => ({ version: spec.OLLAMA_COMPAT_VERSION }));

  for (const def of [spec.create, spec.copy, spec.push, spec.blobs]) {
    bind(app, def, () => {
      throw ApiError.of(E.notSupportedOllama, `${def.path} is not supported by Lemonade: ${def.description || def.summary}`);
    });
  }
}
