// The acestep recipe: ACE-Step 1.5's ace-server (acestep.cpp), music. As the real server runs it:
// `--models <folder of GGUFs> --host 127.0.0.1 --port N --keep-loaded`; GET /health is ready.
// A generation is jobs: with lyrics, POST /lm (the caption and lyrics to audio codes) first, its
// result then posted to POST /synth; without (empty or `[Instrumental]`), /synth alone. Each POST
// answers `{"id"}`; GET /job?id= is polled until `done` (or `failed`, `cancelled`), and
// GET /job?id=&result=1 fetches the result: for /synth a multipart/mixed body whose audio part is
// the WAV.
import type { Json } from "../lib/json.ts";
import type { Generated } from "./engine.ts";
import { modelFolder, userBinaryRecipe } from "./user-binary.ts";

export const ACE_SERVER = "ace-server";

/** How long a job may run: the real server polls 1200 times a second apart. */
const POLL_MS = 1000;
const MAX_POLLS = 1200;

const isInstrumental = (lyrics: string) => lyrics.trim() === "" || lyrics.trim().toLowerCase() === "[instrumental]";

/** The first audio part of ace-server's multipart/mixed result, or empty when there is none. */
export function audioPart(body: Uint8Array): Uint8Array<ArrayBuffer> {
  const buf = Buffer.from(body);
  const header = buf.indexOf("Content-Type: audio/");
  if (header < 0) return new Uint8Array();
  const start = buf.indexOf("\r\n\r\n", header);
  if (start < 0) return new Uint8Array();
  const end = buf.indexOf("\r\n--ace-batch-boundary", start + 4);
  return end < 0 ? new Uint8Array() : new Uint8Array(buf.subarray(start + 4, end));
}

/** One job: submitted, polled until it ends, its result fetched; an error names the stage. */
async function runJob(url: string, path: string, body: string, signal: AbortSignal): Promise<{ result: Uint8Array } | { error: string }> {
  const stage = path.slice(1);
  const submit = await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body, signal });
  if (submit.status !== 200) return { error: `${stage} submit failed (HTTP ${submit.status})` };
  const id = ((await submit.json().catch(() => ({}))) as { id?: unknown }).id;
  if (typeof id !== "string" || id === "") return { error: `${stage} submit returned no job id` };
  const job = `${url}/job?id=${encodeURIComponent(id)}`;
  let status = "";
  for (let i = 0; i < MAX_POLLS; i++) {
    const poll = await fetch(job, { signal });
    status = poll.status === 200 ? String(((await poll.json().catch(() => ({}))) as { status?: unknown }).status ?? "") : "";
    if (status === "done" || status === "failed" || status === "cancelled") break;
    await Bun.sleep(POLL_MS);
  }
  if (status !== "done") return { error: `${stage} job ended with status '${status}'` };
  const fetched = await fetch(`${job}&result=1`, { signal });
  if (fetched.status !== 200) return { error: `fetching ${stage} job result failed (HTTP ${fetched.status})` };
  return { result: new Uint8Array(await fetched.arrayBuffer()) };
}

async function generateMusic(url: string, request: Json, signal: AbortSignal): Promise<Generated> {
  const synth: Json = { caption: typeof request.prompt === "string" ? request.prompt : "", synth_model: "", output_format: "wav24" };
  if (request.duration !== undefined) synth.duration = request.duration;
  if (request.seed !== undefined) synth.seed = request.seed;
  if (request.steps !== undefined) synth.inference_steps = request.steps;
  const lyrics = typeof request.lyrics === "string" ? request.lyrics : "";
  let synthBody: string;
  if (isInstrumental(lyrics)) {
    synth.lyrics = "[Instrumental]";
    synthBody = JSON.stringify(synth);
  } else {
    Object.assign(synth, { lyrics, lm_mode: "generate", vocal_language: typeof request.vocal_language === "string" ? request.vocal_language : "en" });
    const lm = await runJob(url, "/lm", JSON.stringify(synth), signal);
    if ("error" in lm) return { status: 500, error: lm.error };
    synthBody = Buffer.from(lm.result).toString("utf8");
  }
  const done = await runJob(url, "/synth", synthBody, signal);
  if ("error" in done) return { status: 500, error: done.error };
  const audio = audioPart(done.result);
  return audio.length ? { bytes: audio } : { status: 500, error: "no audio part in synth result" };
}

export const acestep = userBinaryRecipe({
  name: "acestep",
  displayName: "ACE-Step",
  section: "acestep",
  binary: ACE_SERVER,
  backendOption: "acestep_backend",
  argv: (binary, port, input) => [binary, "--models", modelFolder(input.files.main!), "--host", "127.0.0.1", "--port", String(port), "--keep-loaded"],
  readyTimeoutMs: 600_000,
  generate: { "audio.generate": generateMusic },
});
