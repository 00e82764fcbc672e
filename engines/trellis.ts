// The trellis recipe: TRELLIS.2's trellis-server (pwilkin/trellis.cpp), an image to a textured
// glTF-binary mesh. As the real server runs it: `--models <folder> --host 127.0.0.1 --port N --res
// 512` and the user's `trellis_args`; GET /health is ready; POST /generate takes the image and
// the settings as multipart fields and answers the mesh.
import { sniffImage } from "../lib/images.ts";
import type { Json } from "../lib/json.ts";
import { engineErrorText, modelFolder, userBinaryRecipe } from "./user-binary.ts";
import type { Generated } from "./engine.ts";

export const TRELLIS_SERVER = "trellis-server";

/** Flags the server sets itself; users may not pass them in `trellis_args`. */
export const RESERVED_TRELLIS_FLAGS = ["-m", "--models", "--host", "--port", "--res"];

/** The image's base64 payload, a `data:` URL's prefix removed. */
const payload = (image: string) => (image.startsWith("data:") ? image.slice(image.indexOf(",") + 1) : image);

async function generateMesh(url: string, request: Json, signal: AbortSignal): Promise<Generated> {
  const image = Uint8Array.from(Buffer.from(payload(String(request.image)), "base64"));
  const kind = sniffImage(image);
  if (!kind) return { status: 400, error: "unsupported image format: expected PNG, JPEG, BMP, or GIF" };
  const form = new FormData();
  form.set("image", new Blob([image], { type: kind.mime }), `input.${kind.extension}`);
  for (const field of ["seed", "resolution", "bg_removal", "uv"]) {
    if (request[field] !== undefined) form.set(field, String(request[field]));
  }
  const res = await fetch(`${url}/generate`, { method: "POST", body: form, signal });
  if (!res.ok) return { status: 500, error: `generation failed (HTTP ${res.status}): ${await engineErrorText(res, "generation")}` };
  return { bytes: new Uint8Array(await res.arrayBuffer()) };
}

export const trellis = userBinaryRecipe({
  name: "trellis",
  displayName: "TRELLIS.2",
  section: "trellis",
  binary: TRELLIS_SERVER,
  backendOption: "trellis_backend",
  args: { option: "trellis_args", reserved: RESERVED_TRELLIS_FLAGS },
  argv: (binary, port, input) => [binary, "--models", modelFolder(input.files.main!), "--host", "127.0.0.1", "--port", String(port), "--res", "512"],
  readyTimeoutMs: 600_000,
  generate: { "mesh.generate": generateMesh },
});
