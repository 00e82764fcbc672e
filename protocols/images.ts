// OpenAI's image routes on stable-diffusion.cpp's sd-server, as the real server drives it:
// settings resolved in the documented order (the request, the model's saved sd-cpp options, its
// catalog image_defaults, the recipe's defaults), sent as the size field plus sd.cpp's own
// parameters in an `<sd_cpp_extra_args>{...}</sd_cpp_extra_args>` block appended to the prompt
// (`seed`, `negative_prompt`, `sample_params.sample_steps`, `.guidance.txt_cfg`, `.sample_method`,
// `.scheduler`, `.flow_shift`). Edits and variations go to sd-server's multipart edits route;
// upscaling runs sd-cli with an ESRGAN model. A concrete seed is always sent, and reported back.
// What the engine would otherwise decide silently is settled here: sizes are rounded up to the
// multiple of 64 sd.cpp makes, and each image reports the size it has; more than sd.cpp's batch
// of 8 images is several batches; uploads that do not decode are refused; client text may not
// carry an extra-args block of its own (sd-server applies the first one, over everything sent).
import { ApiError } from "../lib/api-error.ts";
import { readImage } from "../lib/images.ts";
import { scrubPaths } from "../lib/scrub.ts";
import { E } from "../spec/errors.ts";
import { enginePath, serves } from "../spec/recipes.ts";
import { generations, type ImageGenerationRequest, type ImagesResponse, type UpscaleRequest } from "../spec/images.ts";
import type { CatalogModel } from "../models/catalog.ts";
import type { ServerContext } from "../runtime/context.ts";
import type { ModelCheck } from "../runtime/request.ts";
import { checkedRequest } from "./request-check.ts";
import { isJson, jsonItems, type Json } from "../lib/json.ts";

/** The prompt the real server sends for a variation (the docs: the prompt is ignored). */
const VARIATION_PROMPT = "variation";

export const needsImageModel: ModelCheck = (model, named) => {
  if (model.labels.includes("upscaling")) {
    return ApiError.of(E.upscalerCannotGenerate, `Model ${named(model)} is an upscaling model: it cannot generate images (use /v1/images/upscale)`, "model");
  }
  return model.type === "image" && serves(model.recipe, "image.generate")
    ? null
    : ApiError.of(E.cannotGenerateImages, `Model ${named(model)} cannot generate images (its type is ${model.type})`, "model");
};

/** sd.cpp makes images in multiples of 64 pixels, rounding a size up. */
const SIZE_STEP = 64;
const roundSize = (n: number) => Math.ceil(n / SIZE_STEP) * SIZE_STEP;

/** sd.cpp caps one generation at 8 images (resolve_and_validate); more are several batches. */
const ENGINE_BATCH = 8;

/** sd-server applies the first `<sd_cpp_extra_args>` block in the prompt: one in client text would
 * override every setting sent after it, so client text may not hold the tag at all. */
const EXTRA_ARGS_TAG = /<\s*\/?\s*sd_cpp_extra_args\s*>/i;

function checkClientText(text: unknown, param: string): void {
  if (typeof text === "string" && EXTRA_ARGS_TAG.test(text)) {
    throw ApiError.of(E.invalidArgument, `'${param}' may not contain an <sd_cpp_extra_args> block: set the parameters as request fields`, param);
  }
}

/** What a generation runs with, each from the first layer that sets it. */
export interface ImageSettings {
  width: number;
  height: number;
  steps: number;
  cfgScale: number;
  seed: number;
  negativePrompt?: string;
  sampleMethod?: string;
  scheduler?: string;
  flowShift?: number;
}

const randomSeed = () => Math.floor(Math.random() * 2 ** 31);

function parseSize(size: unknown, param = "size"): [number, number] | undefined {
  if (size === undefined || size === null || size === "") return undefined;
  const m = /^(\d{1,5})x(\d{1,5})$/.exec(String(size));
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) throw ApiError.of(E.invalidArgument, `'${param}' must be WIDTHxHEIGHT, such as 512x512`, param);
  return [roundSize(Number(m[1])), roundSize(Number(m[2]))];
}

/** The settings a request may carry: a generation's fields, or those an edit's form gives. */
type SettingsRequest = Partial<Pick<ImageGenerationRequest, "size" | "width" | "height" | "steps" | "cfg_scale" | "seed" | "negative_prompt" | "sample_method" | "scheduler">>;

/** Settings for `model`: the request's values, else the saved options, else image_defaults, else the recipe's. */
export function imageSettings(ctx: Pick<ServerContext, "options">, model: CatalogModel, request: SettingsRequest): ImageSettings {
  const options = ctx.options.resolve(model);
  const extras = model.imageExtras ?? {};
  const size = parseSize(request.size);
  const seed = typeof request.seed === "number" && request.seed >= 0 ? request.seed : randomSeed();
  const settings: ImageSettings = {
    width: roundSize(size?.[0] ?? request.width ?? Number(options.width)),
    height: roundSize(size?.[1] ?? request.height ?? Number(options.height)),
    steps: request.steps ?? Number(options.steps),
    cfgScale: request.cfg_scale ?? Number(options.cfg_scale),
    seed,
  };
  checkClientText(request.negative_prompt, "negative_prompt");
  if (request.negative_prompt) settings.negativePrompt = String(request.negative_prompt);
  const sampleMethod = request.sample_method ?? extras.sampling_method ?? extras.sample_method;
  if (sampleMethod) settings.sampleMethod = String(sampleMethod);
  const scheduler = request.scheduler ?? extras.scheduler;
  if (scheduler) settings.scheduler = String(scheduler);
  if (typeof extras.flow_shift === "number") settings.flowShift = extras.flow_shift;
  return settings;
}

/** The prompt with sd.cpp's parameters appended, as sd-server extracts them. */
export function withExtraArgs(prompt: string, s: ImageSettings, opts: { flowShift?: boolean } = {}): string {
  const sample: Json = { sample_steps: s.steps, guidance: { txt_cfg: s.cfgScale } };
  if (s.sampleMethod) sample.sample_method = s.sampleMethod;
  if (s.scheduler) sample.scheduler = s.scheduler;
  if (s.flowShift !== undefined && opts.flowShift !== false) sample.flow_shift = s.flowShift;
  const extra: Json = { seed: s.seed, sample_params: sample };
  if (s.negativePrompt) extra.negative_prompt = s.negativePrompt;
  // `<` escaped: no string inside the block can close it early.
  return `${prompt} <sd_cpp_extra_args>${JSON.stringify(extra).replace(/</g, "\\u003c")}</sd_cpp_extra_args>`;
}

/** The size an answered image has, read from it. */
function madeSize(b64: unknown): { width: number; height: number } | undefined {
  if (typeof b64 !== "string") return undefined;
  const info = readImage(Buffer.from(b64, "base64"));
  return "error" in info ? undefined : { width: info.width, height: info.height };
}

/** sd-server's answer, each image with the parameters it was made with (seeds count up per image
 * from the batch's first) and the size it was made at. */
function reshape(s: ImageSettings, firstIndex = 0) {
  return (answer: Json): Json => ({
    created: answer.created ?? Math.floor(Date.now() / 1000),
    data: jsonItems(answer.data).map((d, i) => ({
      b64_json: d.b64_json,
      generation_info: { seed: s.seed + firstIndex + i, steps: s.steps, cfg_scale: s.cfgScale, width: s.width, height: s.height, ...madeSize(d.b64_json) },
    })),
    output_format: answer.output_format ?? "png",
  });
}

/** `n` images as batches of at most ENGINE_BATCH, each one engine request whose seed follows on
 * from the images before it; one batch is the engine's answer as it is. */
async function inBatches(n: number, s: ImageSettings, send: (count: number, first: number, settings: ImageSettings) => Promise<Response>): Promise<Response> {
  if (n <= ENGINE_BATCH) return send(n, 0, s);
  const data: Json[] = [];
  let last: Json = {};
  for (let first = 0; first < n; first += ENGINE_BATCH) {
    const res = await send(Math.min(ENGINE_BATCH, n - first), first, { ...s, seed: s.seed + first });
    if (!res.ok) return res;
    const answer: unknown = await res.json();
    last = isJson(answer) ? answer : {};
    data.push(...jsonItems(last.data));
  }
  return Response.json({ ...last, data });
}

function checkResponseFormat(format: unknown): void {
  if (format !== undefined && format !== null && format !== "" && format !== "b64_json") {
    throw ApiError.of(E.invalidArgument, "'response_format' must be b64_json: only base64-encoded images are supported", "response_format");
  }
}

/** A generation's answer as JSON, for the routes that wrap it (Ollama, MCP, omni): their request
 * is checked as the route checks its body, so no caller reaches the engine with less. */
export async function generateImages(ctx: Pick<ServerContext, "options" | "proxy">, body: Json, signal: AbortSignal, endpoint: string): Promise<Json> {
  const res = await generate(ctx, checkedRequest(generations.body, body, "Not an image generation request"), signal, endpoint);
  const answer: unknown = await res.json();
  return isJson(answer) ? answer : {};
}

/** POST /v1/images/generations */
export function generate(ctx: Pick<ServerContext, "options" | "proxy">, body: ImageGenerationRequest, signal: AbortSignal, endpoint: string): Promise<Response> {
  checkResponseFormat(body.response_format);
  checkClientText(body.prompt, "prompt");
  const model = ctx.proxy.model(body.model, needsImageModel);
  const s = imageSettings(ctx, model, body);
  return inBatches(body.n ?? 1, s, (count, first, batch) =>
    ctx.proxy.toModel({
      model: body.model,
      path: enginePath(model.recipe, "image.generate"),
      body: { prompt: withExtraArgs(body.prompt, batch), n: count, size: `${s.width}x${s.height}`, output_format: "png" },
      reshape: reshape(s, first),
      check: needsImageModel,
      signal,
      endpoint,
      generation: false,
    }),
  );
}

function field(form: FormData, name: string): string | undefined {
  const v = form.get(name);
  return typeof v === "string" && v !== "" ? v : undefined;
}

function intField(form: FormData, name: string, min: number, max: number): number | undefined {
  const raw = field(form, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw ApiError.of(E.invalidArgument, `'${name}' must be a whole number from ${min} to ${max}`, name);
  return n;
}

function numberField(form: FormData, name: string): number | undefined {
  const raw = field(form, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw ApiError.of(E.invalidArgument, `'${name}' must be a number`, name);
  return n;
}

async function readForm(request: Request): Promise<FormData> {
  if (!request.headers.get("content-type")?.toLowerCase().startsWith("multipart/form-data")) {
    throw ApiError.of(E.notMultipart, "The request must be multipart/form-data with a 'model' and an 'image'");
  }
  try {
    return await request.formData();
  } catch (err) {
    throw ApiError.of(E.unreadableMultipart, `The multipart body could not be read: ${(err as Error).message}`);
  }
}

/** POST /v1/images/edits and /v1/images/variations: multipart in, sd-server's edits route behind. */
export async function edit(ctx: Pick<ServerContext, "options" | "proxy">, request: Request, kind: "edit" | "variation", endpoint: string): Promise<Response> {
  const form = await readForm(request);
  const name = field(form, "model");
  if (!name) throw ApiError.of(E.missingArgument, "Missing required argument 'model'", "model");
  const plain = form.getAll("image").filter((f) => f instanceof Blob);
  const listed = form.getAll("image[]").filter((f) => f instanceof Blob);
  if (plain.length && listed.length) throw ApiError.of(E.imageFieldsBoth, "Send the images under 'image' or under 'image[]', not both", "image");
  const images = listed.length ? listed : plain;
  if (!images.length) throw ApiError.of(E.missingArgument, "Missing required argument 'image'", "image");
  const prompt = kind === "edit" ? field(form, "prompt") : VARIATION_PROMPT;
  if (!prompt) throw ApiError.of(E.missingArgument, "Missing required argument 'prompt'", "prompt");
  checkClientText(prompt, "prompt");
  checkResponseFormat(field(form, "response_format"));
  const n = intField(form, "n", 1, 10) ?? 1;
  const model = ctx.proxy.model(name, needsImageModel);
  const size = parseSize(field(form, "size"));
  const s = imageSettings(ctx, model, {
    steps: intField(form, "steps", 1, 1000),
    cfg_scale: numberField(form, "cfg_scale"),
    seed: intField(form, "seed", -1, 2 ** 53),
    negative_prompt: field(form, "negative_prompt"),
  });
  // sd-server skips an upload it cannot decode and answers a text-to-image picture instead.
  const uploads = await Promise.all(images.map((image, i) => checkUpload(image as Blob, images.length > 1 ? `image[${i}]` : "image")));
  const mask = kind === "edit" ? form.get("mask") : null;
  if (mask instanceof Blob) await checkUpload(mask, "mask");
  const out = new FormData();
  // Without a size sd-server takes the first image's (rounded up as it makes it), as the docs say.
  [s.width, s.height] = size ?? [roundSize(uploads[0]!.width), roundSize(uploads[0]!.height)];
  if (size) out.set("size", `${size[0]}x${size[1]}`);
  for (const [i, image] of images.entries()) out.append("image[]", image as Blob, (image as File).name || `image-${i}.png`);
  if (mask instanceof Blob) out.set("mask", mask, "mask.png");
  return inBatches(n, s, (count, first, batch) => {
    out.set("prompt", withExtraArgs(prompt, batch, { flowShift: kind === "edit" }));
    out.set("n", String(count));
    return ctx.proxy.toModel({
      model: name,
      path: enginePath(model.recipe, "image.edit"),
      body: {},
      form: out,
      reshape: reshape(s, first),
      check: needsImageModel,
      signal: request.signal,
      endpoint,
      generation: false,
    });
  });
}

/** An upload's size, refused unless it decodes as a PNG, JPEG or WebP. */
async function checkUpload(file: Blob, param: string): Promise<{ width: number; height: number }> {
  const info = readImage(new Uint8Array(await file.arrayBuffer()));
  if ("error" in info) throw ApiError.of(E.undecodableImage, `'${param}' is not a readable PNG, JPEG or WebP image: ${info.error}`, param.replace(/\[\d+\]$/, ""));
  return info;
}

/** The scale an ESRGAN model upscales by, from its name (`RealESRGAN-x4plus`); 4 when it says none. */
function nativeScale(model: CatalogModel): number {
  const m = /x(\d)(?!\d)/i.exec([model.id, ...Object.values(model.checkpoints)].join(" "));
  return m ? Number(m[1]) : 4;
}

/** POST /v1/images/upscale: the one-shot recipe standing in for the model's (sd-cli), with the
 * ESRGAN model downloaded first when needed. */
export async function upscale(ctx: Pick<ServerContext, "catalog" | "library" | "options" | "standIns">, body: UpscaleRequest, signal: AbortSignal): Promise<ImagesResponse> {
  let model: CatalogModel;
  try {
    model = ctx.catalog.get(body.model);
  } catch (err) {
    // Lemonade answers an unknown upscaler in this route's own words and type (openai.md, upscale).
    if (err instanceof ApiError && err.code === E.modelNotFound.code) throw ApiError.of(E.upscalerNotFound, `Upscale model not found: ${body.model}`, "model");
    throw err;
  }
  if (!model.labels.includes("upscaling")) throw ApiError.of(E.notUpscaler, `Model ${ctx.catalog.publicId(model)} is not an upscaling model (it has no 'upscaling' label)`, "model");
  const upscaler = ctx.standIns.of(model, "upscale");
  if (upscaler?.kind !== "one-shot") throw ApiError.of(E.cannotUpscale, `Model ${ctx.catalog.publicId(model)}'s recipe (${model.recipe}) cannot upscale`, "model");
  // An ESRGAN model upscales by its own scale only (sd-cli has no other): another factor is refused.
  const scale = nativeScale(model);
  if (body.upscale_factor !== undefined && body.upscale_factor !== scale) {
    throw ApiError.of(E.invalidArgument, `'upscale_factor' must be ${scale}: ${ctx.catalog.publicId(model)} upscales ${scale}x, and no other factor`, "upscale_factor");
  }
  const image = Uint8Array.from(Buffer.from(body.image, "base64"));
  const decoded = readImage(image);
  if ("error" in decoded || decoded.format !== "png") {
    throw ApiError.of(E.undecodableImage, `'image' must be a base64-encoded PNG${"error" in decoded ? `: ${decoded.error}` : ""}`, "image");
  }
  try {
    await ctx.library.ensureDownloaded(model);
  } catch (err) {
    throw ApiError.of(E.upscalerNotFound, (err as Error).message, "model");
  }
  const path = ctx.catalog.files(model).find((f) => f.role === "main")?.path;
  if (!path) throw ApiError.of(E.upscalerNotFound, `Model ${ctx.catalog.publicId(model)}'s file is not downloaded`, "model");
  let out: Uint8Array;
  try {
    out = await ctx.standIns.run(upscaler, { modelPath: path, options: ctx.options.resolve(model), input: image }, signal);
  } catch (err) {
    throw ApiError.of(E.upscaleFailed, `Upscale failed: ${scrubPaths((err as Error).message)}`);
  }
  return { created: Math.floor(Date.now() / 1000), data: [{ b64_json: Buffer.from(out).toString("base64") }], output_format: "png" };
}
