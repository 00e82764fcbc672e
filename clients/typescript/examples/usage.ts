// How the client reads; `tsc -p clients/typescript` checks it against the generated types, so a
// type that drifts from these uses fails the check.
import { createLemonadeClient, stream, StreamError, type ChatCompletion, type ChatCompletionChunk, type HealthResponse, type LemonadeModelError } from "../src/index.ts";

export async function example(apiKey?: string): Promise<void> {
  const client = createLemonadeClient("http://localhost:13305", { apiKey });

  const health = await client.GET("/v1/health");
  const status: HealthResponse | undefined = health.data;
  console.log(status?.status, status?.all_models_loaded.map((m) => m.model_name));

  const loaded = await client.POST("/v1/load", { body: { model_name: "Qwen3-0.6B-GGUF", ctx_size: 4096 } });
  if (loaded.error) {
    const error: LemonadeModelError = loaded.error;
    throw new Error(`${error.error.type}: ${error.message}`);
  }

  const answer = await client.POST("/v1/chat/completions", { body: { model: "Qwen3-0.6B-GGUF", messages: [{ role: "user", content: "Hello" }] } });
  const completion: ChatCompletion | undefined = answer.data;
  console.log(completion?.choices[0]?.message.content);

  try {
    let text = "";
    for await (const chunk of stream(client, "/v1/chat/completions", { model: "Qwen3-0.6B-GGUF", messages: [{ role: "user", content: "Hello" }] })) {
      const typed: ChatCompletionChunk = chunk;
      text += typed.choices[0]?.delta.content ?? "";
    }
    console.log(text);
    for await (const line of stream(client, "/api/chat", { model: "Qwen3-0.6B-GGUF", messages: [{ role: "user", content: "Hello" }] })) {
      if (line.done) console.log(line.eval_count);
    }
    for await (const progress of stream(client, "/v1/pull", { model_name: "Qwen3-0.6B-GGUF" })) console.log(progress.percent);
  } catch (err) {
    if (err instanceof StreamError) console.error(err.status, err.body);
    else throw err;
  }

  await client.POST("/v1/unload", { body: { model_name: "Qwen3-0.6B-GGUF" } });
}
