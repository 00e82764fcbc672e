// Lemonade's media generation: POST /v1/3d/generations (an image to a glTF-binary mesh) and POST
// /v1/audio/generations (a prompt to a WAV). The schema checks each field's type; what it cannot
// say (a base64 payload that is an image, the one format the backend produces) is checked here,
// all before the model is loaded, so a malformed request never starts a multi-gigabyte load.
// The engine conversation is the recipe's own (EngineProxy.generate); its bytes are answered as
// they are, an empty answer as 502 and a reported error as the status it carries.
import type { Static } from "@sinclair/typebox";
import { ApiError } from "../lib/api-error.ts";
import { sniffImage } from "../lib/images.ts";
import { E } from "../spec/errors.ts";
import { serves, type Capability } from "../spec/recipes.ts";
import { AUDIO_GENERATION_FORMATS, MESH_FORMATS, type audioGenerations, type generations3d } from "../spec/generation.ts";
import type { ServerContext } from "../runtime/context.ts";
import type { ModelCheck } from "../runtime/request.ts";

export type MeshRequest = Static<(typeof generations3d)["body"]>;
export type AudioGenerationRequest = Static<(typeof audioGenerations)["body"]>;

const BASE64 = /^[A-Za-z0-9+/=\r\n]+$/;

const needs = (capability: Capability, row: typeof E.cannotGenerateMeshes, what: string): ModelCheck => (model, named) =>
  serves(model.recipe, capability) ? null : ApiError.of(row, `Model ${named(model)} cannot generate ${what} (its recipe is ${model.recipe})`, "model");

const needsMeshModel = needs("mesh.generate", E.cannotGenerateMeshes, "3D meshes");
const needsAudioModel = needs("audio.generate", E.cannotGenerateAudio, "audio");

/** `image`, a base64 payload (or data: URL) whose first bytes are a PNG, JPEG, BMP or GIF. */
function checkImage(image: string): void {
  let data = image;
  if (data.startsWith("data:")) {
    const comma = data.indexOf(",");
    if (comma < 0) throw ApiError.of(E.invalidInputImage, "'image' data URL is missing its base64 payload", "image");
    data = data.slice(comma + 1);
  }
  if (data === "" || !BASE64.test(data)) throw ApiError.of(E.invalidInputImage, "'image' must be base64 data or a base64 data: URL", "image");
  // 16 base64 characters are 12 bytes, more than any of the magics needs.
  const head = data.replace(/[\r\n]/g, "").slice(0, 16);
  if (!sniffImage(Uint8Array.from(Buffer.from(head, "base64")))) {
    throw ApiError.of(E.invalidInputImage, "'image' is not a supported format (expected PNG, JPEG, BMP, or GIF)", "image");
  }
}

function checkFormat(format: string | undefined, supported: readonly string[]): string {
  const chosen = format ?? supported[0]!;
  if (!supported.includes(chosen)) {
    throw ApiError.of(E.unsupportedMediaFormat, `response_format '${chosen}' is not supported (supported: ${supported.join(", ")})`, "response_format");
  }
  return chosen;
}

async function generated(ctx: Pick<ServerContext, "proxy">, model: string, capability: Capability, body: MeshRequest | AudioGenerationRequest, check: ModelCheck, mime: string, signal: AbortSignal): Promise<Response> {
  const out = await ctx.proxy.generate({ model, capability, body, check, signal });
  if ("error" in out) {
    const row = out.status >= 400 && out.status < 500 ? E.invalidArgument : E.generationFailed;
    throw ApiError.of(row, out.error).withStatus(out.status);
  }
  if (!out.bytes.length) {
    throw ApiError.of(E.noGeneratedOutput, "Generation failed: the backend produced no output (it likely crashed or ran out of GPU memory). Check the server logs.");
  }
  return new Response(out.bytes, { headers: { "content-type": mime } });
}

/** POST /v1/3d/generations. */
export function generateMesh(ctx: Pick<ServerContext, "proxy">, body: MeshRequest, signal: AbortSignal): Promise<Response> {
  checkImage(body.image);
  checkFormat(body.response_format, MESH_FORMATS);
  return generated(ctx, body.model, "mesh.generate", body, needsMeshModel, "model/gltf-binary", signal);
}

/** POST /v1/audio/generations. */
export function generateAudio(ctx: Pick<ServerContext, "proxy">, body: AudioGenerationRequest, signal: AbortSignal): Promise<Response> {
  const format = checkFormat(body.response_format, AUDIO_GENERATION_FORMATS);
  return generated(ctx, body.model, "audio.generate", body, needsAudioModel, `audio/${format}`, signal);
}
