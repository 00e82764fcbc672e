// A model error as Lemonade answers it on every route that loads the model a request names
// (/v1/load, and the inference routes that load on first use): a failed load says so first,
// naming the model as the request did, and every model error carries `requested_model`.
import { E, MODEL_ERROR_CODES } from "../spec/errors.ts";
import { ApiError } from "../lib/api-error.ts";
import { clip } from "../lib/scrub.ts";

const MODEL_ERRORS = new Set(MODEL_ERROR_CODES);

/** `err` for the model the request named `requested`; anything but a model error as it is. */
export function forRequestedModel(err: unknown, requested: string): unknown {
  if (!(err instanceof ApiError && MODEL_ERRORS.has(err.code))) return err;
  const name = clip(requested);
  // The other model errors keep their own words.
  const said = err.code === E.modelLoadError.code && !err.message.startsWith("Failed to load model '") ? err.reworded(`Failed to load model '${name}': ${err.extras.reason ?? err.message}`) : err;
  return said.with({ fields: { requested_model: name } });
}
