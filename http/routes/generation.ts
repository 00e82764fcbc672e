// Lemonade's media generation routes: 3D meshes and audio clips; the checks and the engine
// conversation are protocols/generation's.
import { generation as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { generateAudio, generateMesh } from "../../protocols/generation.ts";
import type { Binder } from "../bind.ts";

export function generationRoutes(bind: Binder, ctx: Pick<ServerContext, "proxy">): void {
  bind.http(spec.generations3d, ({ body, request }) => generateMesh(ctx, body, request.signal));
  bind.http(spec.audioGenerations, ({ body, request }) => generateAudio(ctx, body, request.signal));
}
