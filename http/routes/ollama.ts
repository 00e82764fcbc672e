// Ollama-compatible routes (root-level /api/*); the translation is protocols/ollama's.
import { ollama as spec } from "../../spec/index.ts";
import { E } from "../../spec/errors.ts";
import { ApiError } from "../../lib/api-error.ts";
import type { ServerContext } from "../../runtime/context.ts";
import * as ollama from "../../protocols/ollama.ts";
import type { Binder } from "../bind.ts";

export function ollamaRoutes(bind: Binder, ctx: ServerContext): void {
  bind.http(spec.chat, ({ body, request, label }) => ollama.chat(ctx, body, request.signal, label));
  bind.http(spec.generate, ({ body, request, label }) => ollama.generate(ctx, body, request.signal, label));
  bind.http(spec.show, ({ body }) => ollama.show(ctx, body));
  bind.http(spec.embed, ({ body, request, label }) => ollama.embed(ctx, body, request.signal, label));
  bind.http(spec.embeddings, ({ body, request, label }) => ollama.embeddings(ctx, body, request.signal, label));
  bind.http(spec.pull, ({ body }) => ollama.pull(ctx, body));
  bind.http(spec.remove, ({ body }) => ollama.remove(ctx, body));
  bind.http(spec.tags, () => ollama.tags(ctx));
  bind.http(spec.ps, () => ollama.ps(ctx));
  bind.http(spec.version, () => ({ version: spec.OLLAMA_COMPAT_VERSION }));
  for (const def of [spec.create, spec.copy, spec.push, spec.blobs]) {
    bind.http(def, () => {
      throw ApiError.of(E.notSupportedOllama, `${def.path} is not supported by Lemonade: ${def.description || def.summary}`);
    });
  }
}
