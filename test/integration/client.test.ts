// The generated TypeScript client (clients/typescript/) against a running server on the FAKE
// llama-server: every answer is typed by the generated types and checked against the spec's
// schema it was generated from, so a document that drifts from what the server answers fails
// here. Also: `bun run sdk:check` passes on the committed client and fails on a stale one, and
// `tsc` accepts the client's usage example against the generated types.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createLemonadeClient,
  sseEvents,
  stream,
  StreamError,
  type AnthropicMessagesResponse,
  type ChatCompletion,
  type EmbeddingsResponse,
  type HealthResponse,
  type LemonadeClient,
  type LemonadeModelError,
  type OllamaChatResponse,
  type PullProgressEvent,
} from "../../clients/typescript/src/index.ts";
import { GgufType } from "../../models/gguf.ts";
import { writeGguf } from "../../scripts/test-models/gguf-writer.ts";
import { anthropic, lifecycle, downloads, ollama, openai, operations } from "../../spec/index.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { startFakeHub, type FakeHub } from "../helpers/fake-hub.ts";
import { expectMatches, type TestServer } from "../helpers/server.ts";

const root = join(import.meta.dir, "..", "..");
const CHAT = "extra.chat";
const EMBED = "extra.embed";
const messages = [{ role: "user", content: "Hello there" }];

let server: TestServer;
let hub: FakeHub;
let client: LemonadeClient;

beforeAll(async () => {
  hub = startFakeHub({ "test-org/tiny-GGUF": { sha: "a".repeat(40), files: { "tiny-Q4_0.gguf": new Uint8Array(300_000).map((_, i) => i % 251) } } });
  // A GGUF header naming `bert` makes extra.embed an embedding model, still run by the fake.
  const bert = (path: string) => writeGguf(path, [["general.architecture", GgufType.STRING, "bert"]], []);
  server = await startFakeServer(["chat", "embed"], { HF_ENDPOINT: hub.url, LEMONADE_MAX_LOADED_MODELS: "-1" }, {}, { embed: bert });
  client = createLemonadeClient(server.url);
});
afterAll(async () => {
  await server?.close();
  hub?.stop();
});

describe("the generated client drives the server", () => {
  test("health", async () => {
    const { data, response } = await client.GET("/v1/health");
    expect(response.status).toBe(200);
    const health: HealthResponse = data!;
    expectMatches(operations.health.response, health);
    expect(health.status).toBe("ok");
  });

  test("load, chat, a streamed chat, unload", async () => {
    const loaded = await client.POST("/v1/load", { body: { model_name: CHAT } });
    expectMatches(lifecycle.load.response, loaded.data);
    expect(loaded.data!.model_name).toBe(CHAT);

    const chat = await client.POST("/v1/chat/completions", { body: { model: CHAT, messages, max_tokens: 3 } });
    const completion: ChatCompletion = chat.data!;
    expectMatches(openai.chatCompletions.response, completion);
    expect(completion.choices[0]!.message.content).toBe("tok0 tok1 tok2 ");

    const chunks = [];
    for await (const chunk of stream(client, "/v1/chat/completions", { model: CHAT, messages, max_tokens: 3 })) {
      expectMatches(openai.chatCompletions.stream.event, chunk);
      chunks.push(chunk);
    }
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("tok0 tok1 tok2 ");
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("length");

    const unloaded = await client.POST("/v1/unload", { body: { model_name: CHAT } });
    expectMatches(lifecycle.unload.response, unloaded.data);
    expect(unloaded.data!.status).toBe("success");
  });

  test("embeddings", async () => {
    const { data } = await client.POST("/v1/embeddings", { body: { model: EMBED, input: ["one", "three"] } });
    const embeddings: EmbeddingsResponse = data!;
    expectMatches(openai.embeddings.response, embeddings);
    expect(embeddings.data.map((d) => d.embedding[0])).toEqual([3, 5]);
  });

  test("a pull streams its progress, then completes", async () => {
    const events: PullProgressEvent[] = [];
    for await (const event of stream(client, "/v1/pull", { model_name: "user.Tiny", checkpoint: "test-org/tiny-GGUF:Q4_0", recipe: "llamacpp" })) {
      expectMatches(downloads.pull.stream.event, event);
      events.push(event);
    }
    expect(events.some((e) => e.file === "tiny-Q4_0.gguf" && e.bytes_total === 300_000)).toBe(true);
    // The end is the last file's figures at 100, as Lemonade's complete event.
    expect(events.at(-1)).toEqual({
      file: "tiny-Q4_0.gguf",
      file_index: 1,
      total_files: 1,
      bytes_downloaded: 300_000,
      bytes_total: 300_000,
      total_download_size: 300_000,
      bytes_previously_downloaded: 0,
      percent: 100,
      model_name: "user.Tiny",
    });
  });

  test("Ollama chat, whole and as NDJSON", async () => {
    const whole = await client.POST("/api/chat", { body: { model: CHAT, messages, stream: false, options: { num_predict: 2 } } });
    const reply: OllamaChatResponse = whole.data!;
    expectMatches(ollama.chat.response, reply);
    expect(reply.done).toBe(true);

    const lines: OllamaChatResponse[] = [];
    for await (const line of stream(client, "/api/chat", { model: CHAT, messages, options: { num_predict: 2 } })) {
      expectMatches(ollama.chat.stream.event, line);
      lines.push(line);
    }
    expect(lines.map((l) => l.message.content).join("")).toBe("tok0 tok1 ");
    expect(lines.at(-1)!.done).toBe(true);
  });

  test("Anthropic messages, whole and as server-sent events", async () => {
    const whole = await client.POST("/v1/messages", { body: { model: CHAT, max_tokens: 2, messages } });
    const message: AnthropicMessagesResponse = whole.data!;
    expectMatches(anthropic.messages.response, message);
    expect(message.content).toEqual([{ type: "text", text: "tok0 tok1 " }]);

    const res = await client.POST("/v1/messages", { body: { model: CHAT, max_tokens: 2, messages, stream: true }, parseAs: "stream" });
    const names: string[] = [];
    for await (const { event, data } of sseEvents(res.response)) {
      expectMatches(anthropic.messages.stream.event, data);
      names.push(event);
    }
    expect(names[0]).toBe("message_start");
    expect(names.at(-1)).toBe("message_stop");
  });

  test("an error answer is typed as the route's error schema", async () => {
    const { data, error, response } = await client.POST("/v1/load", { body: { model_name: "no-such-model" } });
    expect(data).toBeUndefined();
    expect(response.status).toBe(404);
    const typed: LemonadeModelError = error!;
    expect(typed).toMatchObject({ status: "error", code: "model_not_found", error: { type: "model_not_found", requested_model: "no-such-model" } });

    const refused = stream(client, "/v1/chat/completions", { model: "no-such-model", messages });
    const thrown = await refused.next().catch((err: unknown) => err);
    expect(thrown).toBeInstanceOf(StreamError);
    expect((thrown as StreamError).status).toBe(404);
    expect((thrown as StreamError).body).toMatchObject({ error: { code: "model_not_found" } });
  });
});

test("tsc accepts the client's usage example against the generated types", () => {
  const run = Bun.spawnSync([process.execPath, join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "clients", "typescript")], { cwd: root });
  expect(run.stdout.toString() + run.stderr.toString()).toBe("");
  expect(run.exitCode).toBe(0);
});

test("bun run sdk:check passes on the committed client, and fails on a stale one", () => {
  const check = Bun.spawnSync([process.execPath, "run", "sdk:check"], { cwd: root });
  expect(check.stderr.toString()).not.toContain("stale");
  expect(check.exitCode).toBe(0);
  const dir = mkdtempSync(join(tmpdir(), "sdk-"));
  try {
    cpSync(join(root, "clients", "typescript"), dir, { recursive: true });
    writeFileSync(join(dir, "src", "schema.ts"), "export interface paths {}\n");
    const stale = Bun.spawnSync([process.execPath, "scripts/gen-sdk.ts", "--check", "--dir", dir], { cwd: root });
    expect(stale.exitCode).toBe(1);
    expect(stale.stderr.toString()).toContain("src/schema.ts: stale");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
