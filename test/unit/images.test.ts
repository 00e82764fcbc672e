// Image generation on the FAKE sd-server and sd-cli (scripts/fake-engine): what reaches the engine
// (argv and body) for every parameter and option, the documented errors, residency, and the
// official `openai` client's images.generate / edit / createVariation decoding a real PNG.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import OpenAI, { toFile } from "openai";
import { png, pngParameters, pngSize } from "../../scripts/fake-engine/png.ts";
import { FAKE_DIR } from "../helpers/fake-engine.ts";
import { startTestServer, tempDir, type TestServer } from "../helpers/server.ts";

let server: TestServer;
let client: OpenAI;

/** Puts a checkpoint's file in the test's Hugging Face cache, as a download would leave it. */
function seed(hub: string, checkpoint: string): void {
  const [repo, file] = checkpoint.split(":") as [string, string];
  const base = join(hub, `models--${repo.replace(/\//g, "--")}`);
  const sha = "c".repeat(40);
  mkdirSync(join(base, "refs"), { recursive: true });
  writeFileSync(join(base, "refs", "main"), sha);
  const path = join(base, "snapshots", sha, file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, "FAKE: the fake sd-server reads no weights");
}

beforeAll(async () => {
  const cacheDir = tempDir();
  const hub = join(cacheDir, "hf");
  for (const c of [
    "stabilityai/sd-turbo:sd_turbo.safetensors",
    "stabilityai/sdxl-turbo:sd_xl_turbo_1.0_fp16.safetensors",
    "unsloth/Qwen-Image-GGUF:qwen-image-Q4_K_M.gguf",
    "unsloth/Qwen2.5-VL-7B-Instruct-GGUF:Qwen2.5-VL-7B-Instruct-UD-Q4_K_XL.gguf",
    "Comfy-Org/Qwen-Image_ComfyUI:split_files/vae/qwen_image_vae.safetensors",
    "amd/realesrgan-x4plus:RealESRGAN_x4plus.pth",
  ]) {
    seed(hub, c);
  }
  server = await startTestServer({ PATH: `${FAKE_DIR}:${process.env.PATH}`, LEMONADE_LOG_LEVEL: "info" }, cacheDir, { engines: false });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
afterAll(() => server.close());

const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const decode = (b64: string) => Uint8Array.from(Buffer.from(b64, "base64"));
const received = (b64: string) => pngParameters(decode(b64)) as Record<string, any>;
const health = async () => (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded as any[];

test("generate with the official client: PNGs of the size asked for; the model's image_defaults and a concrete seed reach sd-server", async () => {
  const res = await client.images.generate({ model: "SD-Turbo", prompt: "a lemon", size: "256x256", n: 2 });
  expect(res.data).toHaveLength(2);
  const first = res.data![0]!;
  expect(pngSize(decode(first.b64_json!))).toEqual({ width: 256, height: 256 });
  const got = received(first.b64_json!);
  expect(got.endpoint).toBe("generations");
  expect(got.prompt.trim()).toBe("a lemon");
  // SD-Turbo's catalog image_defaults: 4 steps, cfg 1.0.
  expect(got.extra.sample_params).toEqual({ sample_steps: 4, guidance: { txt_cfg: 1 } });
  expect(Number.isInteger(got.extra.seed)).toBe(true);
  expect(got.body).toMatchObject({ n: 2, size: "256x256", output_format: "png" });
  expect(got.argv[0]).toBe("--listen-port");
  expect(got.argv.slice(2, 4)).toEqual(["-m", expect.stringMatching(/sd_turbo\.safetensors$/)]);
  const info = (res.data as any[]).map((d) => d.generation_info);
  expect(info[0]).toMatchObject({ seed: got.extra.seed, steps: 4, cfg_scale: 1, width: 256, height: 256 });
  expect(info[1].seed).toBe(got.extra.seed + 1);
  expect((await health()).find((m) => m.model_name === "SD-Turbo")).toMatchObject({ type: "image", recipe: "sd-cpp" });
});

test("request values beat saved options, which beat image_defaults; extras go in sd.cpp's block", async () => {
  expect((await post("/v1/models/SD-Turbo/options", { steps: 9, cfg_scale: 2.5 })).status).toBe(200);
  const saved = await post("/v1/images/generations", { model: "SD-Turbo", prompt: "a pear" });
  const s = received((await saved.json()).data[0].b64_json);
  expect(s.extra.sample_params).toMatchObject({ sample_steps: 9, guidance: { txt_cfg: 2.5 } });
  expect(s.body.size).toBe("512x512");
  const res = await post("/v1/images/generations", {
    model: "SD-Turbo",
    prompt: "a plum",
    width: 320,
    height: 192,
    steps: 7,
    cfg_scale: 3.5,
    seed: 123,
    negative_prompt: "blurry",
    sample_method: "euler_a",
    scheduler: "karras",
  });
  const body = await res.json();
  const r = received(body.data[0].b64_json);
  expect(r.extra).toEqual({ seed: 123, negative_prompt: "blurry", sample_params: { sample_steps: 7, guidance: { txt_cfg: 3.5 }, sample_method: "euler_a", scheduler: "karras" } });
  expect(r.body.size).toBe("320x192");
  expect(body.data[0].generation_info.seed).toBe(123);
  expect((await fetch(`${server.url}/v1/models/SD-Turbo/options`, { method: "DELETE" })).status).toBe(200);
});

test("a multi-component model launches with --diffusion-model, --llm and --vae, its sdcpp_args, and its sampler and flow shift", async () => {
  const res = await post("/v1/images/generations", { model: "Qwen-Image-GGUF", prompt: "a fig", size: "64x64" });
  expect(res.status).toBe(200);
  const r = received((await res.json()).data[0].b64_json);
  const argv: string[] = r.argv;
  const after = (flag: string) => argv[argv.indexOf(flag) + 1];
  expect(after("--diffusion-model")).toMatch(/qwen-image-Q4_K_M\.gguf$/);
  expect(after("--llm")).toMatch(/Qwen2\.5-VL-7B-Instruct-UD-Q4_K_XL\.gguf$/);
  expect(after("--vae")).toMatch(/qwen_image_vae\.safetensors$/);
  expect(argv).not.toContain("-m");
  expect(argv).toEqual(expect.arrayContaining(["--diffusion-fa", "--offload-to-cpu"]));
  expect(r.extra.sample_params).toMatchObject({ sample_steps: 20, guidance: { txt_cfg: 2.5 }, sample_method: "euler", flow_shift: 3 });
});

test("edits and variations with the official client: images as image[], the mask, the variation prompt; size from the first image, rounded up to 64 as sd.cpp makes it", async () => {
  const source = png(48, 32, [200, 100, 0], {});
  const edited = await client.images.edit({
    model: "SD-Turbo",
    prompt: "make it blue",
    image: await toFile(source, "in.png", { type: "image/png" }),
    mask: await toFile(png(48, 32, [255, 255, 255], {}), "mask.png", { type: "image/png" }),
  });
  const e = received(edited.data![0]!.b64_json!);
  expect(e.endpoint).toBe("edits");
  expect(e.prompt.trim()).toBe("make it blue");
  expect(e.images).toEqual([expect.objectContaining({ width: 48, height: 32, decoded: true })]);
  expect(e.mask).toMatchObject({ decoded: true, width: 48, height: 32, resized_to: [48, 32] });
  expect(e.fields).toEqual(["image[]", "mask", "n", "prompt"]);
  expect(pngSize(decode(edited.data![0]!.b64_json!))).toEqual({ width: 64, height: 64 });
  expect((edited.data![0] as any).generation_info).toMatchObject({ width: 64, height: 64 });

  const varied = await client.images.createVariation({ model: "SD-Turbo", image: await toFile(source, "in.png", { type: "image/png" }), size: "256x256" });
  const v = received(varied.data![0]!.b64_json!);
  expect(v.endpoint).toBe("edits");
  expect(v.prompt.trim()).toBe("variation");
  expect(v.mask).toBeNull();
  expect(pngSize(decode(varied.data![0]!.b64_json!))).toEqual({ width: 256, height: 256 });
});

test("upscale runs sd-cli with the ESRGAN model: a 4x PNG", async () => {
  const res = await post("/v1/images/upscale", { model: "RealESRGAN-x4plus", image: png(16, 8, [1, 2, 3], {}).toString("base64") });
  expect(res.status).toBe(200);
  const body = await res.json();
  expect(pngSize(decode(body.data[0].b64_json))).toEqual({ width: 64, height: 32 });
  const argv: string[] = received(body.data[0].b64_json).argv;
  expect(argv.slice(0, 3)).toEqual(["-M", "upscale", "--upscale-model"]);
  expect(argv[3]).toMatch(/RealESRGAN_x4plus\.pth$/);
  const notUpscaler = await post("/v1/images/upscale", { model: "SD-Turbo", image: png(4, 4, [0, 0, 0], {}).toString("base64") });
  expect(notUpscaler.status).toBe(400);
  expect((await post("/v1/images/upscale", { model: "nope", image: "iVBORw0KGgo=" })).status).toBe(404);
});

test("errors: missing prompt, url format, a model that cannot make images, a failing engine, both image fields, not multipart", async () => {
  const missing = await post("/v1/images/generations", { model: "SD-Turbo" });
  expect((await missing.json()).error).toMatchObject({ code: "missing_argument", param: "prompt" });
  const url = await post("/v1/images/generations", { model: "SD-Turbo", prompt: "x", response_format: "url" });
  expect(url.status).toBe(400);
  const notImage = await post("/v1/images/generations", { model: "Qwen3-0.6B-GGUF", prompt: "x" });
  expect(notImage.status).toBe(500);
  expect((await notImage.json()).error.type).toBe("unsupported_operation");
  const failing = await post("/v1/images/generations", { model: "SD-Turbo", prompt: "x [[fake-fail]]" });
  expect(failing.status).toBe(500);
  expect((await failing.json()).error.message).toContain("generate_image returned no results");
  const both = new FormData();
  both.set("model", "SD-Turbo");
  both.set("prompt", "x");
  both.set("image", new Blob([new Uint8Array(png(4, 4, [0, 0, 0], {}))]), "a.png");
  both.set("image[]", new Blob([new Uint8Array(png(4, 4, [0, 0, 0], {}))]), "b.png");
  const bothRes = await fetch(`${server.url}/v1/images/edits`, { method: "POST", body: both });
  expect(bothRes.status).toBe(400);
  expect((await bothRes.json()).error.message).toContain("not both");
  const json = await post("/v1/images/edits", { model: "SD-Turbo", prompt: "x" });
  expect(json.status).toBe(400);
  expect((await json.json()).error.message).toContain("multipart/form-data");
  const reserved = await post("/v1/models/SD-Turbo/options", { sdcpp_args: "--listen-port 5" });
  expect(reserved.status).toBe(400);
});

test("image models are a type of their own: with max_loaded_models 1 one evicts the other, a pinned one refuses with 409", async () => {
  const other = await startTestServer({ PATH: `${FAKE_DIR}:${process.env.PATH}`, LEMONADE_MAX_LOADED_MODELS: "1", HF_HUB_CACHE: join(server.cacheDir, "hf") }, undefined, { engines: false });
  try {
    const gen = (model: string) => fetch(`${other.url}/v1/images/generations`, { method: "POST", body: JSON.stringify({ model, prompt: "x", size: "64x64" }) });
    expect((await gen("SD-Turbo")).status).toBe(200);
    expect((await gen("SDXL-Turbo")).status).toBe(200);
    const loaded = (await (await fetch(`${other.url}/v1/health`)).json()).all_models_loaded.map((m: any) => m.model_name);
    expect(loaded).toEqual(["SDXL-Turbo"]);
    expect((await fetch(`${other.url}/v1/load`, { method: "POST", body: JSON.stringify({ model_name: "SDXL-Turbo", pinned: true }) })).status).toBe(200);
    const refused = await gen("SD-Turbo");
    expect(refused.status).toBe(409);
    expect((await refused.json()).error.code).toBe("slots_pinned_error");
  } finally {
    await other.close(true);
  }
});

test("Ollama /api/generate naming an image model answers one image, never streamed; an empty prompt loads it", async () => {
  const res = await post("/api/generate", { model: "SD-Turbo", prompt: "a kiwi", width: 128, height: 96, steps: 3, options: { seed: 7 } });
  expect(res.headers.get("content-type")).toContain("application/json");
  const body = await res.json();
  expect(body).toMatchObject({ model: "SD-Turbo", response: "", done: true, done_reason: "stop" });
  expect(pngSize(decode(body.image))).toEqual({ width: 128, height: 128 });
  expect(received(body.image).extra).toMatchObject({ seed: 7, sample_params: { sample_steps: 3 } });
  expect(await (await post("/api/generate", { model: "SD-Turbo", prompt: "" })).json()).toMatchObject({ done_reason: "load" });
});

test("MCP lemonade_generate_image writes into the sandbox (output_path, output_dir) or answers inline image blocks", async () => {
  const call = async (args: Record<string, unknown>) =>
    (await (await post("/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "lemonade_generate_image", arguments: { model: "SD-Turbo", prompt: "a lime", size: "64x64", ...args } } })).json()).result;
  const named = await call({ output_path: "one.png" });
  expect(named.isError).toBe(false);
  // Lemonade's blocks: what was written, then the paths as JSON.
  expect(named.content[0].text).toStartWith("Wrote image to: ");
  const [path] = JSON.parse(named.content[1].text).paths as string[];
  expect(named.content[0].text).toBe(`Wrote image to: ${path}`);
  expect(path!.endsWith("one.png")).toBe(true);
  expect(path.startsWith(server.ctx.config.mcpImageDir)).toBe(true);
  expect(pngSize(new Uint8Array(await Bun.file(path).arrayBuffer()))).toEqual({ width: 64, height: 64 });
  const dir = await call({ output_dir: "batch", n: 2 });
  const { paths } = JSON.parse(dir.content.at(-1).text);
  expect(paths).toHaveLength(2);
  expect(dir.content.slice(0, 3).map((c: { text: string }) => c.text)).toEqual(["Wrote 2 images:", ...paths]);
  expect(new Set(paths).size).toBe(2);
  const inline = await call({});
  expect(inline.content[0]).toMatchObject({ type: "image", mimeType: "image/png" });
  expect(pngSize(decode(inline.content[0].data))).toEqual({ width: 64, height: 64 });
});

test("config.json's sdcpp.<backend>_bin (and llamacpp's) point a backend at the user's own binary; auto picks it", async () => {
  const cacheDir = tempDir();
  mkdirSync(cacheDir, { recursive: true });
  const extra = tempDir("lemonade-fake-models-");
  writeFileSync(join(extra, "tiny.gguf"), "FAKE");
  writeFileSync(join(cacheDir, "config.json"), JSON.stringify({ sdcpp: { cpu_bin: join(FAKE_DIR, "sd-server"), vulkan_bin: "builtin" }, llamacpp: { cpu_bin: join(FAKE_DIR, "llama-server") } }));
  // No fake on PATH: only the configured binaries can serve.
  const own = await startTestServer({ HF_HUB_CACHE: join(server.cacheDir, "hf"), LEMONADE_EXTRA_MODELS_DIR: extra, LEMONADE_MAX_LOADED_MODELS: "-1" }, cacheDir, { engines: false });
  try {
    const info = await (await fetch(`${own.url}/v1/system-info`)).json();
    expect(info.recipes["sd-cpp"].backends.cpu).toMatchObject({ state: "installed", version: `configured (${join(FAKE_DIR, "sd-server")})` });
    const res = await fetch(`${own.url}/v1/images/generations`, { method: "POST", body: JSON.stringify({ model: "SD-Turbo", prompt: "x", size: "64x64" }) });
    expect(res.status).toBe(200);
    const chat = await fetch(`${own.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "extra.tiny", max_tokens: 2, messages: [{ role: "user", content: "hi" }] }) });
    expect((await chat.json()).choices[0].message.content).toBe("tok0 tok1 ");
  } finally {
    await own.close();
  }
});

test("an sd-cpp model's effective options posted back to /v1/load are accepted as is", async () => {
  const options = await (await fetch(`${server.url}/v1/models/SD-Turbo/options`)).json();
  expect(options.effective).toMatchObject({ steps: 4, cfg_scale: 1, width: 512, height: 512, sdcpp_backend: "auto" });
  const res = await post("/v1/load", options.effective);
  expect(res.status, await res.clone().text()).toBe(200);
});

/** What the FAKE sd-server behind `model` has been asked, from its request log. */
async function engineLog(model = "SD-Turbo"): Promise<string[]> {
  const loaded = (await health()).find((m) => m.model_name === model);
  if (!loaded) return [];
  return (await fetch(`${loaded.backend_url.replace(/\/v1$/, "")}/fake/requests`)).json();
}

const form = (fields: Record<string, string | Blob>) => {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.set(k, v);
  return f;
};
const postForm = (path: string, fields: Record<string, string | Blob>) => fetch(`${server.url}${path}`, { method: "POST", body: form(fields) });

test("sizes are rounded up to 64 as sd.cpp makes them, and generation_info reports the size each image has", async () => {
  const res = await post("/v1/images/generations", { model: "SD-Turbo", prompt: "x", size: "65x65" });
  const body = await res.json();
  expect(received(body.data[0].b64_json).body.size).toBe("128x128");
  expect(pngSize(decode(body.data[0].b64_json))).toEqual({ width: 128, height: 128 });
  expect(body.data[0].generation_info).toMatchObject({ width: 128, height: 128 });
  const small = await (await post("/v1/images/generations", { model: "SD-Turbo", prompt: "x", width: 100, height: 64 })).json();
  expect(small.data[0].generation_info).toMatchObject({ width: 128, height: 64 });
  // An edit without a size is the input's size, not the default 512x512.
  const edit = await (await postForm("/v1/images/edits", { model: "SD-Turbo", prompt: "x", image: new Blob([new Uint8Array(png(64, 64, [1, 2, 3], {}))], { type: "image/png" }) })).json();
  expect(edit.data[0].generation_info).toMatchObject({ width: 64, height: 64 });
  const varied = await (await postForm("/v1/images/variations", { model: "SD-Turbo", image: new Blob([new Uint8Array(png(64, 64, [1, 2, 3], {}))]) })).json();
  expect(varied.data[0].generation_info).toMatchObject({ width: 64, height: 64 });
});

test("n up to 10 is true: beyond sd.cpp's batch of 8, a second batch, the seeds following on", async () => {
  const before = (await engineLog()).length;
  const body = await (await post("/v1/images/generations", { model: "SD-Turbo", prompt: "x", size: "64x64", n: 10, seed: 100 })).json();
  expect(body.data).toHaveLength(10);
  expect(body.data.map((d: any) => d.generation_info.seed)).toEqual([100, 101, 102, 103, 104, 105, 106, 107, 108, 109]);
  // What the engine made matches: its own seeds, from each batch's first.
  expect(body.data.map((d: any) => received(d.b64_json).params.seed + received(d.b64_json).index)).toEqual([100, 101, 102, 103, 104, 105, 106, 107, 108, 109]);
  expect((await engineLog()).slice(before)).toEqual(["POST /v1/images/generations", "POST /v1/images/generations"]);
  const edits = await (await postForm("/v1/images/edits", { model: "SD-Turbo", prompt: "x", n: "9", image: new Blob([new Uint8Array(png(64, 64, [1, 2, 3], {}))]) })).json();
  expect(edits.data).toHaveLength(9);
});

test("uploads that do not decode are refused before the engine: a text file as the image or the mask, a truncated PNG to upscale", async () => {
  const before = (await engineLog()).length;
  const good = new Blob([new Uint8Array(png(64, 64, [1, 2, 3], {}))], { type: "image/png" });
  const text = new Blob(["this is not an image"], { type: "image/png" });
  for (const [path, fields, param] of [
    ["/v1/images/edits", { model: "SD-Turbo", prompt: "x", image: text }, "image"],
    ["/v1/images/variations", { model: "SD-Turbo", image: text }, "image"],
    ["/v1/images/edits", { model: "SD-Turbo", prompt: "x", image: good, mask: text }, "mask"],
  ] as const) {
    const res = await postForm(path, fields);
    expect(res.status, path).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: "invalid_argument", param });
  }
  const truncated = png(16, 16, [1, 2, 3], {}).subarray(0, 60);
  const res = await post("/v1/images/upscale", { model: "RealESRGAN-x4plus", image: Buffer.from(truncated).toString("base64") });
  expect(res.status).toBe(400);
  expect((await res.json()).error.message).toContain("truncated");
  expect((await engineLog()).slice(before)).toEqual([]);
  // A JPEG is an image too.
  const { jpeg } = await import("../../scripts/fake-engine/png.ts");
  const fromJpeg = await postForm("/v1/images/edits", { model: "SD-Turbo", prompt: "x", image: new Blob([new Uint8Array(jpeg(64, 64, 90, {}))], { type: "image/jpeg" }) });
  expect(fromJpeg.status).toBe(200);
  expect(received((await fromJpeg.json()).data[0].b64_json).images[0]).toMatchObject({ decoded: true, format: "jpeg" });
});

test("client text may not carry an <sd_cpp_extra_args> block: generations, edits, Ollama, MCP, and a negative prompt cannot close the server's", async () => {
  const before = (await engineLog()).length;
  const block = '<sd_cpp_extra_args>{"width":128,"height":128,"batch_count":3}</sd_cpp_extra_args>';
  const gen = await post("/v1/images/generations", { model: "SD-Turbo", prompt: `a cat ${block}`, size: "64x64" });
  expect(gen.status).toBe(400);
  expect((await gen.json()).error).toMatchObject({ code: "invalid_argument", param: "prompt" });
  const neg = await post("/v1/images/generations", { model: "SD-Turbo", prompt: "a cat", negative_prompt: `x</sd_cpp_extra_args>${block}` });
  expect((await neg.json()).error).toMatchObject({ param: "negative_prompt" });
  const edit = await postForm("/v1/images/edits", { model: "SD-Turbo", prompt: `a cat <SD_CPP_EXTRA_ARGS >{}`, image: new Blob([new Uint8Array(png(64, 64, [1, 2, 3], {}))]) });
  expect(edit.status).toBe(400);
  const ollama = await post("/api/generate", { model: "SD-Turbo", prompt: `a cat ${block}` });
  expect(ollama.status).toBe(400);
  const mcp = await (await post("/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "lemonade_generate_image", arguments: { model: "SD-Turbo", prompt: `a cat ${block}` } } })).json();
  expect(mcp.result.isError).toBe(true);
  expect(JSON.stringify(mcp.result.content)).toContain("sd_cpp_extra_args");
  expect((await engineLog()).slice(before)).toEqual([]);
  // The server's own block survives any text inside it: `<` is escaped in its JSON.
  const ok = await (await post("/v1/images/generations", { model: "SD-Turbo", prompt: "a cat", negative_prompt: "a < b", size: "64x64" })).json();
  expect(received(ok.data[0].b64_json).extra.negative_prompt).toBe("a < b");
});

test("upscale_factor is the ESRGAN model's own scale or refused; an upscaler asked to generate is a 400 naming its kind", async () => {
  const image = png(8, 8, [1, 2, 3], {}).toString("base64");
  const two = await post("/v1/images/upscale", { model: "RealESRGAN-x4plus", image, upscale_factor: 2 });
  expect(two.status).toBe(400);
  expect((await two.json()).error).toMatchObject({ param: "upscale_factor", message: expect.stringContaining("must be 4") });
  const four = await post("/v1/images/upscale", { model: "RealESRGAN-x4plus", image, upscale_factor: 4 });
  expect(pngSize(decode((await four.json()).data[0].b64_json))).toEqual({ width: 32, height: 32 });
  const gen = await post("/v1/images/generations", { model: "RealESRGAN-x4plus", prompt: "x" });
  expect(gen.status).toBe(400);
  expect((await gen.json()).error.message).toContain("is an upscaling model");
});

test("sdcpp_args is an allow-list: flags that read files, reach the network, serve other content or exit are refused on /v1/load and the CLI", async () => {
  for (const args of ["--qwen2vl /x.gguf", "--rpc-servers 10.0.0.1:50052", "--serve-html-path /etc/passwd", "--clip_l /x", "--t5xxl /x", "--taesd /x", "--lora-model-dir /", "--upscale-model /x", "-h", "--listen-port 5"]) {
    const res = await post("/v1/load", { model_name: "SDXL-Turbo", sdcpp_args: args });
    expect(res.status, args).toBe(400);
    expect(JSON.stringify(await res.json())).toContain(args.split(" ")[0]);
  }
  const cli = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "cli", "main.ts"), "load", "SDXL-Turbo", "--sdcpp-args", "--rpc-servers 10.0.0.1:50052"], {
    env: { PATH: process.env.PATH ?? "", LEMONADE_HOST: "127.0.0.1", LEMONADE_PORT: new URL(server.url).port, HOME: server.cacheDir, LEMONADE_CACHE_DIR: server.cacheDir },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(cli.stdout).text(), new Response(cli.stderr).text(), cli.exited]);
  expect(code).not.toBe(0);
  expect(out + err).toContain("--rpc-servers");
  expect((await health()).some((m) => m.model_name === "SDXL-Turbo")).toBe(false);
  const ok = await post("/v1/load", { model_name: "SDXL-Turbo", sdcpp_args: "--threads 2 --vae-tiling --sampling-method euler --eta -0.5" });
  expect(ok.status, await ok.clone().text()).toBe(200);
});

test("a failed engine start answers with the engine's own error line, not the end of its usage text", async () => {
  // --steps takes a number: the allow-list passes it, and sd-server aborts on the word (std::stoi).
  const res = await post("/v1/load", { model_name: "SDXL-Turbo", sdcpp_args: "--steps many" });
  expect(res.status).toBe(500);
  const body = await res.json();
  expect(JSON.stringify(body)).toContain("terminate called after throwing an instance of 'std::invalid_argument'");
});
