// Ollama-compatible routes (root-level /api/*).
import type { Elysia } from "elysia";
import { bind } from "./bind.ts";
import { ollama as spec } from "../spec/index.ts";
import { E } from "../spec/errors.ts";
import { ApiError } from "../server/errors.ts";

export function ollamaRoutes(app: Elysia<any, any, any, any, any, any, any>): void {
  bind(app, spec.version, () => ({ version: spec.OLLAMA_COMPAT_VERSION }));

  for (const def of [spec.create, spec.copy, spec.push, spec.blobs]) {
    bind(app, def, () => {
      throw ApiError.of(E.notSupportedOllama, `${def.path} is not supported by Lemonade: ${def.description || def.summary}`);
    });
  }
}
