// llama.cpp-specific routes: rerank (to the model named), slots and tokenize (to the most
// recently used llama.cpp model).
import { llamacpp as spec, metricsLabel } from "../../spec/index.ts";
import { E } from "../../spec/errors.ts";
import { sharedEnginePath } from "../../spec/recipes.ts";
import { ApiError } from "../../lib/api-error.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { needs, needsReranker, toEngineBody } from "../../protocols/openai.ts";
import type { Binder } from "../bind.ts";

/** Slot files are plain names inside the model's slot folder: no separators, no dot-files. */
const SLOT_FILE = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,200}$/;

export function llamacppRoutes(bind: Binder, ctx: Pick<ServerContext, "proxy" | "telemetry">): void {
  bind.http(spec.rerank, ({ body, request }) => {
    const { engineBody, loadOptions } = toEngineBody(body);
    return ctx.proxy.toModel({
      model: body.model,
      path: sharedEnginePath("rerank"),
      body: engineBody,
      check: needsReranker,
      loadOptions,
      signal: request.signal,
      span: ctx.telemetry.start("RERANKER", "reranking", body.model, body, request.headers),
      endpoint: metricsLabel(spec.rerank),
      generation: false,
    });
  });

  bind.http(spec.slots, ({ request }) =>
    ctx.proxy.toRecent({ method: "GET", path: sharedEnginePath("slots"), signal: request.signal, endpoint: metricsLabel(spec.slots), check: needs("slots") }),
  );

  bind.http(spec.slotAction, ({ params, query, body, request }) => {
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
    return ctx.proxy.toRecent({
      method: "POST",
      path: `${sharedEnginePath("slots")}/${params.id}?action=${query.action}`,
      body: query.action === "erase" ? {} : { filename },
      signal: request.signal,
      endpoint: metricsLabel(spec.slotAction),
      check: needs("slots"),
    });
  });

  bind.http(spec.tokenize, ({ body, request }) =>
    ctx.proxy.toRecent({
      method: "POST",
      path: sharedEnginePath("tokenize"),
      body,
      signal: request.signal,
      endpoint: metricsLabel(spec.tokenize),
      check: needs("tokenize"),
    }),
  );
}
