// Where an endpoint is bound: one spec/ definition becomes one Elysia route per bound path (an HTTP
// route's versioned paths under /v1 alone, http/version-prefixes.ts; a WebSocket route's every one),
// with the definition's schemas as its validation, its typed handler inputs (Static<>) and the
// type of the handler's answer (`Out`: the response schema's Static<>, or a Response). The handler
// is handed to Elysia as it is: Elysia reads a handler's source to learn which parts of the request
// it uses, and a wrapper around it would make every route parse everything. The binder records every definition it bound: the app answers errors in the bound
// definition's style and checks keys by its access class, and a test checks that spec/ and the
// app agree.
import type { Static, TSchema } from "@sinclair/typebox";
import { answeredSubprotocol } from "./auth.ts";
import { parseJsonBody, type BodyLimits } from "./body.ts";
import { mountedPaths, type EndpointDef } from "../spec/endpoint.ts";
import { boundPaths } from "./version-prefixes.ts";

type Input<S> = S extends TSchema ? Static<S> : undefined;

export interface HandlerContext<D extends EndpointDef> {
  body: Input<D["body"]>;
  query: Input<D["query"]>;
  params: Input<D["params"]>;
  request: Request;
  set: { status?: number | string; headers: Record<string, string | number> };
}

/** What a handler answers: the `Static<>` type of its definition's JSON response schema (so tsc
 * fails when an answer's shape drifts from the documented one), or a `Response` it built itself (a
 * stream, a binary body, an error body in the route's style). A definition with no response schema,
 * or one answered in another content type, leaves the answer unchecked. */
export type Out<D extends EndpointDef> = D["response"] extends TSchema ? (D["contentType"] extends string ? unknown : Static<D["response"]> | Response) : unknown;

export type Handler<D extends EndpointDef> = (ctx: HandlerContext<D>) => Promise<Out<D>> | Out<D>;

/** The part of Elysia's socket wrapper the WebSocket routes use. */
export interface Socket {
  id: string;
  data: { query?: Record<string, string | undefined>; request?: Request };
  send(data: unknown): unknown;
}

export interface SocketHandlers {
  open?(ws: Socket): void;
  message?(ws: Socket, raw: unknown): void;
  close?(ws: Socket): void;
}

/** The part of Elysia's app the binder adds routes with: its full type carries every route's
 * types, which the binder neither knows nor needs (the hooks it hands over are built at run time). */
interface App {
  get(path: string, handler: never, hooks: never): unknown;
  post(path: string, handler: never, hooks: never): unknown;
  delete(path: string, handler: never, hooks: never): unknown;
  head(path: string, handler: () => Response): unknown;
  ws(path: string, options: never): unknown;
}

export class Binder {
  /** Every definition bound, in binding order. */
  readonly bound: EndpointDef[] = [];

  private readonly parse: (ctx: { request: Request }) => Promise<unknown>;

  constructor(
    private readonly app: App,
    limits: BodyLimits,
  ) {
    this.parse = ({ request }) => parseJsonBody(request, limits);
  }

  private record(def: EndpointDef): void {
    if (this.bound.includes(def)) throw new Error(`${def.id} is bound twice`);
    this.bound.push(def);
  }

  // The definition alone decides D: a handler inferred from too would widen its answer's literals
  // (`status: "ok"` read as a string) before they are checked against the response schema.
  http<D extends EndpointDef>(def: D, handler: NoInfer<Handler<D>>): void {
    if (def.method === "WS") throw new Error(`${def.id}: WebSocket routes are bound with ws()`);
    const hooks: Record<string, unknown> = {};
    if (def.rawBody) hooks.parse = "none";
    else if (def.body) {
      hooks.body = def.body;
      hooks.parse = this.parse;
    }
    const aliases = def.bodyAliases;
    if (aliases) {
      // Before validation: `{"model": "X"}` is validated, and handled, as `{"model_name": "X"}`.
      hooks.transform = ({ body }: { body: unknown }) => {
        if (typeof body !== "object" || body === null) return;
        const b = body as Record<string, unknown>;
        for (const [alias, name] of Object.entries(aliases)) {
          if (b[name] === undefined && b[alias] !== undefined) b[name] = b[alias];
        }
      };
    }
    if (def.query) hooks.query = def.query;
    if (def.params) hooks.params = def.params;
    this.record(def);
    // Under /v1 only: http/version-prefixes.ts answers the other prefixes with these routes.
    for (const path of boundPaths(def)) {
      if (def.method === "GET") this.app.get(path, handler as never, hooks as never);
      else if (def.method === "POST") this.app.post(path, handler as never, hooks as never);
      else if (def.method === "DELETE") this.app.delete(path, handler as never, hooks as never);
      if (def.head) this.app.head(path, () => new Response(null, { status: 200 }));
    }
  }

  ws(def: EndpointDef, handlers: SocketHandlers): void {
    if (def.method !== "WS") throw new Error(`${def.id}: only WebSocket routes are bound with ws()`);
    // A browser closes a socket whose answer names none of the subprotocols it offered.
    const upgrade = (context: { request: Request; set: { headers: Record<string, string> } }) => {
      const protocol = answeredSubprotocol(context.request);
      if (protocol) context.set.headers["sec-websocket-protocol"] = protocol;
    };
    this.record(def);
    for (const path of mountedPaths(def)) this.app.ws(path, { ...handlers, upgrade } as never);
  }
}
