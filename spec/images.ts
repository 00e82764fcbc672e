// OpenAI-compatible image endpoints (openai.md § images), served by stable-diffusion.cpp's
// sd-server (engines/sd-cpp.ts). Generation takes JSON; edits and variations take multipart.
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E, LOADING_ERRORS } from "./errors.ts";
import { ModelName, status } from "./schemas.ts";

const imageErrors = [
  { status: 400, code: "", when: "The backend's reply does not parse, or a request field not listed above has the wrong JSON type" },
  ...LOADING_ERRORS,
  E.upscalerCannotGenerate,
  E.cannotGenerateImages,
];

const multipartErrors = [
  E.notMultipart,
  E.unreadableMultipart,
  E.missingArgument,
  E.invalidArgument,
  E.undecodableImage,
  ...imageErrors,
];

const ImagesResponse = T.Object({
  created: T.Integer({ description: "Unix timestamp of when the image was generated" }),
  data: T.Array(
    T.Object({
      b64_json: T.String({ description: "Base64-encoded PNG" }),
      generation_info: T.Optional(
        T.Unknown({ description: "Generation parameters the server used: `seed`, `steps`, `cfg_scale`, and the `width` and `height` of the image as made" }),
      ),
    }, { title: "ImageData" }),
    { description: "The generated images, one entry per image" },
  ),
  output_format: T.Optional(T.String({ description: "File format of the images, such as `png`" })),
}, { title: "ImagesResponse" });

const Size = T.String({
  pattern: "^\\d+x\\d+$",
  description: "Image size as `WIDTHxHEIGHT`, such as `256x256`. Each side is rounded up to a multiple of 64, as sd.cpp makes images; `generation_info` reports the size made.",
});
const B64Only = T.Literal("b64_json", { description: "Only `b64_json`, a base64-encoded image, is supported." });

export const generations = endpoint({
  id: "openai.images_generations",
  method: "POST",
  path: "/images/generations",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  summary: "Generate an image from a text prompt",
  modality: "prompt -> image",
  availability: "partially_available",
  description:
    "Generates an image from a text prompt, loading the model on first use. CPU inference takes minutes per image; a GPU backend is much faster. Settings come, in this order, from the request, the model's saved `sd-cpp` options, its catalog `image_defaults`, then sd-server's own.",
  body: T.Object(
    {
      prompt: T.String({ minLength: 1, description: "The text description of the image to generate. It may not contain an `<sd_cpp_extra_args>` block." }),
      model: ModelName,
      size: T.Optional(Size),
      width: T.Optional(T.Integer({ minimum: 64, maximum: 4096, description: "Lemonade extension: image width, instead of `size`." })),
      height: T.Optional(T.Integer({ minimum: 64, maximum: 4096, description: "Lemonade extension: image height, instead of `size`." })),
      n: T.Optional(T.Integer({ minimum: 1, maximum: 10, description: "Number of images to generate. Defaults to `1`. More than 8 (sd.cpp's batch) are made in several batches." })),
      response_format: T.Optional(status(B64Only, "partial")),
      steps: T.Optional(T.Integer({ minimum: 1, maximum: 1000, description: "Number of inference steps; lower is faster, higher can improve quality." })),
      cfg_scale: T.Optional(T.Number({ description: "Classifier-free guidance scale. Defaults to the model's own, else `7.0`." })),
      seed: T.Optional(T.Integer({ description: "Random seed for reproducible output; a negative value, or none, picks a random one, which the answer reports." })),
      negative_prompt: T.Optional(T.String({ description: "Lemonade extension: what the image should not show. It may not contain an `<sd_cpp_extra_args>` block." })),
      sample_method: T.Optional(T.String({ description: "Lemonade extension: sd.cpp's sampler, such as `euler_a`." })),
      scheduler: T.Optional(T.String({ description: "Lemonade extension: sd.cpp's scheduler, such as `karras`." })),
    },
    { additionalProperties: true },
  ),
  response: ImagesResponse,
  errors: imageErrors,
  example: { body: { model: "SD-Turbo", prompt: "A serene mountain landscape at sunset", size: "512x512", steps: 4, response_format: "b64_json" } },
});

const multipartFields = {
  model: ModelName,
  image: T.Unknown({ description: "PNG, JPEG or WebP upload (`image`, or `image[]` repeated for several references); one that does not decode is refused." }),
  size: T.Optional(Size),
  n: T.Optional(T.Integer({ minimum: 1, maximum: 10, description: "Number of images to generate, from `1` to `10`. Defaults to `1`." })),
  response_format: T.Optional(status(B64Only, "partial")),
};

export const edits = endpoint({
  id: "openai.images_edits",
  method: "POST",
  path: "/images/edits",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  rawBody: true,
  summary: "Edit images as a prompt describes",
  modality: "image + prompt -> edited image",
  availability: "partially_available",
  description: "Edits one or more reference images as a prompt describes. The request is `multipart/form-data`; images are forwarded to sd-server without re-encoding.",
  body: T.Object({
    ...multipartFields,
    prompt: T.String({ description: "A text description of the desired edit. It may not contain an `<sd_cpp_extra_args>` block." }),
    mask: T.Optional(T.Unknown({ description: "A PNG, JPEG or WebP mask: white areas are edited and black areas are kept. One that does not decode is refused." })),
    steps: T.Optional(T.Integer({ description: "Number of inference steps. Defaults to the model's own." })),
    cfg_scale: T.Optional(T.Number({ description: "Classifier-free guidance scale. Defaults to the model's own." })),
    seed: T.Optional(T.Integer({ description: "Random seed for reproducible output." })),
  }),
  response: ImagesResponse,
  errors: [...multipartErrors.slice(0, 4), E.imageFieldsBoth, ...multipartErrors.slice(4)],
});

export const variations = endpoint({
  id: "openai.images_variations",
  method: "POST",
  path: "/images/variations",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  rawBody: true,
  summary: "Generate a variation of an image",
  modality: "image -> varied image",
  availability: "partially_available",
  description: "Generates a variation of a source image, sent as `multipart/form-data`: sd-server's edit with a fixed prompt asking for a variation of the image.",
  body: T.Object({
    ...multipartFields,
    prompt: T.Optional(status(T.String({ description: "Ignored; the variation depends only on the image." }), "not_available")),
  }),
  response: ImagesResponse,
  errors: multipartErrors,
});

export const upscale = endpoint({
  id: "openai.images_upscale",
  method: "POST",
  path: "/images/upscale",
  mount: "versioned",
  page: "openai",
  errorStyle: "openai",
  access: "api",
  summary: "Upscale an image",
  modality: "image + ESRGAN model -> upscaled image",
  availability: "fully_available",
  description: "Upscales an image with an upscaling model such as `RealESRGAN-x4plus`. The model is downloaded on first use.",
  body: T.Object({
    image: T.String({ minLength: 1, description: "Base64-encoded PNG image to upscale; one that does not decode (a truncated PNG) is refused." }),
    model: ModelName,
    upscale_factor: T.Optional(T.Integer({ minimum: 1, maximum: 8, description: "Optional scale factor; an ESRGAN model upscales by its native scale only (4 for `RealESRGAN-x4plus`), and another factor is refused." })),
  }),
  response: ImagesResponse,
  errors: [
    E.notUpscaler,
    E.cannotUpscale,
    E.upscalerNotFound,
    E.undecodableImage,
    ...imageErrors,
    E.upscaleFailed,
  ],
});

export type ImagesResponse = Static<typeof ImagesResponse>;
export type ImageGenerationRequest = Static<typeof generations.body>;
export type UpscaleRequest = Static<typeof upscale.body>;
