// The HTTP server's idle timeout against the stream keep-alive: Bun closes a connection silent for
// its idle timeout, a stream between two keep-alives included, so a keep-alive interval a user
// lengthens must lengthen the timeout with it, or turn it off where Bun's longest (255 s) is too short
// (seen with Bun 1.4: idleTimeout 30, a streamed response silent for 35 s after its first bytes is
// reset at 32 s).
import { expect, test } from "bun:test";
import { idleTimeoutFor } from "../../app/server.ts";

test("the default keep-alive keeps Elysia's 30 s; a longer one gets a timeout that outlasts it, or none", () => {
  expect(idleTimeoutFor(1000)).toBe(30);
  expect(idleTimeoutFor(45_000)).toBeGreaterThan(45);
  expect(idleTimeoutFor(600_000)).toBe(0);
  for (let ms = 50; ms <= 600_000; ms += 997) {
    const seconds = idleTimeoutFor(ms);
    expect(seconds === 0 || (seconds * 1000 > ms && seconds <= 255)).toBe(true);
  }
});

