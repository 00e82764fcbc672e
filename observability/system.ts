// Host facts for /v1/system-info and /v1/system-stats, read from the OS on each call.
import { cpus, freemem, release, totalmem, type, arch } from "node:os";
import { mkdirSync, readFileSync, statfsSync } from "node:fs";
import type { Devices } from "../lib/devices.ts";

const GiB = 1024 ** 3;

function readText(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

function osVersion(): string {
  const pretty = readText("/etc/os-release")?.match(/^PRETTY_NAME="?([^"\n]+)"?/m)?.[1];
  return `${pretty ?? type()} (kernel ${release()}, ${arch()})`;
}

export function modelStorage(path: string) {
  mkdirSync(path, { recursive: true });
  const fs = statfsSync(path);
  const total = fs.blocks * fs.bsize;
  return { path, used_bytes: total - fs.bfree * fs.bsize, total_bytes: total, free_bytes: fs.bavail * fs.bsize };
}

const gb = (bytes?: number) => (bytes === undefined ? undefined : Math.round((bytes / GiB) * 10) / 10);

/** The host as `/v1/system-info` reports it, without the storage drive (what the archetype is
 * derived from, lib/archetype.ts). */
export function hostFacts(d: Devices) {
  return {
    "OS Version": osVersion(),
    Processor: d.cpu.name,
    "Physical Memory": `${(d.ramTotalBytes / GiB).toFixed(1)} GB`,
    devices: {
      cpu: { name: d.cpu.name, cores: d.cpu.cores, threads: d.cpu.threads, avx2: d.cpu.avx2, avx512: d.cpu.avx512, available: true },
      amd_gpu: d.gpus.filter((g) => g.vendor === "amd").map((g) => ({ name: g.name, vram_gb: gb(g.vramTotalBytes), vram_free_gb: gb(g.vramFreeBytes), gfx: g.gfx, available: true })),
      nvidia_gpu: d.gpus
        .filter((g) => g.vendor === "nvidia")
        .map((g) => ({ name: g.name, vram_gb: gb(g.vramTotalBytes), vram_free_gb: gb(g.vramFreeBytes), driver_version: g.driver, compute_capability: g.computeCapability, available: true })),
      // Reported as absent rather than left out, so a client can tell "no NPU" from "not asked".
      amd_npu: { name: "", available: false },
    },
  };
}

export function hostInfo(storagePath: string, d: Devices) {
  const { devices, ...host } = hostFacts(d);
  return { ...host, model_storage: modelStorage(storagePath), devices };
}

function cpuTimes() {
  let idle = 0;
  let total = 0;
  for (const c of cpus()) {
    idle += c.times.idle;
    total += c.times.user + c.times.nice + c.times.sys + c.times.irq + c.times.idle;
  }
  return { idle, total };
}

function memoryInUse(): number {
  const available = readText("/proc/meminfo")?.match(/^MemAvailable:\s+(\d+) kB/m)?.[1];
  const free = available ? Number(available) * 1024 : freemem();
  return totalmem() - free;
}

/** NVIDIA GPU use from `nvidia-smi` (bounded to 2 s), averaged over the GPUs; nulls without one.
 * Run as a child the event loop waits on, not a synchronous spawn: /metrics and
 * /v1/system-stats ask on every call, and a slow driver must not stall every other request. */
async function gpuUse(): Promise<{ gpu_percent: number | null; vram_gb: number | null }> {
  const none = { gpu_percent: null, vram_gb: null };
  if (!Bun.which("nvidia-smi")) return none;
  try {
    const child = Bun.spawn(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits"], { stdout: "pipe", stderr: "ignore", timeout: 2000 });
    const [text, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    const rows = code === 0 ? text.trim().split("\n").map((l) => l.split(",").map((v) => Number(v.trim()))) : [];
    const valid = rows.filter((row) => row.length === 2 && row.every(Number.isFinite));
    if (!valid.length) return none;
    return {
      gpu_percent: Math.round(valid.reduce((n, [u]) => n + u!, 0) / valid.length),
      vram_gb: Math.round((valid.reduce((n, [, m]) => n + m!, 0) / 1024) * 100) / 100,
    };
  } catch {
    return none;
  }
}

/** CPU use is the busy share since the previous call (or over a short sample on the first). */
export class HostStats {
  private last = cpuTimes();
  private lastAt = Date.now();

  async read() {
    if (Date.now() - this.lastAt < 50) {
      await Bun.sleep(100);
    }
    const now = cpuTimes();
    const total = now.total - this.last.total;
    const cpu = total > 0 ? Math.round(((total - (now.idle - this.last.idle)) / total) * 1000) / 10 : null;
    this.last = now;
    this.lastAt = Date.now();
    return {
      cpu_percent: cpu,
      memory_gb: Math.round((memoryInUse() / GiB) * 100) / 100,
      ...(await gpuUse()),
      npu_percent: null,
    };
  }
}
