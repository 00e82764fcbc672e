// WS /realtime and /v1/realtime: one RealtimeSession per connection.
import type { Elysia } from "elysia";
import { openai as spec, mountedPaths } from "../spec/index.ts";
import { RealtimeSession } from "../server/realtime.ts";
import type { ServerContext } from "../server/context.ts";

interface Socket {
  id: string;
  data: { [key: string]: any };
  send(data: unknown): unknown;
}

export function realtimeRoutes(app: Elysia<any, any, any, any, any, any, any>, ctx: ServerContext): void {
  const sessions = new Map<string, RealtimeSession>();
  for (const path of mountedPaths(spec.realtime)) {
    app.ws(path, {
      open(ws: Socket) {
        sessions.set(ws.id, new RealtimeSession(ctx, ws.data.query?.model ?? null, (m) => ws.send(JSON.stringify(m))));
      },
      message(ws: Socket, raw: unknown) {
        sessions.get(ws.id)?.handle(raw);
      },
      close(ws: Socket) {
        sessions.delete(ws.id);
      },
    });
  }
}
