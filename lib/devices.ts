// The machine's compute devices: the CPU (and its vector extensions), RAM, NVIDIA GPUs through
// `nvidia-smi`, AMD and Intel GPUs through sysfs (`/sys/class/drm`, AMD's gfx target from the
// KFD topology), Vulkan (its loader library or `vulkaninfo`) and Apple Silicon. Every probe is
// bounded in time and a missing tool only means "not found". The parsers take the tools' text so
// that they are tested on recorded outputs.
import { cpus, freemem, totalmem } from "node:os";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface CpuInfo {
  name: string;
  cores: number;
  threads: number;
  avx2: boolean;
  avx512: boolean;
}

export interface GpuInfo {
  vendor: "nvidia" | "amd" | "intel" | "apple";
  name: string;
  vramTotalBytes?: number;
  vramFreeBytes?: number;
  driver?: string;
  computeCapability?: string;
  /** AMD: the ISA, e.g. `gfx1100`. */
  gfx?: string;
}

export interface Devices {
  platform: string;
  cpu: CpuInfo;
  ramTotalBytes: number;
  ramAvailableBytes: number;
  gpus: GpuInfo[];
  vulkan: boolean;
}

const MiB = 1024 * 1024;

function readText(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** `/proc/cpuinfo`: the model name, physical cores (distinct physical/core id pairs) and flags. */
export function parseCpuinfo(text: string, threads: number): CpuInfo {
  const cores = new Set<string>();
  let physical = "0";
  let name = "";
  let flags = "";
  for (const line of text.split("\n")) {
    const i = line.indexOf(":");
    if (i < 0) continue;
    const k = line.slice(0, i).trim();
    const v = line.slice(i + 1).trim();
    if (k === "model name" && !name) name = v;
    if (k === "flags" && !flags) flags = ` ${v} `;
    if (k === "physical id") physical = v;
    if (k === "core id") cores.add(`${physical}:${v}`);
  }
  return { name: name || "unknown", cores: cores.size || threads, threads, avx2: flags.includes(" avx2 "), avx512: flags.includes(" avx512f ") };
}

/** `nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version,compute_cap --format=csv,noheader,nounits`. */
export function parseNvidiaSmi(csv: string): GpuInfo[] {
  return csv
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .map((line) => {
      const [name, total, free, driver, cc] = line.split(",").map((s) => s.trim());
      const mib = (v?: string) => (v && /^\d+(\.\d+)?$/.test(v) ? Number(v) * MiB : undefined);
      return { vendor: "nvidia" as const, name: name ?? "NVIDIA GPU", vramTotalBytes: mib(total), vramFreeBytes: mib(free), driver, computeCapability: cc };
    });
}

/** AMD and Intel GPUs under a sysfs root (`/sys/class/drm`): `cardN/device/vendor` 0x1002 or
 * 0x8086; AMD's VRAM from `mem_info_vram_total`/`_used`; gfx targets from the KFD topology. */
export function readDrmGpus(drmRoot = "/sys/class/drm", kfdRoot = "/sys/class/kfd/kfd/topology/nodes"): GpuInfo[] {
  const gfx: string[] = [];
  for (const node of safeList(kfdRoot)) {
    const v = /gfx_target_version\s+(\d+)/.exec(readText(join(kfdRoot, node, "properties")) ?? "")?.[1];
    if (v && v !== "0") {
      const n = Number(v);
      gfx.push(`gfx${Math.floor(n / 10000)}${Math.floor((n / 100) % 100).toString(16)}${(n % 100).toString(16)}`);
    }
  }
  const out: GpuInfo[] = [];
  for (const card of safeList(drmRoot).filter((c) => /^card\d+$/.test(c)).sort()) {
    const dev = join(drmRoot, card, "device");
    const vendor = readText(join(dev, "vendor"))?.trim();
    if (vendor === "0x1002") {
      const num = (f: string) => {
        const t = readText(join(dev, f))?.trim();
        return t && /^\d+$/.test(t) ? Number(t) : undefined;
      };
      const total = num("mem_info_vram_total");
      const used = num("mem_info_vram_used");
      out.push({
        vendor: "amd",
        name: readText(join(dev, "product_name"))?.trim() || "AMD GPU",
        vramTotalBytes: total,
        vramFreeBytes: total !== undefined && used !== undefined ? total - used : undefined,
        gfx: gfx.shift(),
      });
    } else if (vendor === "0x8086") {
      out.push({ vendor: "intel", name: readText(join(dev, "product_name"))?.trim() || "Intel GPU" });
    }
  }
  return out;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

type Runner = (argv: string[]) => string | null;

/** A tool's output, or null when it is missing, fails or takes longer than 3 s. */
const runTool: Runner = (argv) => {
  if (!Bun.which(argv[0]!)) return null;
  try {
    const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "ignore", timeout: 3000 });
    return r.exitCode === 0 ? r.stdout.toString() : null;
  } catch {
    return null;
  }
};

const VULKAN_LOADERS = ["/usr/lib/x86_64-linux-gnu/libvulkan.so.1", "/usr/lib/aarch64-linux-gnu/libvulkan.so.1", "/usr/lib64/libvulkan.so.1", "/usr/lib/libvulkan.so.1"];

export function detectDevices(run: Runner = runTool): Devices {
  const threads = cpus().length;
  const cpu = parseCpuinfo(readText("/proc/cpuinfo") ?? `model name : ${cpus()[0]?.model ?? "unknown"}`, threads);
  const available = readText("/proc/meminfo")?.match(/^MemAvailable:\s+(\d+) kB/m)?.[1];
  const gpus: GpuInfo[] = [];
  const smi = run(["nvidia-smi", "--query-gpu=name,memory.total,memory.free,driver_version,compute_cap", "--format=csv,noheader,nounits"]);
  if (smi) gpus.push(...parseNvidiaSmi(smi));
  gpus.push(...readDrmGpus());
  if (process.platform === "darwin" && process.arch === "arm64") gpus.push({ vendor: "apple", name: cpu.name || "Apple Silicon" });
  const vulkan = VULKAN_LOADERS.some((p) => existsSync(p)) || run(["vulkaninfo", "--summary"]) !== null;
  return {
    platform: `${process.platform}-${process.arch}`,
    cpu,
    ramTotalBytes: totalmem(),
    ramAvailableBytes: available ? Number(available) * 1024 : freemem(),
    gpus,
    vulkan,
  };
}

let cached: Devices | undefined;

/** The devices, probed once per process (the hardware does not change under a running server). */
export function devices(): Devices {
  cached ??= detectDevices();
  return cached;
}

/** Memory available now (MemAvailable), which already leaves out what running engines use. */
export function availableMemoryBytes(): number {
  const available = readText("/proc/meminfo")?.match(/^MemAvailable:\s+(\d+) kB/m)?.[1];
  return available ? Number(available) * 1024 : freemem();
}

/** `nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits`: each GPU's
 * share of memory in use (0 to 1). */
export function parseNvidiaMemoryUse(csv: string): number[] {
  return csv
    .split("\n")
    .map((line) => line.split(",").map((s) => Number(s.trim())))
    .filter(([used, total]) => Number.isFinite(used) && Number.isFinite(total) && used! >= 0 && total! > 0)
    .map(([used, total]) => Math.min(1, used! / total!));
}

type AsyncRunner = (argv: string[]) => Promise<string | null>;

/** A tool's output, or null when it is missing, fails or takes longer than 3 s; the event loop
 * goes on while it runs (the pressure monitor samples every few seconds). */
const runToolAsync: AsyncRunner = async (argv) => {
  if (!Bun.which(argv[0]!)) return null;
  try {
    const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "ignore", timeout: 3000 });
    const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    return code === 0 ? out : null;
  } catch {
    return null;
  }
};

/** The share of GPU memory in use on the fullest GPU (NVIDIA through `nvidia-smi`, AMD through
 * sysfs), as the multi-model guide's VRAM monitor reads it; undefined when no GPU reports it. */
export async function gpuMemoryUse(run: AsyncRunner = runToolAsync, drmRoot?: string): Promise<number | undefined> {
  const shares: number[] = [];
  const smi = await run(["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"]);
  if (smi) shares.push(...parseNvidiaMemoryUse(smi));
  for (const gpu of readDrmGpus(drmRoot)) {
    if (gpu.vramTotalBytes && gpu.vramFreeBytes !== undefined) shares.push(Math.min(1, (gpu.vramTotalBytes - gpu.vramFreeBytes) / gpu.vramTotalBytes));
  }
  return shares.length ? Math.max(...shares) : undefined;
}
