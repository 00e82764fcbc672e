// The onnxruntime recipe: encoder text classifiers for /v1/classify. Its one backend, `cpu`
// (Lemonade's `builtin`), is onnxruntime-node from npm, run in an engine process of its own
// (engines/onnxruntime-server.ts) by the Bun that runs this server. The directory's contract
// is checked first (checkFiles), so an unsupported architecture is refused before anything starts.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { EngineConfigError, recipeStatus, unsupportedBackend, type BackendStatus, type Recipe } from "./engine.ts";
import { sourceRoot } from "../lib/source-root.ts";
import { ContractError, readContract } from "./onnxruntime-contract.ts";

const serverScript = () => join(sourceRoot(), "engines", "onnxruntime-server.ts");

/** onnxruntime-node's version when its package (and so its prebuilt runtime) is installed beside the server. */
function runtimeVersion(): string | null {
  try {
    const require = createRequire(join(sourceRoot(), "package.json"));
    return String(require("onnxruntime-node/package.json").version);
  } catch {
    return null;
  }
}

function cpuStatus(): BackendStatus {
  const version = runtimeVersion();
  if (!version || !existsSync(serverScript())) {
    // The single executable cannot carry onnxruntime-node's native library.
    return unsupportedBackend("onnxruntime-node is not installed beside the server: run it from its source folder (npm ci; bun cli/main.ts serve)");
  }
  return { devices: ["cpu"], state: "installed", message: "", action: "", version: `onnxruntime-node ${version}` };
}

/** The model's main file is its directory's config.json (spec/recipes.ts repositoryIndex). */
const modelDir = (files: Record<string, string>) => dirname(files.main!);

export const onnxruntime: Recipe = {
  name: "onnxruntime",
  displayName: "onnxruntime",
  status: () => recipeStatus({ cpu: cpuStatus() }),
  checkOptions() {},
  resolveBackend: () => "cpu",
  locate() {
    const status = cpuStatus();
    if (status.state !== "installed") throw new EngineConfigError(status.message);
    return serverScript();
  },
  checkFiles(files) {
    try {
      readContract(modelDir(files));
    } catch (err) {
      if (err instanceof ContractError) throw new EngineConfigError(err.message);
      throw err;
    }
  },
  plan(script, input) {
    const dir = modelDir(input.files);
    return {
      argv: (port) => [process.execPath, script, "--model", dir, "--host", "127.0.0.1", "--port", String(port)],
      healthPath: "/health",
      readyTimeoutMs: 60_000,
      // One session, one inference at a time.
      slots: 1,
    };
  },
};
