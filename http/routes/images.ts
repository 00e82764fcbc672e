// OpenAI's image routes: generation (JSON), edits and variations (multipart), upscaling; the
// translation to sd-server and sd-cli is protocols/images'.
import { images as spec, metricsLabel } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import * as images from "../../protocols/images.ts";
import type { Binder } from "../bind.ts";

export function imageRoutes(bind: Binder, ctx: Pick<ServerContext, "catalog" | "library" | "options" | "proxy" | "standIns">): void {
  bind.http(spec.generations, ({ body, request }) => images.generate(ctx, body, request.signal, metricsLabel(spec.generations)));
  bind.http(spec.edits, ({ request }) => images.edit(ctx, request, "edit", metricsLabel(spec.edits)));
  bind.http(spec.variations, ({ request }) => images.edit(ctx, request, "variation", metricsLabel(spec.variations)));
  bind.http(spec.upscale, ({ body, request }) => images.upscale(ctx, body, request.signal));
}
