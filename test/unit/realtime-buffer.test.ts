// The realtime input buffer is bounded: audio past the documented cap is refused with an error
// event, and a commit-free client cannot grow the server's memory without end.
import { expect, test } from "bun:test";
import { MAX_BUFFER_MS, RealtimeSession } from "../../protocols/realtime.ts";
import type { ServerContext } from "../../runtime/context.ts";

test("appends beyond 10 minutes of audio are refused with input_audio_buffer_full; clear makes room again", () => {
  const sent: any[] = [];
  const session = new RealtimeSession({} as ServerContext, null, (m) => sent.push(m));
  session.handle({ type: "session.update", session: { turn_detection: null } });
  const minute = Buffer.alloc(16000 * 2 * 60).toString("base64");
  for (let i = 0; i < MAX_BUFFER_MS / 60000; i++) session.handle({ type: "input_audio_buffer.append", audio: minute });
  expect(sent.filter((m) => m.type === "error")).toEqual([]);
  session.handle({ type: "input_audio_buffer.append", audio: minute });
  const errors = sent.filter((m) => m.type === "error");
  expect(errors).toHaveLength(1);
  expect(errors[0].error.code).toBe("input_audio_buffer_full");
  session.handle({ type: "input_audio_buffer.clear" });
  session.handle({ type: "input_audio_buffer.append", audio: minute });
  expect(sent.filter((m) => m.type === "error")).toHaveLength(1);
});
