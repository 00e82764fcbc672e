// collection.omni over HTTP and MCP on FAKE engines: the planner is the FAKE llama-server scripted
// to call a tool (its `call`), images come from the FAKE sd-server, speech from espeak-ng
// (kokoro-v1); a published collection's manifest and planner come from a loopback hub.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { png, pngParameters, pngSize } from "../../scripts/fake-engine/png.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { startFakeHub, type FakeHub } from "../helpers/fake-hub.ts";
import { tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let hub: FakeHub;
let mcp: Client;
let sandbox: string;
const bytes = (v: unknown) => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));
// LMX-Omni-5.5B-Lite as its repository publishes it: the manifest `lemonade export` writes.
const LITE_MANIFEST = {
  model_name: "LMX-Omni-5.5B-Lite",
  recipe: "collection.omni",
  components: ["user.lite-planner", "kokoro-v1"],
  models: [{ model_name: "user.lite-planner", recipe: "llamacpp", checkpoint: "test-org/planner-GGUF:Q4_0", recipe_options: { llamacpp_backend: "system" } }],
};
const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const call = (name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) => `[[fake ${JSON.stringify({ call: { name, arguments: args }, ...extra })}]]`;

beforeAll(async () => {
  hub = startFakeHub({
    "lemonade-sdk/LMX-Omni-5.5B-Lite": { sha: "a".repeat(40), files: { "LMX-Omni-5.5B-Lite.json": bytes(LITE_MANIFEST), "README.md": bytes("# Lite") } },
    "lemonade-sdk/RPG-HaloTales-V1": { sha: "b".repeat(40), files: { "RPG-HaloTales-V1.json": bytes({ recipe: "llamacpp" }) } },
    "test-org/planner-GGUF": { sha: "d".repeat(40), files: { "planner-Q4_0.gguf": bytes("FAKE: the fake engine reads no weights") } },
  });
  sandbox = tempDir("lemonade-mcp-");
  server = await startFakeServer(["planner"], { LEMONADE_MAX_LOADED_MODELS: "-1", HF_ENDPOINT: hub.url, LEMONADE_MCP_IMAGE_DIR: sandbox });
  // SD-Turbo's file, as a download would leave it (the FAKE sd-server reads no weights).
  const sha = "c".repeat(40);
  const base = join(server.cacheDir, "hf", "models--stabilityai--sd-turbo");
  mkdirSync(join(base, "refs"), { recursive: true });
  writeFileSync(join(base, "refs", "main"), sha);
  const file = join(base, "snapshots", sha, "sd_turbo.safetensors");
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, "FAKE");
  const res = await post("/v1/pull", { model_name: "user.Kit", recipe: "collection.omni", components: ["extra.planner", "SD-Turbo", "kokoro-v1"] });
  expect(res.status).toBe(200);
  mcp = new Client({ name: "omni-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
});
afterAll(async () => {
  await mcp?.close();
  await server?.close();
  hub?.stop();
});

test("the collection registers as a unit and lists its components with their definitions", async () => {
  // A user's collection is listed by its user. id; its components, and each model, by their listed ids (as Lemonade lists them).
  const kit = (await (await fetch(`${server.url}/v1/models`)).json()).data.find((m: any) => m.id === "user.Kit");
  expect(kit).toMatchObject({ recipe: "collection.omni", components: ["planner", "SD-Turbo", "kokoro-v1"], downloaded: true });
  expect(kit.models.map((m: any) => m.id)).toEqual(["planner", "SD-Turbo", "kokoro-v1"]);
  const unknown = await post("/v1/pull", { model_name: "user.Broken", recipe: "collection.omni", components: ["extra.planner", "No-Such"] });
  expect(unknown.status).toBe(400);
  // Lemonade's messages for a missing component, a nested collection and a self-reference.
  expect((await unknown.json()).message).toBe("Collection component not registered: 'No-Such'. Pull or register it before referencing it in a collection.");
  const nested = await post("/v1/pull", { model_name: "user.Nested", recipe: "collection.omni", components: ["Kit"] });
  expect((await nested.json()).message).toBe("Collection components must be regular models, not collections: 'Kit'");
  const itself = await post("/v1/pull", { model_name: "user.Self", recipe: "collection.omni", components: ["extra.planner", "Self"] });
  expect(itself.status).toBe(400);
  expect((await itself.json()).message).toBe("Collection cannot reference itself: Self");
  const empty = await post("/v1/pull", { model_name: "user.Empty", recipe: "collection.omni", components: [] });
  expect((await empty.json()).message).toBe("Collection recipe requires a non-empty 'components' array");
});

test("speech and images made by the built-in tools are embedded in the answer", async () => {
  const spoken = await post("/v1/chat/completions", { model: "Kit", messages: [{ role: "user", content: `${call("text_to_speech", { text: "hello there" })} say hello` }] });
  expect(spoken.status).toBe(200);
  const s = await spoken.json();
  expect(s.model).toBe("Kit");
  expect(s.choices[0].message.content).toMatch(/^<audio>data:audio\/mpeg;base64,[A-Za-z0-9+/=]{100,}<\/audio>\n\ndone$/);
  const drawn = await post("/v1/chat/completions", { model: "Kit", messages: [{ role: "user", content: `${call("generate_image", { prompt: "a lemon" })} draw` }] });
  expect((await drawn.json()).choices[0].message.content).toMatch(/^!\[generated image\]\(data:image\/png;base64,[A-Za-z0-9+/=]+\)/);
});

test("the built-in system prompt goes before the client's, and the built-in tools before the client's", async () => {
  const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } }];
  const messages = [{ role: "system", content: "Be terse." }, { role: "user", content: "[[fake {\"echo\": true}]] hi" }];
  const seen = JSON.parse((await (await post("/v1/chat/completions", { model: "Kit", tools, messages })).json()).choices[0].message.content);
  // One system message (some chat templates take no second one): the built-in prompt, then the client's.
  expect(seen.messages.map((m: string[]) => m[0])).toEqual(["system", "user"]);
  expect(seen.messages[0][1]).toContain("text_to_speech");
  expect(seen.messages[0][1]).toEndWith("\n\nBe terse.");
  // Kit's components: SD-Turbo draws (no edit model), kokoro-v1 speaks.
  expect(seen.tools).toEqual(["generate_image", "text_to_speech", "get_weather"]);
  // Naming the component itself is a plain completion, no loop around it.
  const direct = JSON.parse((await (await post("/v1/chat/completions", { model: "extra.planner", tools, messages })).json()).choices[0].message.content);
  expect(direct).toEqual({ messages: [["system", "Be terse."], ["user", messages[1]!.content]], tools: ["get_weather"] });
});

test("a client's own tool call comes back to the client; a model stuck calling tools ends clearly", async () => {
  const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } }];
  const res = await post("/v1/chat/completions", { model: "Kit", tools, messages: [{ role: "user", content: `${call("get_weather", {})} weather?` }] });
  const choice = (await res.json()).choices[0];
  expect(choice.finish_reason).toBe("tool_calls");
  expect(choice.message.tool_calls.map((c: any) => c.function.name)).toEqual(["get_weather"]);
  // A round that calls a built-in tool and the client's: the speech is made, the client's call returned.
  const both = await post("/v1/chat/completions", {
    model: "Kit",
    tools,
    messages: [{ role: "user", content: `[[fake ${JSON.stringify({ call: [{ name: "text_to_speech", arguments: { text: "hi" } }, { name: "get_weather", arguments: {} }] })}]] both` }],
  });
  const mixed = (await both.json()).choices[0];
  expect(mixed.finish_reason).toBe("tool_calls");
  expect(mixed.message.tool_calls.map((c: any) => c.function.name)).toEqual(["get_weather"]);
  expect(mixed.message.content).toMatch(/^<audio>data:audio\/mpeg;base64,[A-Za-z0-9+/=]+<\/audio>$/);
  const stuck = await post("/v1/chat/completions", { model: "Kit", messages: [{ role: "user", content: `${call("text_to_speech", { text: "a" }, { always: true })} loop` }] });
  const end = (await stuck.json()).choices[0];
  expect(end.finish_reason).toBe("length");
  expect(end.message.content).toEndWith("(Stopped after 6 rounds of tool calls.)");
});

test("edit_image edits the conversation's last image", async () => {
  const source = `data:image/png;base64,${png(24, 16, [250, 220, 0], {}).toString("base64")}`;
  const res = await post("/v1/chat/completions", {
    model: "Kit",
    messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: source } }, { type: "text", text: `${call("edit_image", { prompt: "make it green" })} edit` }] }],
  });
  const content: string = (await res.json()).choices[0].message.content;
  const b64 = /^!\[generated image\]\(data:image\/png;base64,([A-Za-z0-9+/=]+)\)/.exec(content)?.[1];
  // The FAKE sd-server's edit takes the input's size, rounded up to 64 as sd.cpp makes it, and
  // records what it was sent.
  const edited = new Uint8Array(Buffer.from(b64!, "base64"));
  expect(pngSize(edited)).toEqual({ width: 64, height: 64 });
  expect(pngParameters(edited)).toMatchObject({ endpoint: "edits", images: [{ width: 24, height: 16 }] });
  // With no image in the conversation the tool says so to the planner, and nothing is drawn.
  const none = await post("/v1/chat/completions", { model: "Kit", messages: [{ role: "user", content: `${call("edit_image", { prompt: "greener" })} edit` }] });
  expect((await none.json()).choices[0].message.content).toBe("done");
});

test("the planner reads earlier media as a note, and attached images as one when it cannot see", async () => {
  const image = `data:image/png;base64,${png(8, 8, [0, 0, 0], {}).toString("base64")}`;
  const messages = [
    { role: "user", content: [{ type: "image_url", image_url: { url: image } }, { type: "text", text: "look" }] },
    { role: "assistant", content: `<audio>data:audio/mpeg;base64,${"A".repeat(5000)}</audio>\n\n![generated image](${image})\n\ndone` },
    { role: "user", content: '[[fake {"echo": true}]] again' },
  ];
  const seen = JSON.parse((await (await post("/v1/chat/completions", { model: "Kit", messages })).json()).choices[0].message.content);
  expect(JSON.stringify(seen)).not.toContain("base64");
  expect(seen.messages[1][1]).toEqual([{ type: "text", text: "(an image is attached)" }, { type: "text", text: "look" }]);
  expect(seen.messages[2][1]).toBe("(speech was played)\n\n(an image was shown)\n\ndone");
});

test("a stream with include_usage ends with OpenAI's usage chunk", async () => {
  const res = await post("/v1/chat/completions", { model: "Kit", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hello" }] });
  const chunks = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)));
  expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) } });
});

test("/v1/models/register takes one definition: a collection's embedded models are an import's (a pull's)", async () => {
  const body = {
    model_name: "user.Imported",
    recipe: "collection.omni",
    components: ["user.imported-planner", "kokoro-v1"],
    models: [{ model_name: "user.imported-planner", recipe: "llamacpp", checkpoint: "test-org/planner-GGUF:Q4_0" }],
  };
  const registered = await post("/v1/models/register", body);
  expect(registered.status).toBe(400);
  expect((await registered.json()).message).toContain("Collection component not registered: 'user.imported-planner'");
  expect((await fetch(`${server.url}/v1/models/user.imported-planner`)).status).toBe(404);
  const pulled = await post("/v1/pull", body);
  expect(pulled.status).toBe(200);
  expect((await (await fetch(`${server.url}/v1/models/Imported`)).json()).components).toEqual(["imported-planner", "kokoro-v1"]);
  // A refused collection registers none of its definitions.
  const nested = await post("/v1/pull", { ...body, model_name: "user.Refused", components: ["user.refused-planner", "Kit"], models: [{ ...body.models[0], model_name: "user.refused-planner" }] });
  expect(nested.status).toBe(400);
  expect((await fetch(`${server.url}/v1/models/user.refused-planner`)).status).toBe(404);
});

test("streaming: media in content deltas of at most 16,000 characters, then [DONE]", async () => {
  const res = await post("/v1/chat/completions", { model: "Kit", stream: true, messages: [{ role: "user", content: `${call("text_to_speech", { text: "a longer sentence to speak aloud for the test" })} speak` }] });
  const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: "));
  expect(events.at(-1)).toBe("data: [DONE]");
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
  const deltas = chunks.map((c) => c.choices[0].delta.content ?? "");
  expect(Math.max(...deltas.map((d) => d.length))).toBeLessThanOrEqual(16_000);
  expect(deltas.join("")).toMatch(/^<audio>data:audio\/mpeg;base64,[^<]+<\/audio>\n\ndone$/);
  expect(chunks.at(-1).choices[0].finish_reason).toBe("stop");
  // One id on every chunk, as OpenAI streams have.
  expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  expect(chunks[0].id).toMatch(/^chatcmpl-/);
});

test("lemonade_omni over MCP: inline image and audio blocks, or files in a folder inside the sandbox", async () => {
  const messages = [{ role: "user", content: `${call("text_to_speech", { text: "hello" })} speak` }];
  const inline: any = await mcp.callTool({ name: "lemonade_omni", arguments: { model: "Kit", messages } });
  expect(inline.content[0].text).toBe("done");
  expect(inline.isError).toBeFalsy();
  expect(inline.content.map((c: any) => c.type)).toEqual(["text", "audio"]);
  expect(inline.content[0].text).toBe("done");
  expect(inline.content[1].mimeType).toBe("audio/mpeg");
  const mp3 = Buffer.from(inline.content[1].data, "base64");
  expect(mp3.subarray(0, 3).toString() === "ID3" || (mp3[0] === 0xff && (mp3[1]! & 0xe0) === 0xe0)).toBe(true);

  const drawn: any = await mcp.callTool({ name: "lemonade_omni", arguments: { model: "Kit", output_dir: "omni", messages: [{ role: "user", content: `${call("generate_image", { prompt: "a lemon" })} draw` }] } });
  const { paths } = JSON.parse(drawn.content.at(-1).text);
  expect(paths).toHaveLength(1);
  expect(paths[0].startsWith(join(sandbox, "omni") + "/")).toBe(true);
  expect(paths[0]).toEndWith(".png");
  expect([...readFileSync(paths[0]).subarray(1, 4)].map((b) => String.fromCharCode(b)).join("")).toBe("PNG");
  expect(drawn.content.map((c: any) => c.type)).toEqual(["text", "text", "text"]);
  // Each artifact's block names its kind and its path, as Lemonade's does.
  expect(drawn.content[1].text).toBe(`image -> ${paths[0]}`);

  const escape: any = await mcp.callTool({ name: "lemonade_omni", arguments: { model: "Kit", output_dir: "../outside", messages } });
  expect(escape.isError).toBe(true);
  expect(existsSync(join(sandbox, "..", "outside"))).toBe(false);
  const plain: any = await mcp.callTool({ name: "lemonade_omni", arguments: { model: "extra.planner", messages } });
  expect(plain.isError).toBe(true);
  expect(plain.content[0].text).toContain("lemonade_chat");
});

test("MCP names a user collection by its prefixed id: lemonade_list_models lists user.Kit, lemonade_omni runs it by that id or, unnamed, as the downloaded collection", async () => {
  const listed: any = await mcp.callTool({ name: "lemonade_list_models", arguments: {} });
  const summary = JSON.parse(listed.content[1].text);
  expect(summary.available).toContainEqual(expect.objectContaining({ model_name: "user.Kit", recipe: "collection.omni", downloaded: true }));
  expect(summary.available.map((m: any) => m.model_name)).not.toContain("Kit");
  const messages = [{ role: "user", content: `${call("text_to_speech", { text: "hello" })} speak` }];
  const byId: any = await mcp.callTool({ name: "lemonade_omni", arguments: { model: "user.Kit", messages } });
  expect(byId.isError).toBeFalsy();
  expect(byId.content.map((c: any) => c.type)).toEqual(["text", "audio"]);
  const unnamed: any = await mcp.callTool({ name: "lemonade_omni", arguments: { messages } });
  expect(unnamed.isError).toBeFalsy();
  expect(unnamed.content.map((c: any) => c.type)).toEqual(["text", "audio"]);
});

test("lemonade_omni's errors, as Lemonade words them: an unknown model, a plain LLM, no messages", async () => {
  const messages = [{ role: "user", content: "hi" }];
  const unknown: any = await mcp.callTool({ name: "lemonade_omni", arguments: { model: "user.NoSuchKit", messages } });
  expect(unknown.isError).toBe(true);
  expect(unknown.content[0].text).toBe(
    "Unknown model 'user.NoSuchKit'. Call `lemonade_list_models` to discover available Omni collections (recipe = collection.omni), or omit `model` to use the default (LMX-Omni-5.5B-Lite).",
  );
  const plain: any = await mcp.callTool({ name: "lemonade_omni", arguments: { model: "extra.planner", messages } });
  expect(plain.content[0].text).toBe("Model 'extra.planner' is not an Omni collection (recipe='llamacpp'). Use `lemonade_chat` for plain LLMs, or pass an Omni collection name (e.g. LMX-Omni-5.5B-Lite).");
  const none: any = await mcp.callTool({ name: "lemonade_omni", arguments: { model: "user.Kit" } });
  // A thrown tool failure reads "Error: ...", as Lemonade's gateway words it.
  expect(none).toMatchObject({ isError: true, content: [{ type: "text", text: "Error: Missing or non-array argument: messages" }] });
});

test("a published collection (the catalog's LMX-Omni-5.5B-Lite) pulls its manifest, then its components", async () => {
  const listed = async () => (await (await fetch(`${server.url}/v1/models?show_all=true`)).json()).data.find((m: any) => m.id === "LMX-Omni-5.5B-Lite");
  // Listed by its repository, as the registry names it.
  expect(await listed()).toMatchObject({ recipe: "collection.omni", downloaded: false, components: [], checkpoint: "lemonade-sdk/LMX-Omni-5.5B-Lite" });
  const pulled = await post("/v1/pull", { model_name: "LMX-Omni-5.5B-Lite" });
  expect(pulled.status).toBe(200);
  expect(await listed()).toMatchObject({ downloaded: true, components: ["lite-planner", "kokoro-v1"] });
  const planner = await (await fetch(`${server.url}/v1/models/user.lite-planner`)).json();
  expect(planner).toMatchObject({ recipe: "llamacpp", downloaded: true });

  const chat = await post("/v1/chat/completions", { model: "LMX-Omni-5.5B-Lite", messages: [{ role: "user", content: `${call("text_to_speech", { text: "hi" })} speak` }] });
  expect((await chat.json()).choices[0].message.content).toMatch(/^<audio>data:audio\/mpeg;base64,[A-Za-z0-9+/=]+<\/audio>\n\ndone$/);

  expect((await post("/v1/delete", { model_name: "LMX-Omni-5.5B-Lite" })).status).toBe(200);
  expect(await listed()).toMatchObject({ downloaded: false, components: [] });
  expect((await (await fetch(`${server.url}/v1/models/user.lite-planner`)).json()).downloaded).toBe(true);

  // As a server-owned job (stream, subscribe: false), the whole collection installs too.
  await post("/v1/delete", { model_name: "user.lite-planner" });
  const job = await (await post("/v1/pull", { model_name: "LMX-Omni-5.5B-Lite", stream: true, subscribe: false })).json();
  expect(job).toMatchObject({ id: "model:LMX-Omni-5.5B-Lite", status: "downloading" });
  let status = job.status;
  for (let i = 0; i < 100 && status === "downloading"; i++) {
    await Bun.sleep(50);
    status = (await (await fetch(`${server.url}/v1/downloads`)).json()).find((j: any) => j.id === job.id)?.status;
  }
  expect(status).toBe("completed");
  expect(await listed()).toMatchObject({ downloaded: true, components: ["lite-planner", "kokoro-v1"] });
  expect((await (await fetch(`${server.url}/v1/models/user.lite-planner`)).json()).downloaded).toBe(true);
});

test("a repository whose manifest is not a collection is a clear error", async () => {
  const res = await post("/v1/pull", { model_name: "RPG-HaloTales-V1" });
  expect(res.status).toBe(400);
  expect((await res.json()).message).toContain("RPG-HaloTales-V1.json in lemonade-sdk/RPG-HaloTales-V1 is not a Lemonade Omni collection manifest");
});

test("load loads the components; delete removes the collection and leaves them", async () => {
  const load = await post("/v1/load", { model_name: "Kit" });
  expect(load.status).toBe(200);
  const loaded = (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded.map((m: any) => m.model_name);
  expect(loaded).toEqual(expect.arrayContaining(["planner", "SD-Turbo"]));
  expect((await post("/v1/delete", { model_name: "Kit" })).status).toBe(200);
  expect((await fetch(`${server.url}/v1/models/Kit`)).status).toBe(404);
  expect((await fetch(`${server.url}/v1/models/SD-Turbo`)).status).toBe(200);
});
