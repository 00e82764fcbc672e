// Binds a spec/ definition to Elysia: one route per mounted prefix, with the definition's schemas
// as the route's validation.
import type { Elysia } from "elysia";
import { ApiError } from "../server/errors.ts";
import { E } from "../spec/errors.ts";
import { mountedPaths, type EndpointDef } from "../spec/endpoint.ts";

export interface HandlerContext {
  body: any;
  query: any;
  params: any;
  request: Request;
  set: { status?: number | string; headers: Record<string, string | number> };
}

export type Handler = (ctx: HandlerContext) => unknown;

/** Reads the body as JSON whatever the Content-Type says (many local-AI clients send none), and
 * reports a body that does not parse as the documented invalid_json error. */
async function parseJsonBody({ request }: { request: Request }): Promise<unknown> {
  const text = await request.text();
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw ApiError.of(E.invalidJson, `The request body is not valid JSON: ${(err as Error).message}`);
  }
}

export function bind(app: Elysia<any, any, any, any, any, any, any>, def: EndpointDef, handler: Handler): void {
  if (def.method === "WS") throw new Error(`${def.id}: WebSocket routes are bound with app.ws`);
  const hooks: Record<string, unknown> = {};
  if (def.rawBody) hooks.parse = "none";
  else if (def.body) {
    hooks.body = def.body;
    hooks.parse = parseJsonBody;
  }
  if (def.query) hooks.query = def.query;
  if (def.params) hooks.params = def.params;
  for (const path of mountedPaths(def)) {
    const h = handler as any;
    if (def.method === "GET") app.get(path, h, hooks as any);
    else if (def.method === "POST") app.post(path, h, hooks as any);
    else if (def.method === "DELETE") app.delete(path, h, hooks as any);
    if (def.head) app.head(path, () => new Response(null, { status: 200 }));
  }
}
