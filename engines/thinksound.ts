// The thinksound recipe: ThinkSound's ts-server, sound effects from a caption. As the real server
// runs it: `--dir <folder of GGUFs> --host 127.0.0.1 --port N`; GET /health is ready; POST
// /generate takes `{caption, description, duration, steps, cfg, seed}` and answers the WAV.
import type { Json } from "../lib/json.ts";
import type { Generated } from "./engine.ts";
import { engineErrorText, modelFolder, userBinaryRecipe } from "./user-binary.ts";

export const TS_SERVER = "ts-server";

async function generateSound(url: string, request: Json, signal: AbortSignal): Promise<Generated> {
  const caption = typeof request.prompt === "string" ? request.prompt : "";
  const body: Json = { caption, description: request.description ?? request.cot ?? caption };
  for (const field of ["duration", "steps", "cfg", "seed"]) if (request[field] !== undefined) body[field] = request[field];
  const res = await fetch(`${url}/generate`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal });
  if (!res.ok) return { status: res.status >= 400 && res.status < 500 ? res.status : 500, error: await engineErrorText(res, "generation") };
  return { bytes: new Uint8Array(await res.arrayBuffer()) };
}

export const thinksound = userBinaryRecipe({
  name: "thinksound",
  displayName: "ThinkSound",
  section: "thinksound",
  binary: TS_SERVER,
  backendOption: "thinksound_backend",
  argv: (binary, port, input) => [binary, "--dir", modelFolder(input.files.main!), "--host", "127.0.0.1", "--port", String(port)],
  readyTimeoutMs: 600_000,
  generate: { "audio.generate": generateSound },
});
