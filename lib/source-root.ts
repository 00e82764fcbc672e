// The checkout the server's sources are in. Run from them, it is this module's parent folder; run
// from `npm start`'s bundle (scripts/build.ts --start) every module's import.meta.dir is the
// bundle's folder, so the bundle's entry sets the checkout it was built from before the CLI runs.
// What the server starts or reads as separate files (engines/onnxruntime-server.ts, the web app's
// sources) is found from here.
import { join } from "node:path";

let root = join(import.meta.dir, "..");

export const sourceRoot = (): string => root;

/** Called by the bundle's entry, first. */
export function setSourceRoot(dir: string): void {
  root = dir;
}
