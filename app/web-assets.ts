// The web app's files (web/): bundled by Bun's bundler from the sources on first use when the
// server runs from a checkout, or embedded as files in the single executable by scripts/build.ts,
// which registers their paths here before the CLI starts. Embedded files are read from the
// executable per request rather than held as strings: the bundle is most of a megabyte that a
// server nobody opens the web app of would otherwise keep resident.
import { join, resolve } from "node:path";
import { sourceRoot } from "../lib/source-root.ts";

/** The bundled files, name to contents. */
export type WebAssets = Record<string, string>;

/** A file the bundle made: its name and its bytes. */
export interface WebAssetFile {
  name: string;
  bytes: Uint8Array;
}

let embedded: Record<string, string> | undefined;
let built: Promise<WebAssets> | undefined;

/** Called by the compiled executable's entry with each file's name and its path inside the executable. */
export function registerEmbeddedWebAssets(paths: Record<string, string>): void {
  embedded = paths;
}

/** Bundles web/main.tsx (and its CSS) into `app.js` and `app.css`; `inputs` are the files it read
 * (absolute paths), which say when a bundle built from them is out of date. */
export async function bundleWebAppFiles(): Promise<{ files: WebAssetFile[]; inputs: string[] }> {
  const result = await Bun.build({
    entrypoints: [join(sourceRoot(), "web", "main.tsx")],
    target: "browser",
    minify: true,
    metafile: true,
    naming: { entry: "app.[ext]", asset: "[name].[ext]" },
    define: { "process.env.NODE_ENV": '"production"' },
  });
  if (!result.success) throw new Error(`The web app does not build: ${result.logs.map(String).join("; ")}`);
  const files = await Promise.all(result.outputs.map(async (output) => ({ name: output.path.replace(/^.*\//, ""), bytes: new Uint8Array(await output.arrayBuffer()) })));
  return { files, inputs: Object.keys(result.metafile?.inputs ?? {}).map((file) => resolve(file)) };
}

async function bundleWebApp(): Promise<WebAssets> {
  const decoder = new TextDecoder();
  return Object.fromEntries((await bundleWebAppFiles()).files.map((f) => [f.name, decoder.decode(f.bytes)]));
}

/** One of the web app's files by name (`app.js`), or undefined when the bundle has none so named. */
export async function webAsset(file: string): Promise<string | Blob | undefined> {
  if (embedded) return Object.hasOwn(embedded, file) ? Bun.file(embedded[file]!) : undefined;
  built ??= bundleWebApp().catch((err) => {
    built = undefined;
    throw err;
  });
  const all = await built;
  return Object.hasOwn(all, file) ? all[file] : undefined;
}
