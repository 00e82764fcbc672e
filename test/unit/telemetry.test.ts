// The pure parts of tracing: what a span reads from an answer (streamed deltas, thinking, tool
// calls, Responses output), the attributes it becomes under each setting, cutting text to length,
// and the settings read from config.json's `telemetry` section.
import { expect, test } from "bun:test";
import { spanAttributes } from "../../observability/otlp.ts";
import { truncate, type SpanRecord } from "../../observability/span-record.ts";
import { InferenceSpan, telemetrySettings, type SpanStart } from "../../observability/telemetry.ts";

const START: SpanStart = { kind: "LLM", name: "chat.completions", model: "m", startMs: 0, input: "[]", messages: [{ role: "user", content: "hi" }] };

/** A span fed `feed`, and the record it ended with. */
function ended(feed: (span: InferenceSpan) => void, start: SpanStart = START): SpanRecord {
  const records: SpanRecord[] = [];
  const span = new InferenceSpan(start, (r) => records.push(r));
  feed(span);
  expect(records).toHaveLength(1);
  return records[0]!;
}

const sse = (...events: unknown[]) => new TextEncoder().encode(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n");

test("a streamed chat: content, thinking and tool calls merged from deltas (split across chunks), tokens from usage", () => {
  const bytes = sse(
    { choices: [{ delta: { reasoning_content: "plan" } }] },
    { choices: [{ delta: { content: "Hel" } }] },
    { choices: [{ delta: { content: "lo" } }] },
    { choices: [{ delta: { tool_calls: [{ index: 0, id: "call_1", function: { name: "get_", arguments: '{"a":' } }] } }] },
    { choices: [{ delta: { tool_calls: [{ index: 0, function: { name: "weather", arguments: "1}" } }] } }] },
    { choices: [], usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 } },
  );
  const record = ended((span) => {
    span.chunk(bytes.subarray(0, 50));
    span.chunk(bytes.subarray(50));
    span.succeed();
  });
  expect(record.output).toBe("<think>\nplan\n</think>\nHello");
  expect(record.toolCalls).toEqual([{ id: "call_1", name: "get_weather", arguments: '{"a":1}' }]);
  expect(record.usage).toEqual({ prompt: 5, completion: 7, total: 12 });

  const settings = telemetrySettings({ enabled: true });
  const attrs = spanAttributes(record, settings);
  expect(attrs).toMatchObject({
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"a":1}',
    "llm.token_count.total": 12,
  });
  expect(attrs["output.value"]).toBe("<think>\nplan\n</think>\nHello");
  expect(spanAttributes(record, { ...settings, hideThinking: true })["output.value"]).toBe("Hello");
  const hidden = spanAttributes(record, { ...settings, hideOutputs: true });
  expect(hidden["output.value"]).toBe("[REDACTED]");
  expect(Object.keys(hidden).some((k) => k.includes("tool_call"))).toBe(false);
});

test("a whole answer: a tool call alone is the output; a Responses answer's text, reasoning and function calls", () => {
  const chat = ended((span) =>
    span.succeed(JSON.stringify({ choices: [{ message: { role: "assistant", content: null, tool_calls: [{ id: "c", function: { name: "f", arguments: "{}" } }] } }], usage: { prompt_tokens: 1, completion_tokens: 1 } })),
  );
  expect(chat.toolCalls).toEqual([{ id: "c", name: "f", arguments: "{}" }]);
  const attrs = spanAttributes(chat, telemetrySettings({ enabled: true }));
  expect(JSON.parse(String(attrs["output.value"]))).toEqual([{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }]);
  expect(attrs["llm.token_count.total"]).toBe(2);

  const responses = ended(
    (span) =>
      span.succeed(
        JSON.stringify({
          output: [
            { type: "reasoning", content: [{ type: "reasoning_text", text: "think" }] },
            { type: "message", content: [{ type: "output_text", text: "Hi" }] },
            { type: "function_call", call_id: "fc", name: "g", arguments: "{}" },
          ],
          usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 },
        }),
      ),
    { ...START, name: "responses" },
  );
  expect(responses).toMatchObject({ output: "<think>\nthink\n</think>\nHi", toolCalls: [{ id: "fc", name: "g", arguments: "{}" }], usage: { prompt: 3, completion: 4, total: 7 } });
});

test("a failed span records the error and no output; only the first end counts", () => {
  const record = ended((span) => {
    span.fail("engine exited");
    span.succeed('{"choices": [{"message": {"content": "late"}}]}');
  });
  expect(record).toMatchObject({ error: "engine exited", output: "" });
  expect(spanAttributes(record, telemetrySettings({ enabled: true }))["output.value"]).toBeUndefined();
});

test("text is cut to a byte length on a character boundary, and marked", () => {
  expect(truncate("short", 10)).toBe("short");
  const cut = truncate("é".repeat(40), 31);
  expect(new TextEncoder().encode(cut).length).toBeLessThanOrEqual(31);
  expect(cut).toBe("éééééééé... [TRUNCATED]");
  expect(truncate("abcdefgh", 4)).toBe("abcd");
});

test("settings: defaults where absent, one header name as a list", () => {
  const s = telemetrySettings({ otlp: { protocol: "http/json" }, session: { headers: { id: " x-corp ", client: ["a", ""] } } });
  expect(s).toMatchObject({ enabled: false, protocol: "http/json", endpoint: "http://localhost:4318/v1/traces", semantics: ["openinference", "otel_genai"], maxQueue: 1000, maxAttributeLength: 4096, sessionHeaders: ["x-corp"], clientHeaders: ["a"] });
});

test("an Anthropic provider's answer, whole or streamed: text, thinking, tokens", () => {
  const whole = ended((span) =>
    span.succeed(JSON.stringify({ type: "message", content: [{ type: "thinking", thinking: "hm" }, { type: "text", text: "Hi" }], usage: { input_tokens: 2, output_tokens: 3 } })),
  );
  expect(whole).toMatchObject({ output: "<think>\nhm\n</think>\nHi", usage: { prompt: 2, completion: 3 } });
  const streamed = ended((span) => {
    span.chunk(sse({ type: "message_start", message: { usage: { input_tokens: 2 } } }, { type: "content_block_delta", delta: { type: "text_delta", text: "Hi" } }, { type: "message_delta", usage: { output_tokens: 1 } }));
    span.succeed();
  });
  expect(streamed).toMatchObject({ output: "Hi", usage: { prompt: 2, completion: 1 } });
});
