// Backends that come as prebuilt releases (engines/release-install.ts): which ones this machine
// can run (the GPU each needs, the OS), their states for /v1/system-info, where their binaries
// are, and which one `auto` picks: CUDA on NVIDIA, ROCm on AMD, Vulkan on another GPU, Metal on
// Apple, else none (the recipe's CPU choice).
import { devices as probeDevices, type Devices } from "../lib/devices.ts";
import { EngineConfigError, NotInstalledError, type BackendStatus, type EngineEnv } from "./engine.ts";
import { backendVersions, installedRelease, releaseAsset, ReleaseUnavailable } from "./release-install.ts";

export const GPU_BACKENDS = ["cuda", "rocm", "vulkan", "metal"] as const;

const devicesOf = (env: EngineEnv): Devices => env.devices ?? probeDevices();

/** Why this machine cannot run a backend, or null when its hardware and OS are there. */
export function hardwareProblem(backend: string, d: Devices): string | null {
  const os = d.platform.split("-")[0];
  const has = (vendor: string) => d.gpus.some((g) => g.vendor === vendor);
  switch (backend) {
    case "cuda":
      if (os !== "linux" && os !== "win32") return "CUDA builds are for Linux and Windows";
      return has("nvidia") ? null : "no NVIDIA GPU found (nvidia-smi is missing or lists none)";
    case "rocm":
      if (os !== "linux" && os !== "win32") return "ROCm builds are for Linux and Windows";
      return d.gpus.some((g) => g.vendor === "amd" && g.gfx) ? null : "no ROCm-capable AMD GPU found (no gfx target in /sys/class/kfd)";
    case "vulkan":
      if (!d.gpus.some((g) => g.vendor !== "apple")) return "no GPU found for Vulkan";
      return d.vulkan ? null : "the Vulkan loader (libvulkan.so.1) is not installed: apt-get install libvulkan1";
    case "metal":
      return d.platform === "darwin-arm64" ? null : "Metal needs an Apple Silicon Mac";
    default:
      return null;
  }
}

/** The release page a backend's pinned build comes from. */
export const releaseUrl = (repo: string, tag: string) => `https://github.com/${repo}/releases/tag/${tag}`;

/** A release backend's state here. */
export function releaseBackendStatus(recipe: string, backend: string, env: EngineEnv): BackendStatus {
  const d = devicesOf(env);
  const gpu = backend !== "cpu";
  const deviceNames = gpu ? d.gpus.map((g) => g.name) : ["cpu"];
  const installed = installedRelease(env.cacheDir, recipe, backend);
  const tag = (backendVersions(env.cacheDir)[recipe] as Record<string, string> | undefined)?.[backend];
  const repo = backendVersions(env.cacheDir).releases?.[recipe]?.backends?.[backend]?.repo;
  if (installed) return { devices: deviceNames, state: "installed", message: "", action: "", version: tag, ...(repo && tag ? { release_url: releaseUrl(repo, tag) } : {}) };
  const problem = hardwareProblem(backend, d);
  if (problem) return { devices: [], state: "unsupported", message: problem, action: "" };
  try {
    const pin = releaseAsset(backendVersions(env.cacheDir), recipe, backend, d.platform);
    return {
      devices: deviceNames,
      state: "installable",
      message: `downloads ${pin.asset} from ${pin.repo} ${pin.tag}, checked against ${pin.pinned ? "its pinned sha256" : "the sha256 digest GitHub publishes"}`,
      action: `lemonade backends install ${recipe}:${backend}`,
      version: pin.tag,
      release_url: releaseUrl(pin.repo, pin.tag),
    };
  } catch (err) {
    if (err instanceof ReleaseUnavailable) return { devices: [], state: "unsupported", message: err.message, action: "" };
    throw err;
  }
}

/** The GPU backends a recipe's releases offer, with their states. */
export function gpuBackendStatuses(recipe: string, env: EngineEnv): Record<string, BackendStatus> {
  const offered = Object.keys(backendVersions(env.cacheDir).releases?.[recipe]?.backends ?? {}).filter((b) => (GPU_BACKENDS as readonly string[]).includes(b));
  return Object.fromEntries(offered.map((b) => [b, releaseBackendStatus(recipe, b, env)]));
}

/** `auto`'s GPU choice: the first of CUDA, ROCm, Vulkan, Metal that is installed or installable here. */
export function bestGpuBackend(recipe: string, env: EngineEnv): string | null {
  const states = gpuBackendStatuses(recipe, env);
  for (const b of GPU_BACKENDS) if (states[b] && states[b]!.state !== "unsupported") return b;
  return null;
}

/** A GPU backend's binary: installed, or NotInstalledError when it can be installed, or why not. */
export function locateGpuRelease(recipe: string, backend: string, env: EngineEnv): string {
  const installed = installedRelease(env.cacheDir, recipe, backend);
  if (installed) return installed;
  const status = releaseBackendStatus(recipe, backend, env);
  if (status.state === "installable") throw new NotInstalledError(`${recipe}:${backend} is not installed: run \`lemonade backends install ${recipe}:${backend}\``);
  throw new EngineConfigError(`${recipe} backend '${backend}' cannot run here: ${status.message}`);
}
