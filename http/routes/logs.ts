// WS /logs/stream: a snapshot of retained log entries, then each new entry as it is logged.
import type { Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { operations as spec } from "../../spec/index.ts";
import type { ServerContext } from "../../runtime/context.ts";
import type { Binder, Socket } from "../bind.ts";

/** What the server sends: the route's documented messages, nothing else. */
const send = (ws: Socket, message: Static<typeof spec.LogsServerMessage>) => ws.send(message);

export function logStreamRoute(bind: Binder, ctx: Pick<ServerContext, "logger">): void {
  const subscriptions = new Map<string, () => void>();
  const drop = (id: string) => {
    subscriptions.get(id)?.();
    subscriptions.delete(id);
  };

  bind.ws(spec.logsStream, {
    message(ws, raw) {
      let message: unknown = raw;
      if (typeof raw === "string") {
        try {
          message = JSON.parse(raw);
        } catch {
          message = undefined;
        }
      }
      if (!Value.Check(spec.LogsSubscribe, message)) {
        send(ws, { type: "error", error: { message: 'Expected {"type": "logs.subscribe", "after_seq": <integer|null>}' } });
        return;
      }
      drop(ws.id);
      send(ws, { type: "logs.snapshot", entries: ctx.logger.snapshot(message.after_seq ?? null) });
      subscriptions.set(
        ws.id,
        ctx.logger.subscribe((entry) => send(ws, { type: "logs.entry", entry })),
      );
    },
    close(ws) {
      drop(ws.id);
    },
  });
}
