// Host facts for /v1/system-info and /v1/system-stats, read from the OS on each call.
import { cpus, freemem, release, totalmem, type, arch } from "node:os";
import { mkdirSync, readFileSync, statfsSync } from "node:fs";
import type { Devices } from "../lib/devices.ts";
import type { Clock } from "../lib/clock.ts";

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

/** The host's CPU time so far, summed over its CPUs (ms): how much of it was idle. */
export interface CpuTimes {
  idle: number;
  total: number;
}

function cpuTimes(): CpuTimes {
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

/** A CPU share over less time than this is mostly the kernel's tick (10 ms) rounding. */
const MIN_WINDOW_MS = 100;

/** One reader's view of the host: its CPU use is the busy share since that reader's previous
 * read. Each reader (/metrics, /v1/system-stats, the jobs' system_stats op) has its own, so one
 * client polling often does not shrink the window another's figure covers. A read sooner than
 * MIN_WINDOW_MS after the last answers the last figure and leaves the window open; the first
 * read, that soon after the reader was made, waits for the rest of it. */
export class HostStats {
  private last: CpuTimes;
  private lastAt: number;
  private figure: number | null | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly sample: () => CpuTimes = cpuTimes,
  ) {
    this.last = sample();
    this.lastAt = clock.now();
  }

  async read() {
    return {
      cpu_percent: await this.cpu(),
      memory_gb: Math.round((memoryInUse() / GiB) * 100) / 100,
      ...(await gpuUse()),
      npu_percent: null,
    };
  }

  private async cpu(): Promise<number | null> {
    const open = this.clock.now() - this.lastAt;
    if (open < MIN_WINDOW_MS) {
      if (this.figure !== undefined) return this.figure;
      await new Promise<void>((resolve) => this.clock.after(MIN_WINDOW_MS - open, resolve));
    }
    const now = this.sample();
    const total = now.total - this.last.total;
    this.figure = total > 0 ? Math.round(((total - (now.idle - this.last.idle)) / total) * 1000) / 10 : null;
    this.last = now;
    this.lastAt = this.clock.now();
    return this.figure;
  }
}
