// OpenAI's Responses dialect on llama.cpp's native /v1/responses: llama.cpp's stream leaves out
// the positions (`output_index`, `content_index`, `sequence_number`) OpenAI's clients build the
// response from, opens reasoning text without a content part, and never sends `[DONE]`; this
// translator adds them, and names the model as the client did.
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import type { ModelCheck } from "../runtime/request.ts";
import type { StreamRule } from "../runtime/stream-pump.ts";
import { needsLlm, openaiFramer, visionCheck } from "./openai.ts";
import { asJson, type Json } from "../lib/json.ts";
import type { ResponsesRequest } from "../spec/openai.ts";

/** Refuses what llama.cpp cannot do: it keeps no responses to continue from. */
export function checkResponsesBody(body: ResponsesRequest): void {
  const { previous_response_id: previous }: Json = body;
  if (previous !== undefined && previous !== null) {
    throw ApiError.of(
      E.invalidArgument,
      "previous_response_id is not supported: this server keeps no responses; send the whole conversation in `input`",
      "previous_response_id",
    );
  }
}

const frame = (ev: Json) => `event: ${String(ev.type)}\ndata: ${JSON.stringify(ev)}\n\n`;

/** The stream rule for one Responses request naming `model`. */
export function responsesStream(model: string): StreamRule {
  return {
    framer: openaiFramer,
    translate: () => {
      const positions = new Map<string, number>();
      let items = 0;
      const openedText = new Set<string>();
      let seq = 0;
      let completed = false;
      let done = false;
      const emit = (ev: Json) => frame({ ...ev, sequence_number: seq++ });
      const position = (id: unknown) => (typeof id === "string" && positions.has(id) ? positions.get(id)! : Math.max(0, items - 1));
      const response = (r: unknown): Json => ({ object: "response", output: [], created_at: Math.floor(Date.now() / 1000), ...asJson(r), model });
      return {
        event(data) {
          if (data === "[DONE]") {
            done = true;
            return "data: [DONE]\n\n";
          }
          const ev = asJson(JSON.parse(data));
          const item = asJson(ev.item);
          switch (ev.type) {
            case "response.created":
            case "response.in_progress":
              return emit({ ...ev, response: response(ev.response) });
            case "response.completed":
              completed = true;
              return emit({ ...ev, response: response(ev.response) });
            case "response.output_item.added": {
              const index = items++;
              if (typeof item.id === "string") positions.set(item.id, index);
              return emit({ ...ev, output_index: index });
            }
            case "response.output_item.done":
              return emit({ ...ev, output_index: position(item.id) });
            case "response.reasoning_text.delta": {
              const index = position(ev.item_id);
              // OpenAI's clients add reasoning text to a content part, which llama.cpp never opens.
              let opening = "";
              if (!openedText.has(String(ev.item_id))) {
                openedText.add(String(ev.item_id));
                opening = emit({ type: "response.content_part.added", item_id: ev.item_id, output_index: index, content_index: 0, part: { type: "reasoning_text", text: "" } });
              }
              return opening + emit({ ...ev, output_index: index, content_index: 0 });
            }
            default:
              if (typeof ev.item_id === "string") return emit({ ...ev, output_index: position(ev.item_id), content_index: 0 });
              return emit(ev);
          }
        },
        end: () => (done ? "" : completed ? "data: [DONE]\n\n" : null),
      };
    },
  };
}

/** Which models a Responses request may name: LLMs (with vision when it carries images). */
export function responsesCheck(body: ResponsesRequest): ModelCheck {
  return visionCheck(needsLlm(E.modelNotApplicable), body);
}
