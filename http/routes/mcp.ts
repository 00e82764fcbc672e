// POST /mcp (JSON-RPC, answered by protocols/mcp) and GET /mcp (405: no server-initiated stream).
import { mcp as spec } from "../../spec/index.ts";
import { ApiError } from "../../lib/api-error.ts";
import { handleMcp, mcpBodyError, mcpGetRefused, type McpContext } from "../../protocols/mcp.ts";
import { DEFAULT_MAX_DEPTH, readJsonText } from "../body.ts";
import type { Binder } from "../bind.ts";

export function mcpRoutes(bind: Binder, ctx: McpContext): void {
  const limits = { maxBytes: ctx.config.maxBodyBytes, maxDepth: DEFAULT_MAX_DEPTH };
  bind.http(spec.mcpPost, async ({ request }) => {
    let text: string;
    try {
      text = await readJsonText(request, limits);
    } catch (err) {
      if (err instanceof ApiError) return mcpBodyError(err.status, err.message);
      throw err;
    }
    return handleMcp(ctx, text, request.signal);
  });
  bind.http(spec.mcpGet, () => mcpGetRefused());
}
