// The machine's hardware archetype (auto-tune phase 1): a coarse class of machines that get the
// same tuning recommendations, derived only from a `/v1/system-info` snapshot so that it is pure,
// tested on recorded snapshots, and stable across reboots (totals and names, never free memory).
// GPU family/architecture, a VRAM (or, for unified memory, RAM) bucket, a memory-bandwidth tier
// where the chip's figure is known, unified vs discrete; CPU-only: ISA level, cores, RAM bucket.

/** The parts of a `/v1/system-info` answer an archetype is derived from. */
export interface SystemInfoSnapshot {
  "OS Version": string;
  Processor: string;
  "Physical Memory": string;
  devices: {
    cpu: { name: string; cores: number; threads: number; avx2?: boolean; avx512?: boolean };
    amd_gpu: unknown[];
    nvidia_gpu: unknown[];
  };
}

export type MemoryKind = "discrete" | "unified" | "system";
export type BandwidthTier = "low" | "mid" | "high" | "unknown";

export interface Archetype {
  /** The exact class, e.g. `nvidia-ada-24gb`, `strix-halo-128gb`, `cpu-avx512-2c-8gb`. */
  id: string;
  /** The class without its size, which a profile may name to cover every size: `nvidia-ada`. */
  family: string;
  /** `cpu` when no GPU is used, else the GPU's vendor. */
  accelerator: "cpu" | "nvidia" | "amd" | "apple";
  memory: MemoryKind;
  /** The GPU's own memory (discrete) or the RAM it shares (unified, with an integrated GPU's carve-out; CPU), bucketed, in GB. */
  memory_gb: number;
  bandwidth_tier: BandwidthTier;
  /** Peak memory bandwidth from the chip's published figure, when it is in the table below. */
  bandwidth_gbps?: number;
  /** The CPU's widest vector ISA llama.cpp uses. */
  isa: "avx512" | "avx2" | "neon" | "baseline";
  cores: number;
  gpu?: string;
}

/** Memory sizes machines ship with; a reported total is rounded up to the next (firmware and
 * drivers keep a little back, so 23.99 GB is a 24 GB card and 15.3 GB of RAM a 16 GB machine). */
const BUCKETS = [1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 36, 48, 64, 80, 96, 128, 141, 192, 256, 384, 512, 768, 1024];

export function memoryBucket(gb: number): number {
  return BUCKETS.find((b) => gb <= b) ?? Math.ceil(gb);
}

/** NVIDIA compute capability -> architecture (the CUDA table in product-overview.md). */
function nvidiaArch(cc: string | undefined): string {
  const major = Number((cc ?? "").split(".")[0]);
  const minor = Number((cc ?? "").split(".")[1] ?? 0);
  if (major >= 10) return "blackwell";
  if (major === 9) return "hopper";
  if (major === 8) return minor === 9 ? "ada" : "ampere";
  if (major === 7) return minor >= 5 ? "turing" : "volta";
  return major > 0 ? `sm${major}${minor}` : "unknown";
}

/** AMD gfx targets of integrated GPUs sharing system RAM, by the name their family goes by. */
const AMD_UNIFIED: Record<string, string> = {
  gfx1151: "strix-halo",
  gfx1150: "radeon-890m",
  gfx1103: "radeon-780m",
  gfx1035: "radeon-680m",
  gfx1036: "radeon-igpu",
  gfx90c: "radeon-vega-igpu",
};

/** Published peak memory bandwidths (GB/s), from the vendors' specification pages: Apple's M-series
 * pages; AMD's Ryzen AI Max+ 395 (256-bit LPDDR5X-8000); NVIDIA's GeForce and data-centre sheets. */
const BANDWIDTH: [RegExp, number][] = [
  [/^apple-m1$/, 68],
  [/^apple-m2$/, 100],
  [/^apple-m3$/, 100],
  [/^apple-m4$/, 120],
  [/^apple-m3-pro$/, 150],
  [/^apple-m3-max$/, 400],
  [/^strix-halo$/, 256],
  [/RTX 4090/i, 1008],
  [/RTX 4080/i, 717],
  [/RTX 3090/i, 936],
  [/RTX 3060/i, 360],
  [/H200/i, 4800],
  [/H100/i, 3350],
];

function bandwidthOf(...keys: string[]): number | undefined {
  for (const [pattern, gbps] of BANDWIDTH) if (keys.some((k) => pattern.test(k))) return gbps;
  return undefined;
}

const tierOf = (gbps: number | undefined): BandwidthTier => (gbps === undefined ? "unknown" : gbps < 150 ? "low" : gbps < 500 ? "mid" : "high");

/** "23.5 GB" -> 23.5. */
const gbOf = (text: string) => Number(/([\d.]+)\s*GB/i.exec(text)?.[1] ?? 0);

const record = (v: unknown): Record<string, unknown> => (typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {});

export function archetypeOf(info: SystemInfoSnapshot): Archetype {
  const cpu = info.devices.cpu;
  const arm = /\b(arm64|aarch64)\b/i.test(info["OS Version"]) || /^Apple M/i.test(info.Processor);
  const isa = cpu.avx512 ? "avx512" : cpu.avx2 ? "avx2" : arm ? "neon" : "baseline";
  const ram = memoryBucket(gbOf(info["Physical Memory"]));
  const base = { isa, cores: cpu.cores } as const;
  const make = (family: string, accelerator: Archetype["accelerator"], memory: MemoryKind, gb: number, gpu: string | undefined, bandwidth?: number): Archetype => ({
    id: accelerator === "cpu" ? `${family}-${cpu.cores}c-${gb}gb` : `${family}-${gb}gb`,
    family,
    accelerator,
    memory,
    memory_gb: gb,
    bandwidth_tier: tierOf(bandwidth),
    ...(bandwidth !== undefined ? { bandwidth_gbps: bandwidth } : {}),
    ...base,
    ...(gpu ? { gpu } : {}),
  });

  // The biggest NVIDIA card is the one a load offloads to.
  const nvidia = info.devices.nvidia_gpu.map(record).sort((a, b) => Number(b.vram_gb ?? 0) - Number(a.vram_gb ?? 0))[0];
  if (nvidia) {
    const name = String(nvidia.name ?? "NVIDIA GPU");
    return make(`nvidia-${nvidiaArch(nvidia.compute_capability as string | undefined)}`, "nvidia", "discrete", memoryBucket(Number(nvidia.vram_gb ?? 0)), name, bandwidthOf(name));
  }
  const amd = info.devices.amd_gpu.map(record);
  const discrete = amd.filter((g) => !AMD_UNIFIED[String(g.gfx ?? "")]).sort((a, b) => Number(b.vram_gb ?? 0) - Number(a.vram_gb ?? 0))[0];
  if (discrete && Number(discrete.vram_gb ?? 0) >= 2) {
    const name = String(discrete.name ?? "AMD GPU");
    return make(`amd-${String(discrete.gfx ?? "gpu")}`, "amd", "discrete", memoryBucket(Number(discrete.vram_gb)), name, bandwidthOf(name));
  }
  const integrated = amd.find((g) => AMD_UNIFIED[String(g.gfx ?? "")]);
  if (integrated) {
    // The VRAM of an integrated GPU is a carve-out of the RAM the OS no longer counts: together they are the machine's memory.
    const family = AMD_UNIFIED[String(integrated.gfx)]!;
    const total = memoryBucket(gbOf(info["Physical Memory"]) + Number(integrated.vram_gb ?? 0));
    return make(family, "amd", "unified", total, String(integrated.name ?? family), bandwidthOf(family));
  }
  const apple = /^Apple (M\d+)(?:\s+(Pro|Max|Ultra))?/i.exec(info.Processor);
  if (apple) {
    const family = `apple-${apple[1]!.toLowerCase()}${apple[2] ? `-${apple[2].toLowerCase()}` : ""}`;
    return make(family, "apple", "unified", ram, info.Processor, bandwidthOf(family));
  }
  return make(`cpu-${isa}`, "cpu", "system", ram, undefined);
}
