// The MCP gateway with the official @modelcontextprotocol/sdk client over Streamable HTTP, and
// the JSON-RPC error table with raw requests.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { MODELS, testModelsDir } from "../helpers/engines.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let client: Client;
let sandbox: string;
const CHAT = "extra.tiny-chat";

beforeAll(async () => {
  const models = testModelsDir();
  const extra = tempDir("lemonade-extra-");
  copyFileSync(join(models, MODELS.chat), join(extra, MODELS.chat));
  sandbox = tempDir("lemonade-mcp-");
  server = await startTestServer({ LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MCP_IMAGE_DIR: sandbox, LEMONADE_API_KEY: "k" });
  client = new Client({ name: "lemonade-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: "Bearer k" } } }),
  );
});
afterAll(async () => {
  await client.close();
  await server.close();
});

const rpc = (body: unknown, headers: Record<string, string> = { authorization: "Bearer k" }) =>
  fetch(`${server.url}/mcp`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/json", ...headers } });

const textOf = (r: any) => r.content.filter((c: any) => c.type === "text").map((c: any) => c.text);

describe("with the SDK client", () => {
  test("initialize negotiates, and tools/list names the five tools with schemas", async () => {
    expect(client.getServerVersion()?.name).toBe("lemonade-mcp");
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "lemonade_chat",
      "lemonade_generate_image",
      "lemonade_list_models",
      "lemonade_omni",
      "lemonade_transcribe_audio",
    ]);
    expect(tools.find((t) => t.name === "lemonade_chat")!.inputSchema.required).toEqual(["model", "messages"]);
  });

  test("lemonade_list_models reports what is downloaded and loaded", async () => {
    const result = await client.callTool({ name: "lemonade_list_models", arguments: {} });
    expect(result.isError).toBe(false);
    const [, json] = textOf(result);
    const summary = JSON.parse(json);
    // Lemonade's shapes: the loaded models as /v1/health lists them, the rest by their listed ids
    // (an extra model's bare name, which nothing else holds).
    const listed = "tiny-chat";
    expect([...summary.loaded, ...summary.available].map((m: { model_name: string }) => m.model_name)).toContain(listed);
    expect(summary.available.find((m: { model_name: string }) => m.model_name === listed)).toMatchObject({ recipe: "llamacpp", downloaded: true });
    expect(summary.suggested_to_pull.map((m: { model_name: string }) => m.model_name)).toContain("Qwen3-0.6B-GGUF");
    // Only a loaded model is recommended; none is loaded yet.
    expect(summary.recommended_chat_model).toBe(summary.loaded.find((m: { type: string }) => m.type === "llm")?.model_name ?? "");
  });

  test("lemonade_chat answers from the real engine", async () => {
    const result = await client.callTool({
      name: "lemonade_chat",
      arguments: { model: CHAT, messages: [{ role: "user", content: "hi" }], max_tokens: 5 },
    });
    expect(result.isError).toBe(false);
    expect(textOf(result)[0].length).toBeGreaterThan(0);
    const stats = await (await fetch(`${server.url}/v1/stats`, { headers: { authorization: "Bearer k" } })).json();
    expect(stats.output_tokens).toBe(5);
  });

  test("tool failures are isError results, not protocol errors", async () => {
    const missing = await client.callTool({ name: "lemonade_chat", arguments: { model: "no-such", messages: [{ role: "user", content: "x" }] } });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)[0]).toContain("no-such");
    const noMessages = await client.callTool({ name: "lemonade_chat", arguments: { model: CHAT } });
    expect(noMessages.isError).toBe(true);
    const omni = await client.callTool({ name: "lemonade_omni", arguments: { model: CHAT, messages: [{ role: "user", content: "x" }] } });
    expect(omni.isError).toBe(true);
    expect(textOf(omni)[0]).toContain("lemonade_chat");
    // No collection named and none downloaded: Lemonade's needs_model answer, nothing fetched.
    const unnamed = await client.callTool({ name: "lemonade_omni", arguments: { messages: [{ role: "user", content: "x" }] } });
    expect(unnamed.isError).toBe(true);
    expect(JSON.parse(textOf(unnamed)[1])).toEqual({
      status: "needs_model",
      tool_type: "omni",
      default_model: "LMX-Omni-5.5B-Lite",
      retry_with: { model: "an Omni collection name, recipe=collection.omni", allow_download: true },
    });
    const audio = await client.callTool({ name: "lemonade_transcribe_audio", arguments: { model: CHAT, audio_path: "/nonexistent.wav" } });
    expect(audio.isError).toBe(true);
  });
});

describe("the image sandbox", () => {
  const image = (args: Record<string, unknown>) =>
    client.callTool({ name: "lemonade_generate_image", arguments: { model: "SD-Turbo", prompt: "a lemon", ...args } });

  test("output paths that escape the sandbox are refused", async () => {
    for (const output_path of ["../escape.png", "/etc/evil.png", "a/../../escape.png"]) {
      const result = await image({ output_path });
      expect(result.isError).toBe(true);
      expect(textOf(result)[0]).toContain("outside the MCP image folder");
    }
    const dir = await image({ output_dir: "../../tmp" });
    expect(textOf(dir)[0]).toContain("outside the MCP image folder");
  });

  test("a symbolic link inside the sandbox cannot lead out", async () => {
    const outside = tempDir("lemonade-outside-");
    symlinkSync(outside, join(sandbox, "link"));
    const result = await image({ output_path: "link/x.png" });
    expect(result.isError).toBe(true);
    expect(textOf(result)[0]).toContain("through a link");
  });

  test("a path inside the sandbox passes the check and the model is what fails", async () => {
    mkdirSync(join(sandbox, "ok"), { recursive: true });
    const result = await image({ output_path: "ok/lemon.png" });
    expect(result.isError).toBe(true);
    expect(textOf(result)[0]).not.toContain("MCP image folder");
    expect(textOf(result)[0]).toMatch(/SD-Turbo|sd-cpp/);
  });
});

describe("JSON-RPC edge cases", () => {
  test("ping, notifications, and a batch", async () => {
    expect(await (await rpc({ jsonrpc: "2.0", id: 1, method: "ping" })).json()).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    const note = await rpc({ jsonrpc: "2.0", method: "notifications/initialized" });
    expect(note.status).toBe(202);
    expect(await note.text()).toBe("");
    const batch = await (
      await rpc([
        { jsonrpc: "2.0", id: "a", method: "ping" },
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: "b", method: "tools/list" },
      ])
    ).json();
    expect(batch.map((r: any) => r.id)).toEqual(["a", "b"]);
    expect(batch[1].result.tools).toHaveLength(5);
  });

  test("the error codes table", async () => {
    const code = async (body: unknown) => (await (await rpc(body)).json()).error.code;
    expect(await code("{not json")).toBe(-32700);
    // Every JSON-RPC error is answered 200, a body that is no request at all too (mcp.md's error model).
    expect((await rpc("{not json")).status).toBe(200);
    expect((await rpc({ id: 1, method: "ping" })).status).toBe(200);
    expect((await rpc([])).status).toBe(200);
    expect(await code({ id: 1, method: "ping" })).toBe(-32600);
    expect(await code({ jsonrpc: "2.0", id: 1 })).toBe(-32600);
    expect(await code([])).toBe(-32600);
    expect(await code({ jsonrpc: "2.0", id: 1, method: "resources/list" })).toBe(-32601);
    const unknown = await (await rpc({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "nope", arguments: {} } })).json();
    expect(unknown.result).toMatchObject({ isError: true, content: [{ type: "text", text: expect.stringContaining("Unknown tool: nope") }] });
    // A client's cancellation notice is taken (202, nothing to answer).
    expect((await rpc({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } })).status).toBe(202);
    expect(await code({ jsonrpc: "2.0", id: 1, method: "tools/call", params: {} })).toBe(-32602);
  });

  test("GET /mcp is 405; the API key is required", async () => {
    const get = await fetch(`${server.url}/mcp`, { headers: { authorization: "Bearer k" } });
    expect(get.status).toBe(405);
    expect((await rpc({ jsonrpc: "2.0", id: 1, method: "ping" }, {})).status).toBe(401);
  });
});
