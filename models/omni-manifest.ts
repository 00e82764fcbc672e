// A published collection.omni (the catalog's LMX-Omni-* and RPG-HaloTales-*): its repository holds
// `<RepoName>.json`, the collection as `lemonade export` writes it — recipe, the ordered component
// names and each component's definition. The catalog names only the repository; the components are
// what that file says once it is downloaded.
import { ApiError } from "../lib/api-error.ts";
import { E } from "../spec/errors.ts";
import { parseCheckpoint } from "./hf-cache.ts";
import type { Json } from "../lib/json.ts";

export interface OmniSpec {
  components: string[];
  /** Definitions for components not registered here (model_name or id, plus registration fields). */
  models: Json[];
  systemPrompt?: string;
}

/** Manifests are small; a bigger file under that name is not one. */
export const MAX_MANIFEST_BYTES = 5 * 1024 * 1024;

/** The checkpoint of a collection's manifest: the repository's `<RepoName>.json`. */
export function manifestCheckpoint(checkpoint: string): string {
  const { repo, variant } = parseCheckpoint(checkpoint);
  return `${repo}:${variant ?? `${repo.split("/").pop()}.json`}`;
}

/** Reads a collection manifest; a file that is not one is a clear error, not an empty collection. */
export function parseOmniManifest(text: string, checkpoint: string): OmniSpec {
  let doc: Json | undefined;
  try {
    doc = JSON.parse(text);
  } catch {}
  const components = doc?.components;
  const valid =
    doc !== null && typeof doc === "object" && doc.recipe === "collection.omni" &&
    Array.isArray(components) && components.length > 0 && components.every((c) => typeof c === "string" && c) &&
    Array.isArray(doc.models);
  if (!valid) {
    throw ApiError.of(
      E.invalidArgument,
      `${parseCheckpoint(checkpoint).variant} in ${parseCheckpoint(checkpoint).repo} is not a Lemonade Omni collection manifest (expected an exported collection JSON with recipe "collection.omni", a non-empty 'components' array and a 'models' array)`,
    );
  }
  return { components, models: doc!.models as Json[], ...(typeof doc!.system_prompt === "string" ? { systemPrompt: doc!.system_prompt } : {}) };
}
