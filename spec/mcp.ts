// The MCP gateway (mcp.md): JSON-RPC 2.0 over MCP's Streamable HTTP transport, tools only.
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";

export const PROTOCOL_VERSIONS = ["2025-06-18", "2025-03-26", "2024-11-05"] as const;

/** JSON-RPC error codes the gateway answers with. */
export const RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
} as const;

export const mcpPost = endpoint({
  id: "mcp.post",
  method: "POST",
  path: "/mcp",
  mount: "root",
  page: "mcp",
  errorStyle: "openai",
  access: "api",
  rawBody: true,
  summary: "MCP JSON-RPC endpoint (Streamable HTTP)",
  availability: "partially_available",
  description:
    "Lemonade's inference as a Model Context Protocol server: one JSON-RPC 2.0 message or a batch per POST, answered as JSON. Methods: `initialize`, `notifications/initialized`, `tools/list`, `tools/call`, `ping`. Tools: `lemonade_list_models`, `lemonade_chat`, `lemonade_transcribe_audio`, `lemonade_generate_image`, `lemonade_omni`. A notification alone is answered `202` with no body. Tool failures (bad arguments, a model that cannot load, a backend error) are successful results with `isError: true` and a text block `Error: <what failed>`; a model the registry has but this system cannot run is named with a suggested one that runs here, and a tool with no model named, loaded or downloaded answers `needs_model` (pass `model`, or `allow_download: true` for the tool's default). `output_path` and `output_dir` are confined to the sandbox folder (`LEMONADE_MCP_IMAGE_DIR`, default `<cache>/mcp-images`): relative paths resolve inside it, and paths escaping it by `..` or a symbolic link are refused.",
  notes:
    "JSON-RPC errors: `-32700` the body is not valid JSON; `-32600` not a JSON-RPC request (or an empty batch, or no `method`); `-32601` unknown method; `-32602` invalid `params` for a known method (`tools/call` without a string `name`, or `arguments` that is not an object); `-32603` an internal error.",
  body: T.Object(
    {
      jsonrpc: T.Literal("2.0", { description: 'Always `"2.0"`.' }),
      id: T.Optional(T.Union([T.String(), T.Number(), T.Null()], { description: "Request id; absent on notifications." })),
      method: T.String({ description: "The method to call." }),
      params: T.Optional(T.Unknown({ description: "The method's parameters." })),
    },
    { description: "One JSON-RPC message, or an array of them." },
  ),
  response: T.Object({
    jsonrpc: T.Literal("2.0", { description: 'Always `"2.0"`' }),
    id: T.Union([T.String(), T.Number(), T.Null()], { description: "The request's id" }),
    result: T.Optional(T.Unknown({ description: "The method's result" })),
    error: T.Optional(
      T.Object(
        { code: T.Integer({ description: "JSON-RPC error code" }), message: T.String({ description: "What went wrong" }) },
        { description: "Present instead of `result` on a JSON-RPC error" },
      ),
    ),
  }),
  example: {
    body: { jsonrpc: "2.0", id: 1, method: "ping" },
    response: '{"jsonrpc": "2.0", "id": 1, "result": {}}',
  },
});

export const mcpGet = endpoint({
  id: "mcp.get",
  method: "GET",
  path: "/mcp",
  mount: "root",
  page: "mcp",
  errorStyle: "openai",
  access: "api",
  summary: "Server-initiated stream (not supported)",
  availability: "not_available",
  description:
    "The server-initiated SSE channel is not offered; tools answer in the POST response. Always answered `405` (`Allow: POST`) with a JSON-RPC error body, code `-32600`.",
});

export type McpRequest = Static<typeof mcpPost.body>;
export type McpResponse = Static<typeof mcpPost.response>;
