// Ollama-compatible routes (root-level /api/*); the translation is protocols/ollama's.
import { metricsLabel, ollama as spec } from "../../spec/index.ts";
import { E } from "../../spec/errors.ts";
import { ApiError } from "../../lib/api-error.ts";
import type { ServerContext } from "../../runtime/context.ts";
import * as ollama from "../../protocols/ollama.ts";
import type { Binder } from "../bind.ts";
import { cachedJson } from "../view-cache.ts";

export function ollamaRoutes(bind: Binder, ctx: Pick<ServerContext, "catalog" | "library" | "options" | "proxy" | "scheduler" | "telemetry">): void {
  // Traced as Lemonade traces them: as the chat, completion or embeddings request each becomes.
  bind.http(spec.chat, ({ body, request }) =>
    ollama.chat(ctx, body, request.signal, metricsLabel(spec.chat), ctx.telemetry.start("LLM", "chat.completions", body.model, body, request.headers)),
  );
  bind.http(spec.generate, ({ body, request }) =>
    ollama.generate(ctx, body, request.signal, metricsLabel(spec.generate), ctx.telemetry.start("LLM", "completions", body.model, body, request.headers)),
  );
  bind.http(spec.show, ({ body }) => ollama.show(ctx, body));
  bind.http(spec.embed, ({ body, request }) =>
    ollama.embed(ctx, body, request.signal, metricsLabel(spec.embed), ctx.telemetry.start("EMBEDDING", "embeddings", body.model, body, request.headers)),
  );
  bind.http(spec.embeddings, ({ body, request }) =>
    ollama.embeddings(ctx, body, request.signal, metricsLabel(spec.embeddings), ctx.telemetry.start("EMBEDDING", "embeddings", body.model, { input: body.prompt }, request.headers)),
  );
  bind.http(spec.pull, ({ body }) => ollama.pull(ctx, body));
  bind.http(spec.remove, ({ body }) => ollama.remove(ctx, body));
  bind.http(spec.tags, () => cachedJson(ctx, "ollama:tags", () => ollama.tags(ctx)));
  bind.http(spec.ps, () => ollama.ps(ctx));
  bind.http(spec.version, () => ({ version: spec.OLLAMA_COMPAT_VERSION }));
  for (const def of [spec.create, spec.copy, spec.push, spec.blobs]) {
    // Lemonade's own words, which Ollama clients show as they are.
    bind.http(def, () => {
      throw ApiError.of(E.notSupportedOllama, "not supported by Lemonade");
    });
  }
}
