// The sd-cpp recipe: stable-diffusion.cpp's `sd-server` for generation and edits, and its
// `sd-cli` for ESRGAN upscaling (sd-server has no upscale route in the release Lemonade pins,
// master-820-de298c2). The command lines are the real server's: `--listen-port`, then `-m` for a
// single-file checkpoint, or `--diffusion-model` + `--llm` + `--vae` for the multi-component
// entries (Flux, Qwen-Image, Z-Image), `--vae-tiling --diffusion-fa` on Vulkan, and the user's
// `sdcpp_args`, which may hold only the flags users need (ALLOWED_SDCPP_FLAGS). Neither sd.cpp's source nor a release can
// be fetched on these machines, so `cpu` says so; `system` runs the binaries found on PATH. The
// sd-cli upscaler is a recipe of its own (one-shot), beside the server recipe.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { splitArgs } from "../lib/args.ts";
import { pinnedReleaseUrl } from "./release-backends.ts";
import { checkAllowedArgs, configuredBinary, configuredBinaryStatus, EngineConfigError, onPath, recipeStatus, systemBinaryStatus, unsupportedBackend, type AllowedFlags, type EngineEnv, type LaunchPlan, type OneShotRecipe, type Recipe } from "./engine.ts";

export const SD_SERVER = "sd-server";
export const SD_CLI = "sd-cli";

/** Flags the server sets itself; users may not pass them in `sdcpp_args`. */
export const RESERVED_SDCPP_FLAGS = ["-m", "--model", "--diffusion-model", "--llm", "--qwen2vl", "--vae", "-v", "--verbose", "--listen-port", "-l", "--listen-ip"];

/** The sd-server flags users may pass in `sdcpp_args`, from its `--help` at master-820-de298c2
 * (true: it takes a value). Only sampling defaults, threads, memory placement and precision:
 * everything else reads files the server does not choose (`--clip_l`, `--t5xxl`, `--taesd`,
 * `--lora-model-dir`, `--upscale-model`, ...), reaches the network (`--rpc-servers`), serves other
 * content at the engine's `/` (`--serve-html-path`), or exits before it is ready (`-h`). */
export const ALLOWED_SDCPP_FLAGS: AllowedFlags = {
  // Sampling: the server's defaults, which each request's own values override.
  "--sampling-method": true, "--scheduler": true, "--steps": true, "--cfg-scale": true, "--img-cfg-scale": true,
  "--guidance": true, "--eta": true, "--flow-shift": true, "--timestep-shift": true, "--clip-skip": true,
  "--strength": true, "--slg-scale": true, "--skip-layers": true, "--skip-layer-start": true, "--skip-layer-end": true,
  "--sigmas": true, "--prediction": true, "--rng": true, "--sampler-rng": true, "--cache-mode": true,
  "--cache-option": true, "--scm-mask": true, "--scm-policy": true,
  // Threads.
  "-t": true, "--threads": true,
  // Memory.
  "--offload-to-cpu": false, "--mmap": false, "--vae-tiling": false, "--vae-tile-size": true, "--vae-relative-tile-size": true,
  "--vae-tile-overlap": true, "--clip-on-cpu": false, "--vae-on-cpu": false, "--control-net-cpu": false, "--max-vram": true,
  "--stream-layers": false, "--eager-load": false, "--auto-fit": false, "--backend": true, "--params-backend": true, "--split-mode": true,
  // Precision and kernels.
  "--type": true, "--tensor-type-rules": true, "--fa": false, "--diffusion-fa": false, "--diffusion-conv-direct": false,
  "--vae-conv-direct": false, "--force-sdxl-vae-conv-scale": false, "--lora-apply-mode": true, "--vae-format": true,
  "--circular": false, "--circularx": false, "--circulary": false, "--color": false,
};

const checkUserArgs = (args: string[]) => checkAllowedArgs("sdcpp_args", ALLOWED_SDCPP_FLAGS, RESERVED_SDCPP_FLAGS, args, "sampling, threads, memory and precision");

const BACKENDS = ["auto", "cpu", "system", "vulkan", "cuda", "rocm", "metal"];

/** The backend a load runs on: `auto` is the first usable one (a binary config.json names, else
 * sd-server on PATH). */
function resolveBackend(backend: string, env: EngineEnv): string {
  if (backend !== "auto") return backend;
  const configured = Object.keys(env.binaries?.sdcpp ?? {})[0];
  if (configured) return configured;
  return onPath(SD_SERVER, env) ? "system" : "cpu";
}

/** A binary for a backend: the one `sdcpp.<backend>_bin` names (sd-cli beside it), else `system`
 * (PATH); no release can be installed on this machine. */
function locateBinary(binary: string, backend: string, env: EngineEnv): string {
  const resolved = resolveBackend(backend, env);
  const own = configuredBinary(env, "sdcpp", resolved);
  if (own) return binary === SD_SERVER ? own : join(dirname(own), binary);
  if (resolved === "system") {
    const found = onPath(binary, env);
    if (!found) throw new EngineConfigError(`sd-cpp backend 'system' needs ${binary} on PATH`);
    return found;
  }
  throw new EngineConfigError(`sd-cpp backend '${resolved}' is not available here: stable-diffusion.cpp cannot be obtained on this machine; put ${binary} on PATH and use 'system'`);
}

/** sd-cli, for upscaling with an ESRGAN model. */
export function locateSdCli(backend: string, env: EngineEnv): string {
  return locateBinary(SD_CLI, backend, env);
}

/** The argv that upscales `input` into `output` with an ESRGAN model, as the real server runs it. */
export function upscaleArgv(binary: string, model: string, input: string, output: string): string[] {
  return [binary, "-M", "upscale", "--upscale-model", model, "-i", input, "-o", output];
}

export const sdCpp: Recipe = {
  name: "sd-cpp",
  displayName: "stable-diffusion.cpp",
  backendOption: "sdcpp_backend",
  status: (env) =>
    recipeStatus({
      cpu: { ...unsupportedBackend("stable-diffusion.cpp cannot be obtained on this machine (no release, no source build)"), ...pinnedReleaseUrl(env.cacheDir, "sd-cpp", "cpu") },
      system: systemBinaryStatus(SD_SERVER, env),
      ...Object.fromEntries(Object.entries(env.binaries?.sdcpp ?? {}).map(([backend, path]) => [backend, configuredBinaryStatus(path)])),
    }),

  checkOptions(options) {
    if (typeof options.sdcpp_args === "string") checkUserArgs(splitArgs(options.sdcpp_args));
    if (typeof options.sdcpp_backend === "string" && !BACKENDS.includes(options.sdcpp_backend)) {
      throw new EngineConfigError(`sd-cpp backend '${options.sdcpp_backend}' is unknown (use ${BACKENDS.join(", ")})`);
    }
  },

  resolveBackend,
  locate: (backend, env) => locateBinary(SD_SERVER, backend, env),

  plan(binary, input): LaunchPlan {
    const userArgs = splitArgs(String(input.options.sdcpp_args ?? ""));
    checkUserArgs(userArgs);
    const { main, text_encoder: llm, vae } = input.files;
    const model = llm && vae ? ["--diffusion-model", main!, "--llm", llm, "--vae", vae] : ["-m", main!];
    const gpu = input.options.sdcpp_backend === "vulkan" ? ["--vae-tiling", "--diffusion-fa"] : [];
    return {
      argv: (port) => [binary, "--listen-port", String(port), ...model, ...gpu, ...userArgs],
      // sd-server loads the model before it listens, and has no health route: `/` answering is ready.
      healthPath: "/",
      readyTimeoutMs: 600_000,
      // One generation at a time: sd-server holds a lock around the model.
      slots: 1,
    };
  },
};

/** The real server gives sd-cli five minutes per image. */
const UPSCALE_TIMEOUT_MS = 300_000;

/** The sd-cli recipe, of the one-shot kind: ESRGAN upscaling for sd-cpp models, one process per
 * image (sd-server has no upscale route), on the backend the model's `sdcpp_backend` picks. */
export const sdCli: OneShotRecipe = {
  kind: "one-shot",
  name: SD_CLI,
  displayName: "stable-diffusion.cpp sd-cli",
  async run({ modelPath, options, input: image }, env, signal) {
    const binary = locateSdCli(String(options.sdcpp_backend ?? "auto"), env);
    const dir = mkdtempSync(join(tmpdir(), "lemonade-upscale-"));
    try {
      const input = join(dir, "input.png");
      const output = join(dir, "output.png");
      writeFileSync(input, image);
      const child = Bun.spawn(upscaleArgv(binary, modelPath, input, output), { stdout: "pipe", stderr: "pipe", timeout: UPSCALE_TIMEOUT_MS, signal });
      const [err, code] = await Promise.all([new Response(child.stderr).text(), child.exited, new Response(child.stdout).arrayBuffer()]);
      if (code !== 0) throw new Error(`sd-cli exited with ${code}: ${err.trim().split("\n").slice(-3).join(" ")}`);
      return new Uint8Array(readFileSync(output));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
