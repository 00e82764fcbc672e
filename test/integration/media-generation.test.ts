// 3D and audio generation on loopback, on the FAKE engines (scripts/fake-engine/generation-server)
// that config.json's `<recipe>.cpu_bin` names, as a user names their own trellis-server, ace-server
// and ts-server: the documented checks (each before any load), the catalog's entries and their
// defaults, what reaches each engine in its own API, and the engine's failures.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { png } from "../../scripts/fake-engine/png.ts";
import { FAKE_DIR } from "../helpers/fake-engine.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

const FAKE = join(FAKE_DIR, "generation-server");

/** An empty GGUF: the magic, version 3, no tensors, no metadata. */
const EMPTY_GGUF = Buffer.concat([Buffer.from("GGUF"), Buffer.from([3, 0, 0, 0]), Buffer.alloc(16)]);

/** A model's repository in the HF cache layout, with these files. */
function cacheRepo(hub: string, repo: string, files: string[]): void {
  const base = join(hub, `models--${repo.replace("/", "--")}`);
  mkdirSync(join(base, "refs"), { recursive: true });
  writeFileSync(join(base, "refs", "main"), "fake0");
  mkdirSync(join(base, "snapshots", "fake0"), { recursive: true });
  for (const f of files) writeFileSync(join(base, "snapshots", "fake0", f), EMPTY_GGUF);
}

let server: TestServer;
beforeAll(async () => {
  const cacheDir = tempDir();
  mkdirSync(cacheDir, { recursive: true });
  const hub = join(cacheDir, "hf");
  cacheRepo(hub, "ilintar/trellis2-gguf", ["trellis2-ss-dec-f16.gguf", "trellis2-slat-flow-f16.gguf"]);
  cacheRepo(hub, "Serveurperso/ACE-Step-1.5-GGUF", ["acestep-v15-xl-sft-Q8_0.gguf"]);
  cacheRepo(hub, "ilintar/thinksound-gguf", ["dit-bf16.gguf", "t5-bf16.gguf", "metaclip-text-f32.gguf", "vae-f32.gguf", "t5-tokenizer.gguf", "clip-tokenizer.gguf"]);
  writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ trellis: { cpu_bin: FAKE }, acestep: { cpu_bin: FAKE }, thinksound: { cpu_bin: FAKE } }));
  server = await startTestServer({ HF_HUB_CACHE: hub }, cacheDir);
});
afterAll(() => server.close());

const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const loaded = async (): Promise<{ model_name: string; backend_url: string }[]> => (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded;

/** What the FAKE engine behind `model` has been asked. */
async function engineLog(model: string): Promise<any[]> {
  const entry = (await loaded()).find((m) => m.model_name === model);
  if (!entry) throw new Error(`${model} is not loaded`);
  return (await fetch(`${entry.backend_url.replace(/\/v1$/, "")}/fake/requests`)).json();
}

/** Asserts a 400 in the documented shape: JSON with an `error` object. */
async function expectRefused(res: Response, mentions: string): Promise<void> {
  expect(res.status).toBe(400);
  const body = await res.json();
  expect(typeof body.error.message).toBe("string");
  expect(body.error.type).toBe("invalid_request_error");
  expect(body.error.message).toContain(mentions);
}

const PNG = png(8, 8, [200, 40, 40], {}).toString("base64");
const BMP = Buffer.concat([Buffer.from("BM"), Buffer.alloc(60)]).toString("base64");

describe("the catalog", () => {
  test("TRELLIS, ACE-Step and ThinkSound are listed, under their recipes, with their defaults", async () => {
    const { data } = await (await fetch(`${server.url}/v1/models`)).json();
    const byId = Object.fromEntries(data.map((m: { id: string }) => [m.id, m]));
    expect(byId["TRELLIS-3D"]).toMatchObject({ recipe: "trellis", labels: ["3d"], downloaded: true });
    expect(byId["ACE-Step-Music"]).toMatchObject({ recipe: "acestep", labels: ["audio-generation"], downloaded: true });
    expect(byId["ThinkSound-SFX"]).toMatchObject({ recipe: "thinksound", labels: ["audio-generation"], downloaded: true });
    const options = await (await fetch(`${server.url}/v1/models/TRELLIS-3D/options`)).json();
    expect(options.defaults).toMatchObject({ trellis_backend: "auto", trellis_args: "", merge_args: true, evict_idle_timeout: 300 });
    expect((await (await fetch(`${server.url}/v1/models/ACE-Step-Music/options`)).json()).defaults).toMatchObject({ acestep_backend: "auto" });
    const info = await (await fetch(`${server.url}/v1/system-info`)).json();
    for (const recipe of ["trellis", "acestep", "thinksound"]) {
      expect(info.recipes[recipe]).toMatchObject({ default_backend: "cpu", backends: { cpu: { state: "installed" }, system: { state: "unsupported" } } });
    }
  });
});

describe("the engines' command lines", () => {
  test("each starts as the real server starts it, the user's trellis_args after; flags the server sets are refused", async () => {
    const refused = await post("/v1/models/TRELLIS-3D/options", { trellis_args: "--port 9" });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(await refused.json())).toContain("--port");
    const load = await post("/v1/load", { model_name: "TRELLIS-3D", trellis_args: "--threads 4" });
    expect(load.status, await load.clone().text()).toBe(200);
    const health = await (await fetch(`${server.url}/v1/health`)).json();
    const command = health.all_models_loaded.find((m: { model_name: string }) => m.model_name === "TRELLIS-3D").launch_command.join(" ");
    expect(command).toMatch(/generation-server --models \S+models--ilintar--trellis2-gguf\/snapshots\/fake0 --host 127\.0\.0\.1 --port \d+ --res 512 --threads 4$/);
    expect(health.all_models_loaded[0]).toMatchObject({ type: "mesh", recipe: "trellis" });
    await post("/v1/unload", { model_name: "TRELLIS-3D" });
  });
});

describe("POST /v1/3d/generations", () => {
  test("each documented check answers 400 before anything is loaded", async () => {
    const cases: [unknown, string][] = [
      [{ image: PNG }, "model"],
      [{ model: "TRELLIS-3D" }, "image"],
      [{ model: 7, image: PNG }, "model"],
      [{ model: "TRELLIS-3D", image: "not base64 at all!" }, "base64"],
      [{ model: "TRELLIS-3D", image: "data:image/png;base64" }, "payload"],
      [{ model: "TRELLIS-3D", image: Buffer.from("plain text, not an image").toString("base64") }, "PNG, JPEG, BMP, or GIF"],
      [{ model: "TRELLIS-3D", image: PNG, response_format: "obj" }, "response_format 'obj' is not supported"],
      [{ model: "TRELLIS-3D", image: PNG, response_format: 3 }, "response_format"],
      [{ model: "TRELLIS-3D", image: PNG, resolution: 768 }, "resolution"],
      [{ model: "TRELLIS-3D", image: PNG, resolution: "big" }, "resolution"],
      [{ model: "TRELLIS-3D", image: PNG, bg_removal: "magic" }, "bg_removal"],
      [{ model: "TRELLIS-3D", image: PNG, uv: "sphere" }, "uv"],
      [{ model: "TRELLIS-3D", image: PNG, seed: 1.5 }, "seed"],
      [{ model: "TRELLIS-3D", image: PNG, seed: "42" }, "seed"],
    ];
    for (const [body, mentions] of cases) await expectRefused(await post("/v1/3d/generations", body), mentions);
    expect(await loaded()).toEqual([]);
  });

  test("a model that is not a 3D model is refused, and an unknown one is 404", async () => {
    await expectRefused(await post("/v1/3d/generations", { model: "ThinkSound-SFX", image: PNG }), "cannot generate 3D meshes");
    expect((await post("/v1/3d/generations", { model: "No-Such-Model", image: PNG })).status).toBe(404);
  });

  test("a mesh comes back as model/gltf-binary, the image and settings sent as trellis-server's multipart fields", async () => {
    const res = await post("/api/v1/3d/generations", { model: "TRELLIS-3D", image: `data:image/png;base64,${PNG}`, resolution: "1024", bg_removal: "birefnet", uv: "box", seed: 42 });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("model/gltf-binary");
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(0, 4).toString()).toBe("glTF");
    const sent = (await engineLog("TRELLIS-3D")).at(-1);
    expect(sent).toEqual({ path: "/generate", image: { name: "input.png", type: "image/png", size: Buffer.from(PNG, "base64").length }, fields: { seed: "42", resolution: "1024", bg_removal: "birefnet", uv: "box" } });
    const bmp = await post("/v1/3d/generations", { model: "TRELLIS-3D", image: BMP, resolution: 512 });
    expect(bmp.status).toBe(200);
    expect((await engineLog("TRELLIS-3D")).at(-1).image.name).toBe("input.bmp");
  });

  test("an engine error is a 500 and no output a 502, each with an error object", async () => {
    const failed = await post("/v1/3d/generations", { model: "TRELLIS-3D", image: PNG, seed: 13 });
    expect(failed.status).toBe(500);
    expect((await failed.json()).error.message).toContain("generation failed (HTTP 500)");
    const empty = await post("/v1/3d/generations", { model: "TRELLIS-3D", image: PNG, seed: 14 });
    expect(empty.status).toBe(502);
    expect((await empty.json()).error.message).toContain("produced no output");
  });
});

describe("POST /v1/audio/generations", () => {
  test("each documented check answers 400 before anything is loaded", async () => {
    await post("/v1/unload", {});
    const cases: [unknown, string][] = [
      [{ prompt: "rain" }, "model"],
      [{ model: "ThinkSound-SFX" }, "prompt"],
      [{ model: "ACE-Step-Music", prompt: "folk", lyrics: 3 }, "lyrics"],
      [{ model: "ACE-Step-Music", prompt: "folk", vocal_language: ["en"] }, "vocal_language"],
      [{ model: "ThinkSound-SFX", prompt: "rain", response_format: "mp3" }, "response_format 'mp3' is not supported"],
      [{ model: "ThinkSound-SFX", prompt: "rain", seed: 0.5 }, "seed"],
      [{ model: "ThinkSound-SFX", prompt: "rain", duration: "long" }, "duration"],
    ];
    for (const [body, mentions] of cases) await expectRefused(await post("/v1/audio/generations", body), mentions);
    expect(await loaded()).toEqual([]);
    await expectRefused(await post("/v1/audio/generations", { model: "TRELLIS-3D", prompt: "rain" }), "cannot generate audio");
  });

  test("ThinkSound: the prompt as ts-server's caption and description, answered as audio/wav", async () => {
    const res = await post("/v1/audio/generations", { model: "ThinkSound-SFX", prompt: "glass shattering", duration: 2, steps: 8, cfg: 4.5, seed: 42 });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("audio/wav");
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(0, 4).toString()).toBe("RIFF");
    expect(bytes.readUInt32LE(40)).toBe(2 * 8000 * 2);
    expect((await engineLog("ThinkSound-SFX")).at(-1)).toEqual({ path: "/generate", body: { caption: "glass shattering", description: "glass shattering", duration: 2, steps: 8, cfg: 4.5, seed: 42 } });
  });

  test("ACE-Step: an instrumental is one /synth job; lyrics go through /lm first, its result synthesized", async () => {
    const instrumental = await post("/v1/audio/generations", { model: "ACE-Step-Music", prompt: "lofi beat", lyrics: " [INSTRUMENTAL] ", duration: 1, steps: 6, seed: 7 });
    expect(instrumental.status).toBe(200);
    expect(Buffer.from(await instrumental.arrayBuffer()).subarray(0, 4).toString()).toBe("RIFF");
    const first = await engineLog("ACE-Step-Music");
    expect(first).toEqual([{ path: "/synth", body: { caption: "lofi beat", synth_model: "", output_format: "wav24", duration: 1, seed: 7, inference_steps: 6, lyrics: "[Instrumental]" } }]);
    const sung = await post("/v1/audio/generations", { model: "ACE-Step-Music", prompt: "folk ballad", lyrics: "[verse]\nMoonlight", vocal_language: "fr", duration: 1 });
    expect(sung.status).toBe(200);
    const [lm, synth] = (await engineLog("ACE-Step-Music")).slice(1);
    expect(lm).toEqual({ path: "/lm", body: { caption: "folk ballad", synth_model: "", output_format: "wav24", duration: 1, lyrics: "[verse]\nMoonlight", lm_mode: "generate", vocal_language: "fr" } });
    expect(synth).toEqual({ path: "/synth", body: { ...lm.body, audio_codes: "FAKE-CODES" } });
  });

  test("a failed job is a 500, and a result with no audio part too; no output at all is a 502", async () => {
    const failed = await post("/v1/audio/generations", { model: "ACE-Step-Music", prompt: "[[fake-fail]] noise" });
    expect(failed.status).toBe(500);
    expect((await failed.json()).error.message).toBe("synth job ended with status 'failed'");
    const noPart = await post("/v1/audio/generations", { model: "ACE-Step-Music", prompt: "noise", seed: 14 });
    expect(noPart.status).toBe(500);
    expect((await noPart.json()).error.message).toBe("no audio part in synth result");
    const empty = await post("/v1/audio/generations", { model: "ThinkSound-SFX", prompt: "rain", seed: 14 });
    expect(empty.status).toBe(502);
  });
});
