// The MCP gateway with the official @modelcontextprotocol/sdk client over Streamable HTTP, and
// the JSON-RPC error table with raw requests.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, realpathSync, symlinkSync } from "node:fs";
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
    // `model` is optional on every tool, as Lemonade's: a loaded or downloaded model of the kind is used.
    expect(tools.find((t) => t.name === "lemonade_chat")!.inputSchema.required).toEqual(["messages"]);
    expect(tools.find((t) => t.name === "lemonade_generate_image")!.inputSchema.required).toEqual(["prompt"]);
    expect(tools.find((t) => t.name === "lemonade_transcribe_audio")!.inputSchema.required).toBeUndefined();
    expect(client.getServerCapabilities()).toEqual({ tools: {} });
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
    // The summary line, as Lemonade's: nothing loaded, so the models to pull.
    if (!summary.loaded.length) {
      expect(textOf(result)[0]).toBe(`No models are currently loaded. No loaded LLM. Suggested models to pull: ${summary.suggested_to_pull.map((m: { model_name: string }) => m.model_name).join(", ")}.`);
    }
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

  test("lemonade_chat without a model uses the downloaded LLM; Anthropic-style text blocks are read as text", async () => {
    const result = await client.callTool({
      name: "lemonade_chat",
      arguments: { messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], max_tokens: 3 },
    });
    expect(result.isError).toBe(false);
    expect(textOf(result)[0].length).toBeGreaterThan(0);
  });

  test("tool failures are isError results, not protocol errors, worded as Lemonade's ('Error: ' and what failed)", async () => {
    const missing = await client.callTool({ name: "lemonade_chat", arguments: { model: "no-such", messages: [{ role: "user", content: "x" }] } });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toEqual(["Error: Model not found: no-such"]);
    const noMessages = await client.callTool({ name: "lemonade_chat", arguments: { model: CHAT } });
    expect(noMessages).toMatchObject({ isError: true, content: [{ type: "text", text: "Error: Missing or non-array argument: messages" }] });
    // A model the registry has that cannot run here: Lemonade's "not available" answer, naming one that runs.
    const npu = await client.callTool({ name: "lemonade_chat", arguments: { model: "Qwen2.5-0.5B-Instruct-CPU", messages: [{ role: "user", content: "x" }] } });
    expect(npu.isError).toBe(true);
    expect(textOf(npu)[0]).toMatch(
      /^Model 'Qwen2\.5-0\.5B-Instruct-CPU' is not available on this lemonade server\. Ryzen AI LLM \(ryzenai-llm\) is not available in this server: its models cannot be loaded here\. Try '[^']+' for portable chat, or call `lemonade_list_models` to see what's available\.$/,
    );
    // No image model named, loaded or downloaded: needs_model, nothing fetched.
    const image = await client.callTool({ name: "lemonade_generate_image", arguments: { prompt: "a lemon" } });
    expect(image.isError).toBe(true);
    expect(JSON.parse(textOf(image)[1])).toEqual({ status: "needs_model", tool_type: "image", default_model: "SD-Turbo", retry_with: { model: "an explicit model name", allow_download: true } });
    expect(textOf(await client.callTool({ name: "lemonade_generate_image", arguments: { model: "SD-Turbo" } }))[0]).toBe("Error: Missing or non-string argument: prompt");
    const both = await client.callTool({ name: "lemonade_generate_image", arguments: { model: "SD-Turbo", prompt: "x", output_path: "a.png", output_dir: "d" } });
    expect(textOf(both)[0]).toBe("Error: Provide at most one of `output_path` or `output_dir`, not both.");
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
    expect(textOf(audio)).toEqual(["Error: audio_path not found: /nonexistent.wav"]);
    const noAudio = await client.callTool({ name: "lemonade_transcribe_audio", arguments: { model: CHAT } });
    expect(textOf(noAudio)).toEqual(["Error: Provide either `audio_path` (path to a local audio file) or `audio_base64` (base64-encoded audio bytes)."]);
    const empty = await client.callTool({ name: "lemonade_transcribe_audio", arguments: { model: CHAT, audio_base64: "" } });
    expect(textOf(empty)).toEqual(["Error: audio_base64 decoded to zero bytes. If you meant to pass a file path, use the `audio_path` argument instead."]);
    // A model of the wrong kind is named by the id /v1/models lists it by (the extra model's bare name).
    const wrongKind = await client.callTool({ name: "lemonade_transcribe_audio", arguments: { model: CHAT, audio_base64: "UklGRg==" } });
    expect(textOf(wrongKind)).toEqual(["Error: Model tiny-chat is not a transcription model. Use a Whisper model such as Whisper-Tiny."]);
    const notChat = await client.callTool({ name: "lemonade_chat", arguments: { model: "Whisper-Tiny", messages: [{ role: "user", content: "x" }] } });
    expect(textOf(notChat)).toEqual(["Error: Model Whisper-Tiny is not a chat model; use lemonade_list_models to find one"]);
  });
});

describe("the image sandbox", () => {
  const image = (args: Record<string, unknown>) =>
    client.callTool({ name: "lemonade_generate_image", arguments: { model: "SD-Turbo", prompt: "a lemon", ...args } });

  test("output paths that escape the sandbox are refused", async () => {
    for (const output_path of ["../escape.png", "/etc/evil.png", "a/../../escape.png"]) {
      const result = await image({ output_path });
      expect(result.isError).toBe(true);
      expect(textOf(result)[0]).toBe(
        `Error: \`output_path\` must resolve to a location inside the MCP image sandbox (${realpathSync(sandbox)}). Set LEMONADE_MCP_IMAGE_DIR to change the sandbox root. Rejected: ${output_path}`,
      );
    }
    const dir = await image({ output_dir: "../../tmp" });
    expect(textOf(dir)[0]).toStartWith("Error: `output_dir` must resolve to a location inside the MCP image sandbox");
    expect(textOf(await image({ output_path: "" }))[0]).toBe("Error: `output_path` must not be empty.");
  });

  test("a symbolic link inside the sandbox cannot lead out", async () => {
    const outside = tempDir("lemonade-outside-");
    symlinkSync(outside, join(sandbox, "link"));
    const result = await image({ output_path: "link/x.png" });
    expect(result.isError).toBe(true);
    expect(textOf(result)[0]).toContain("must resolve to a location inside the MCP image sandbox");
  });

  test("a path inside the sandbox passes the check and the model is what fails", async () => {
    mkdirSync(join(sandbox, "ok"), { recursive: true });
    const result = await image({ output_path: "ok/lemon.png" });
    expect(result.isError).toBe(true);
    expect(textOf(result)[0]).not.toContain("MCP image sandbox");
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

  test("the error codes table, with Lemonade's messages", async () => {
    const code = async (body: unknown) => (await (await rpc(body)).json()).error.code;
    const error = async (body: unknown) => (await (await rpc(body)).json()).error;
    expect((await error("{not json")).message).toStartWith("Invalid JSON: ");
    expect(await error("7")).toEqual({ code: -32600, message: "Request must be a JSON object or array" });
    expect(await error([])).toEqual({ code: -32600, message: "Batch request must not be empty" });
    expect(await (await rpc({ jsonrpc: "2.0", id: 4 })).json()).toEqual({ jsonrpc: "2.0", id: 4, error: { code: -32600, message: "Missing `method` field" } });
    expect(await error({ jsonrpc: "2.0", id: 1, method: "resources/list" })).toEqual({ code: -32601, message: "Unknown method: resources/list" });
    expect(await error({ jsonrpc: "2.0", id: 1, method: "tools/call", params: {} })).toEqual({ code: -32602, message: "tools/call requires a string `name` parameter" });
    expect(await error({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "lemonade_chat", arguments: [] } })).toEqual({ code: -32602, message: "tools/call `arguments` must be an object" });
    // No method is -32600 with or without an id (mcp.md's table).
    expect(await (await rpc({ jsonrpc: "2.0" })).json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "Missing `method` field" } });
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
    expect(unknown.result).toEqual({ isError: true, content: [{ type: "text", text: "Unknown tool: nope" }] });
    // A client's cancellation notice is taken (202, nothing to answer).
    expect((await rpc({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } })).status).toBe(202);
    expect(await code({ jsonrpc: "2.0", id: 1, method: "tools/call", params: {} })).toBe(-32602);
  });

  test("GET /mcp is 405 with a JSON-RPC error; the API key is required", async () => {
    const get = await fetch(`${server.url}/mcp`, { headers: { authorization: "Bearer k" } });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect(await get.json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "GET /mcp not supported; use POST with a JSON-RPC body" } });
    expect((await rpc({ jsonrpc: "2.0", id: 1, method: "ping" }, {})).status).toBe(401);
  });
});
