// llama.cpp-specific routes: rerank (to the model named), slots and tokenize (to the most
// recently used llama.cpp model).
import type { Elysia } from "elysia";
import { bind } from "./bind.ts";
import { llamacpp as spec } from "../spec/index.ts";
import { proxyToEngine, proxyToRecent } from "../server/proxy.ts";
import { ApiError } from "../server/errors.ts";
import { E } from "../spec/errors.ts";
import { toEngineBody } from "./openai.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { ServerContext } from "../server/context.ts";

const needsReranker = (model: CatalogModel) =>
  model.recipe === "llamacpp" && model.type === "reranking"
    ? null
    : new ApiError(400, "", `Model ${model.id} is not a llama.cpp reranking model`, "model");

/** Slot files are plain names inside the model's slot folder: no separators, no dot-files. */
const SLOT_FILE = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,200}$/;

export function llamacppRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  bind(app, spec.rerank, ({ body, request }) => {
    const { engineBody, loadOptions } = toEngineBody(body);
    return proxyToEngine(ctx, {
      model: body.model,
      path: "/v1/rerank",
      body: engineBody,
      stream: false,
      check: needsReranker,
      loadOptions,
      signal: request.signal,
      endpoint: "rerank",
      generation: false,
    });
  });

  bind(app, spec.slots, ({ request }) => proxyToRecent(ctx, { method: "GET", path: "/slots", signal: request.signal, endpoint: "slots" }));

  bind(app, spec.slotAction, ({ params, query, body, request }) => {
    const filename: unknown = body?.filename;
    if (Number(params.id) > 2 ** 31 - 1) throw ApiError.of(E.invalidArgument, `Slot id ${params.id} is too large for a 32-bit integer`, "id");
    if (query.action !== "erase") {
      if (typeof filename !== "string") {
        throw ApiError.of(E.missingArgument, `'filename' is required for action=${query.action}`, "filename");
      }
      if (!SLOT_FILE.test(filename) || filename.includes("..")) {
        throw ApiError.of(E.invalidArgument, `'filename' must be a plain file name in the slot folder, got ${JSON.stringify(filename)}`, "filename");
      }
    }
    return proxyToRecent(ctx, {
      method: "POST",
      path: `/slots/${params.id}?action=${query.action}`,
      body: query.action === "erase" ? {} : { filename },
      signal: request.signal,
      endpoint: "slots",
    });
  });

  bind(app, spec.tokenize, ({ body, request }) =>
    proxyToRecent(ctx, { method: "POST", path: "/tokenize", body, signal: request.signal, endpoint: "tokenize" }),
  );
}
