// The web app's files (web/): bundled by Bun's bundler from the sources on first use when the
// server runs from a checkout, or embedded in the single executable by scripts/build.ts, which
// registers them here before the CLI starts.
import { join } from "node:path";

export type WebAssets = Record<string, string>;

let embedded: WebAssets | undefined;
let built: Promise<WebAssets> | undefined;

/** Called by the compiled executable's entry with the bundle it carries. */
export function registerEmbeddedWebAssets(assets: WebAssets): void {
  embedded = assets;
}

/** Bundles web/main.tsx (and its CSS) into `app.js` and `app.css`. */
export async function bundleWebApp(): Promise<WebAssets> {
  const result = await Bun.build({
    entrypoints: [join(import.meta.dir, "..", "web", "main.tsx")],
    target: "browser",
    minify: true,
    naming: { entry: "app.[ext]", asset: "[name].[ext]" },
    define: { "process.env.NODE_ENV": '"production"' },
  });
  if (!result.success) throw new Error(`The web app does not build: ${result.logs.map(String).join("; ")}`);
  const assets: WebAssets = {};
  for (const output of result.outputs) assets[output.path.replace(/^.*\//, "")] = await output.text();
  return assets;
}

export function webAssets(): Promise<WebAssets> {
  if (embedded) return Promise.resolve(embedded);
  built ??= bundleWebApp().catch((err) => {
    built = undefined;
    throw err;
  });
  return built;
}
