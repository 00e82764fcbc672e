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
