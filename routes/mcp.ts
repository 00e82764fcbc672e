// POST /mcp (JSON-RPC) and GET /mcp (405: no server-initiated stream).
import type { Elysia } from "elysia";
import { bind } from "./bind.ts";
import { mcp as spec } from "../spec/index.ts";
import { handleMcp } from "../server/mcp.ts";
import { ApiError } from "../server/errors.ts";
import type { ServerContext } from "../server/context.ts";

export function mcpRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  bind(app, spec.mcpPost, async ({ request }) => handleMcp(ctx, await request.text(), request.signal));
  bind(app, spec.mcpGet, ({ set }) => {
    set.headers.allow = "POST";
    throw new ApiError(405, "method_not_allowed", "GET /mcp is not supported: this server offers no server-initiated stream; POST JSON-RPC messages instead");
  });
}
