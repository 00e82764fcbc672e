// POST /mcp (JSON-RPC, answered by protocols/mcp) and GET /mcp (405: no server-initiated stream).
import { mcp as spec } from "../../spec/index.ts";
import { ApiError } from "../../lib/api-error.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { handleMcp } from "../../protocols/mcp.ts";
import type { Binder } from "../bind.ts";

export function mcpRoutes(bind: Binder, ctx: ServerContext): void {
  bind.http(spec.mcpPost, async ({ request }) => handleMcp(ctx, await request.text(), request.signal));
  bind.http(spec.mcpGet, ({ set }) => {
    set.headers.allow = "POST";
    throw new ApiError(405, "method_not_allowed", "GET /mcp is not supported: this server offers no server-initiated stream; POST JSON-RPC messages instead");
  });
}
