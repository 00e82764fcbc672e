// Ollama-compatible routes (root-level /api/*).
import type { Elysia } from "elysia";
import { bind } from "./bind.ts";
import { ollama as spec } from "../spec/index.ts";
import { E } from "../spec/errors.ts";
import { ApiError } from "../server/errors.ts";
import { ollamaDetails } from "../server/model-views.ts";
import type { ServerContext } from "../server/context.ts";

const tagged = (id: string) => `${id}:latest`;

export function ollamaRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
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
