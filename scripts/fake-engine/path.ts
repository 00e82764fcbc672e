// PATH for a server whose engines are the FAKE ones (the build's profile run, the benches): this
// folder first, then a folder with a `bun` for the FAKE engines' `#!/usr/bin/env bun` line: the Bun
// running now, whatever its file is called (npm's package installs it as `bun.exe`).
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";

export const FAKE_ENGINE_DIR = import.meta.dir;

/** The PATH to give the server: the FAKE engines, a `bun` made in `binDir`, then `path`. */
export function fakeEnginePath(binDir: string, path = process.env.PATH ?? ""): string {
  mkdirSync(binDir, { recursive: true });
  const bun = join(binDir, "bun");
  if (!existsSync(bun)) symlinkSync(process.execPath, bun);
  return `${FAKE_ENGINE_DIR}:${binDir}:${path}`;
}
