// Ollama-compatible endpoints (ollama.md). Root-level `/api/*` routes with `{"error": "..."}` bodies.
import { Type as T } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { E } from "./errors.ts";

/** The Ollama version reported to clients: recent enough for their version checks. */
export const OLLAMA_COMPAT_VERSION = "0.16.1";

export const version = endpoint({
  id: "ollama.version",
  method: "GET",
  path: "/api/version",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "Report the Ollama version",
  availability: "fully_available",
  description:
    "Reports an Ollama version recent enough for Ollama clients' version checks. [`GET /v1/health`](./lemonade.md#get-v1health) reports Lemonade's own version.",
  response: T.Object({ version: T.String({ description: "The Ollama version Lemonade reports to clients." }) }),
  example: { response: `{"version": "${OLLAMA_COMPAT_VERSION}"}` },
});

const Details = T.Object(
  {
    parent_model: T.Literal("", { description: "Always empty" }),
    format: T.Literal("gguf", { description: "Always `gguf`" }),
    family: T.String({ description: "The model's recipe, e.g. `llamacpp`" }),
    families: T.Array(T.String(), { description: "A list holding only `family`" }),
    parameter_size: T.String({ description: "From the model name, e.g. `0.6B`; empty when the name has none" }),
    quantization_level: T.String({ description: "From the checkpoint, e.g. `Q4_0`; empty when the checkpoint has none" }),
  },
  { description: "Inferred from the model name, recipe and checkpoint" },
);

const ZERO_DIGEST = "sha256:" + "0".repeat(64);

export const tags = endpoint({
  id: "ollama.tags",
  method: "GET",
  path: "/api/tags",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "List downloaded models",
  availability: "fully_available",
  description: "Lists the downloaded models in Ollama's format.",
  response: T.Object({
    models: T.Array(
      T.Object({
        name: T.String({ description: "Lemonade model name with a `:latest` tag" }),
        model: T.String({ description: "Same as `name`" }),
        modified_at: T.String({ description: "Always `2024-01-01T00:00:00Z`" }),
        size: T.Integer({ description: "Size in bytes: the files on disk, else the registry's estimate" }),
        digest: T.String({ description: "Always an all-zero sha256" }),
        details: Details,
      }),
      { description: "The downloaded models" },
    ),
  }),
  errors: [E.internal],
  example: {
    response: `{"models": [{"name": "Qwen3-0.6B-GGUF:latest", "model": "Qwen3-0.6B-GGUF:latest", "modified_at": "2024-01-01T00:00:00Z", "size": 382156480, "digest": "${ZERO_DIGEST}", "details": {"parent_model": "", "format": "gguf", "family": "llamacpp", "families": ["llamacpp"], "parameter_size": "0.6B", "quantization_level": "Q4_0"}}]}`,
  },
});

export const ps = endpoint({
  id: "ollama.ps",
  method: "GET",
  path: "/api/ps",
  mount: "root",
  page: "ollama",
  errorStyle: "ollama",
  access: "api",
  summary: "List loaded models",
  availability: "fully_available",
  description: "Lists the loaded models in Ollama's format.",
  notes: "[`GET /v1/health`](./lemonade.md#get-v1health) reports the loaded models in full.",
  response: T.Object({
    models: T.Array(
      T.Object({
        name: T.String({ description: "Lemonade model name with a `:latest` tag" }),
        model: T.String({ description: "Same as `name`" }),
        size: T.Integer({ description: "Always `0`" }),
        digest: T.String({ description: "Always an all-zero sha256" }),
        details: Details,
        expires_at: T.String({ description: "Always `2099-01-01T00:00:00Z`" }),
        size_vram: T.Integer({ description: "Always `0`" }),
      }),
      { description: "The loaded models" },
    ),
  }),
  errors: [E.internal],
  example: {
    response: `{"models": [{"name": "Qwen3-0.6B-GGUF:latest", "model": "Qwen3-0.6B-GGUF:latest", "size": 0, "digest": "${ZERO_DIGEST}", "details": {"parent_model": "", "format": "gguf", "family": "llamacpp", "families": ["llamacpp"], "parameter_size": "0.6B", "quantization_level": "Q4_0"}, "expires_at": "2099-01-01T00:00:00Z", "size_vram": 0}]}`,
  },
});

export { ZERO_DIGEST };

const notSupported = (id: string, path: string, summary: string, description = "") =>
  endpoint({
    id,
    method: "POST",
    path,
    mount: "root",
    page: "ollama",
    errorStyle: "ollama",
    access: "api",
    summary,
    availability: "not_available",
    description,
    errors: [E.notSupportedOllama],
  });

export const create = notSupported(
  "ollama.create",
  "/api/create",
  "Create a model from a Modelfile",
  "Register a model with [`POST /v1/pull`](./lemonade.md#post-v1pull) instead.",
);
export const copy = notSupported("ollama.copy", "/api/copy", "Copy a model");
export const push = notSupported("ollama.push", "/api/push", "Push a model to a registry");
export const blobs = notSupported("ollama.blobs", "/api/blobs/:digest", "Upload a blob");
