// WS /spans/stream and /traces/stream: each finished span from the span bus, to the connections
// protocols/spans.ts lets see it; `auth` messages answered on the same socket.
import { operations as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import { SpansConnection } from "../../protocols/spans.ts";
import { presentedKey } from "../auth.ts";
import type { Binder, Socket } from "../bind.ts";

export function spansStreamRoute(bind: Binder, ctx: Pick<ServerContext, "config" | "spans">): void {
  const keys = { apiKey: ctx.config.apiKey, adminApiKey: ctx.config.adminApiKey };
  const connections = new Map<string, { ws: Socket; conn: SpansConnection }>();
  let unsubscribe: (() => void) | null = null;
  // Listening only while a connection is open keeps the tracer from building spans nobody reads.
  const listen = () => {
    if (connections.size > 0 && unsubscribe === null) {
      unsubscribe = ctx.spans.subscribe((span) => {
        for (const { ws, conn } of connections.values()) {
          const view = conn.view(span);
          if (view) ws.send(JSON.stringify(view));
        }
      });
    } else if (connections.size === 0 && unsubscribe !== null) {
      unsubscribe();
      unsubscribe = null;
    }
  };

  bind.ws(spec.spansStream, {
    open(ws) {
      const request = ws.data.request;
      const token = request ? presentedKey(request, new URL(request.url)) : null;
      connections.set(ws.id, { ws, conn: new SpansConnection(keys, token, ws.data.query?.client_session_id ?? null) });
      listen();
    },
    message(ws, raw) {
      const entry = connections.get(ws.id);
      if (entry) ws.send(JSON.stringify(entry.conn.handle(typeof raw === "string" ? raw : JSON.stringify(raw))));
    },
    close(ws) {
      connections.delete(ws.id);
      listen();
    },
  });
}
