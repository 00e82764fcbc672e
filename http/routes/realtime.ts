// WS /realtime and /v1/realtime: one protocols/realtime session per connection.
import { openai as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { RealtimeSession } from "../../protocols/realtime.ts";
import type { Binder } from "../bind.ts";

export function realtimeRoutes(bind: Binder, ctx: Pick<ServerContext, "catalog" | "proxy">): void {
  const sessions = new Map<string, RealtimeSession>();
  bind.ws(spec.realtime, {
    open(ws) {
      sessions.set(ws.id, new RealtimeSession(ctx, ws.data.query?.model ?? null, (m) => ws.send(JSON.stringify(m))));
    },
    message(ws, raw) {
      sessions.get(ws.id)?.handle(raw);
    },
    close(ws) {
      sessions.delete(ws.id);
    },
  });
}
