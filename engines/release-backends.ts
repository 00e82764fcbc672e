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

/** The ROCm targets llama.cpp's ROCm releases are built for, as Lemonade lists them: families
 * (`gfx110X`) and single ISAs (the CDNA ones, which ship individually). */
const ROCM_TARGETS = ["gfx103X", "gfx110X", "gfx1150", "gfx1151", "gfx1152", "gfx120X", "gfx908", "gfx90a", "gfx942", "gfx950"];

/** Whether a backend runs on an AMD GPU of this ROCm family: ROCm on the families its releases
 * are built for, Vulkan on any; the others need no AMD GPU's ISA (CUDA, Metal, the CPU). */
export function backendSupportsArch(backend: string, family: string): boolean {
  if (backend === "rocm") return ROCM_TARGETS.includes(family);
  return backend === "vulkan";
}

/** The ROCm ISA of this machine's first AMD GPU that has one (`gfx1100`). */
export const rocmIsa = (d: Devices): string | undefined => d.gpus.find((g) => g.vendor === "amd" && g.gfx)?.gfx;

/** The release page a backend's pinned build comes from. */
export const releaseUrl = (repo: string, tag: string) => `https://github.com/${repo}/releases/tag/${tag}`;

/** `release_url` for a backend's status: the page of the release it is pinned to, when it has one. */
export function pinnedReleaseUrl(cacheDir: string, recipe: string, backend: string): { release_url?: string } {
  const versions = backendVersions(cacheDir);
  const tag = (versions[recipe] as Record<string, string> | undefined)?.[backend];
  const repo = versions.releases?.[recipe]?.backends?.[backend]?.repo;
  return repo && tag ? { release_url: releaseUrl(repo, tag) } : {};
}

/** A release backend's state here. */
export function releaseBackendStatus(recipe: string, backend: string, env: EngineEnv): BackendStatus {
  const d = devicesOf(env);
  const gpu = backend !== "cpu";
  const deviceNames = gpu ? d.gpus.map((g) => g.name) : ["cpu"];
  const installed = installedRelease(env.cacheDir, recipe, backend);
  const tag = (backendVersions(env.cacheDir)[recipe] as Record<string, string> | undefined)?.[backend];
  // The release page is known whatever this machine has: Lemonade reports it for every backend.
  const page = pinnedReleaseUrl(env.cacheDir, recipe, backend);
  if (installed) return { devices: deviceNames, state: "installed", message: "", action: "", version: tag, ...page };
  const problem = hardwareProblem(backend, d);
  if (problem) return { devices: [], state: "unsupported", message: problem, action: "", ...page };
  try {
    const pin = releaseAsset(backendVersions(env.cacheDir), recipe, backend, d.platform, rocmIsa(d));
    return {
      devices: deviceNames,
      state: "installable",
      message: `downloads ${pin.asset} from ${pin.repo} ${pin.tag}, checked against ${pin.pinned ? "its pinned sha256" : "the sha256 digest GitHub publishes"}`,
      action: `lemonade backends install ${recipe}:${backend}`,
      version: pin.tag,
      release_url: releaseUrl(pin.repo, pin.tag),
    };
  } catch (err) {
    if (err instanceof ReleaseUnavailable) return { devices: [], state: "unsupported", message: err.message, action: "", ...page };
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
