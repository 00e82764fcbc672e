// Lemonade's media generation (lemonade.md): a textured 3D mesh from an image (TRELLIS) and an
// audio clip from a text prompt (ACE-Step music, ThinkSound sound effects). Both answer the raw
// bytes on success and an OpenAI-style `error` object on failure.
import { Type as T } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E, LOADING_ERRORS } from "./errors.ts";
import { ModelName } from "./schemas.ts";

/** What 3D generation produces natively: a glTF binary. */
export const MESH_FORMATS = ["glb"] as const;
/** What audio generation produces natively. */
export const AUDIO_GENERATION_FORMATS = ["wav"] as const;

export const generations3d = endpoint({
  id: "lemonade.3d_generations",
  method: "POST",
  path: "/3d/generations",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "openai",
  access: "api",
  summary: "Generate a textured 3D mesh (GLB) from an image",
  availability: "fully_available",
  description:
    "You provide an input image and receive a textured 3D mesh as a glTF-binary (`.glb`) file. Serves TRELLIS models (`TRELLIS-3D`, recipe `trellis`, on the `trellis-server` binary config.json's `trellis.<backend>_bin` names or PATH holds). The input image must be PNG, JPEG, BMP, or GIF. Every field is checked before the model is loaded. 3D reconstruction takes on the order of minutes on a GPU; higher cascade resolutions take longer.",
  notes: "On success the raw mesh bytes are returned as `model/gltf-binary`. On failure the response is JSON with an `error` object: `400` for invalid requests, `404` for unknown models, `500` when the backend reports an error, and `502` when the backend produces no output.",
  body: T.Object(
    {
      model: ModelName,
      image: T.String({ description: "Base64-encoded input image (optionally a `data:` URL): PNG, JPEG, BMP or GIF." }),
      resolution: T.Optional(
        T.Union([512, 1024, 1536, "512", "1024", "1536"].map((v) => T.Literal(v)), { description: "Cascade resolution: `512`, `1024`, or `1536`. Default: `512`." }),
      ),
      bg_removal: T.Optional(T.Union([T.Literal("threshold"), T.Literal("birefnet")], { description: "Background removal mode: `threshold` or `birefnet` (for photos with real backgrounds)." })),
      uv: T.Optional(T.Union([T.Literal("xatlas"), T.Literal("box")], { description: "UV atlas method: `xatlas` (default; a full unwrap) or `box` (a faster 6-plane projection)." })),
      seed: T.Optional(T.Integer({ description: "Random seed for reproducibility." })),
      response_format: T.Optional(T.String({ description: "Output encoding: only `glb`, what the backend produces natively. Default: `glb`." })),
    },
    { title: "MeshGenerationRequest", additionalProperties: true },
  ),
  contentType: "model/gltf-binary",
  errors: [E.missingArgument, E.invalidArgument, E.invalidInputImage, E.unsupportedMediaFormat, E.cannotGenerateMeshes, ...LOADING_ERRORS, E.generationFailed, E.noGeneratedOutput],
  example: { body: { model: "TRELLIS-3D", image: "<base64 PNG>", resolution: 512, seed: 42 } },
});

export const audioGenerations = endpoint({
  id: "lemonade.audio_generations",
  method: "POST",
  path: "/audio/generations",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "openai",
  access: "api",
  summary: "Generate audio (music or sound effects) from a text prompt",
  availability: "fully_available",
  description:
    "You provide a text prompt and receive a generated audio clip. The model decides the kind of audio: music with ACE-Step models (`ACE-Step-Music`, recipe `acestep`, on `ace-server`), sound effects with ThinkSound models (`ThinkSound-SFX`, recipe `thinksound`, on `ts-server`); each engine is the binary config.json's `<recipe>.<backend>_bin` names, or the one on PATH. ACE-Step sings `lyrics` when they are given and not `[Instrumental]`: a language-model pass turns them into audio codes first, so vocal tracks take longer.",
  notes: "On success the raw audio bytes are returned as `audio/wav`. On failure the response is JSON with an `error` object: `400` for invalid requests, `404` for unknown models, `500` when the backend reports an error, and `502` when the backend produces no output.",
  body: T.Object(
    {
      model: ModelName,
      prompt: T.String({ description: "Text description of the music or sound effect. For music, the style: genre, mood, tempo, instruments, and voice." }),
      lyrics: T.Optional(T.String({ description: "Lyrics to sing (ACE-Step only), one phrase per line, sections tagged `[verse]`, `[chorus]`, ... Empty or `[Instrumental]` (any case) makes an instrumental track." })),
      vocal_language: T.Optional(T.String({ description: "BCP-47 language code of the lyrics (ACE-Step only). Default: `en`." })),
      duration: T.Optional(T.Number({ description: "Length of the clip in seconds. Defaults to the backend's native default." })),
      steps: T.Optional(T.Integer({ description: "Number of inference steps." })),
      cfg: T.Optional(T.Number({ description: "Classifier-free guidance strength (ThinkSound only)." })),
      seed: T.Optional(T.Integer({ description: "Random seed for reproducibility." })),
      response_format: T.Optional(T.String({ description: "Output encoding: only `wav`, what the backend produces natively. Default: `wav`." })),
    },
    { title: "AudioGenerationRequest", additionalProperties: true },
  ),
  contentType: "audio/wav",
  errors: [E.missingArgument, E.invalidArgument, E.unsupportedMediaFormat, E.cannotGenerateAudio, ...LOADING_ERRORS, E.generationFailed, E.noGeneratedOutput],
  example: { body: { model: "ThinkSound-SFX", prompt: "glass shattering on a stone floor", duration: 5, seed: 42 } },
});
