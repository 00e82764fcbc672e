// Device detection on recorded tool outputs and sysfs trees, and live on this machine.
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { detectDevices, gpuMemoryUse, parseCpuinfo, parseNvidiaMemoryUse, parseNvidiaSmi, readDrmGpus, type Devices } from "../../lib/devices.ts";
import { bestGpuBackend, hardwareProblem, releaseBackendStatus } from "../../engines/release-backends.ts";
import { llamacpp } from "../../engines/llamacpp.ts";
import { tempDir } from "../helpers/server.ts";

const CPUINFO = `processor\t: 0
model name\t: AMD Ryzen 9 7950X 16-Core Processor
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu vme sse2 avx avx2 avx512f avx512bw
processor\t: 1
model name\t: AMD Ryzen 9 7950X 16-Core Processor
physical id\t: 0
core id\t\t: 0
processor\t: 2
physical id\t: 0
core id\t\t: 1
`;

test("/proc/cpuinfo: name, physical cores, AVX2 and AVX-512", () => {
  expect(parseCpuinfo(CPUINFO, 3)).toEqual({ name: "AMD Ryzen 9 7950X 16-Core Processor", cores: 2, threads: 3, avx2: true, avx512: true });
  expect(parseCpuinfo("model name : Old CPU\nflags : sse2 avx\n", 4)).toMatchObject({ avx2: false, avx512: false, cores: 4 });
});

test("nvidia-smi CSV: name, VRAM total and free, driver, compute capability", () => {
  const gpus = parseNvidiaSmi("NVIDIA GeForce RTX 4090, 24564, 23012, 550.54.14, 8.9\nNVIDIA H200, 143771, 143000, 570.86.15, 9.0\n");
  expect(gpus).toEqual([
    { vendor: "nvidia", name: "NVIDIA GeForce RTX 4090", vramTotalBytes: 24564 * 2 ** 20, vramFreeBytes: 23012 * 2 ** 20, driver: "550.54.14", computeCapability: "8.9" },
    { vendor: "nvidia", name: "NVIDIA H200", vramTotalBytes: 143771 * 2 ** 20, vramFreeBytes: 143000 * 2 ** 20, driver: "570.86.15", computeCapability: "9.0" },
  ]);
  expect(parseNvidiaSmi("")).toEqual([]);
});

test("sysfs: an AMD GPU with its VRAM and gfx target, an Intel iGPU, an NVIDIA card left to nvidia-smi", () => {
  const root = tempDir("lemonade-sysfs-");
  const card = (n: number, files: Record<string, string>) => {
    mkdirSync(join(root, "drm", `card${n}`, "device"), { recursive: true });
    for (const [f, v] of Object.entries(files)) writeFileSync(join(root, "drm", `card${n}`, "device", f), v);
  };
  card(0, { vendor: "0x1002\n", product_name: "Radeon RX 7900 XTX\n", mem_info_vram_total: String(24 * 2 ** 30), mem_info_vram_used: String(2 * 2 ** 30) });
  card(1, { vendor: "0x8086\n" });
  card(2, { vendor: "0x10de\n" });
  mkdirSync(join(root, "drm", "card0-DP-1"), { recursive: true });
  mkdirSync(join(root, "kfd", "0"), { recursive: true });
  writeFileSync(join(root, "kfd", "0", "properties"), "cpu_cores_count 16\ngfx_target_version 0\n");
  mkdirSync(join(root, "kfd", "1"), { recursive: true });
  writeFileSync(join(root, "kfd", "1", "properties"), "simd_count 192\ngfx_target_version 110000\n");
  expect(readDrmGpus(join(root, "drm"), join(root, "kfd"))).toEqual([
    { vendor: "amd", name: "Radeon RX 7900 XTX", vramTotalBytes: 24 * 2 ** 30, vramFreeBytes: 22 * 2 ** 30, gfx: "gfx1100" },
    { vendor: "intel", name: "Intel GPU" },
  ]);
});

test("GPU memory in use, as the VRAM-pressure monitor samples it: the fullest GPU's share, NVIDIA's and AMD's alike", async () => {
  expect(parseNvidiaMemoryUse("20000, 24564\n143000, 143771\n")).toEqual([20000 / 24564, 143000 / 143771]);
  expect(parseNvidiaMemoryUse("[N/A], 24564\n")).toEqual([]);
  const root = tempDir("lemonade-sysfs-");
  mkdirSync(join(root, "card0", "device"), { recursive: true });
  for (const [f, v] of Object.entries({ vendor: "0x1002", mem_info_vram_total: String(16 * 2 ** 30), mem_info_vram_used: String(12 * 2 ** 30) })) writeFileSync(join(root, "card0", "device", f), v);
  const asked: string[][] = [];
  const smi = (csv: string | null) => async (argv: string[]) => (asked.push(argv), csv);
  expect(await gpuMemoryUse(smi("5000, 10000\n"), root)).toBe(0.75);
  expect(await gpuMemoryUse(smi("9500, 10000\n"), root)).toBe(0.95);
  expect(asked[0]).toEqual(["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"]);
  expect(await gpuMemoryUse(smi(null), join(root, "none"))).toBeUndefined();
});

const machine = (gpus: Devices["gpus"], over: Partial<Devices> = {}): Devices => ({
  platform: "linux-x64",
  cpu: { name: "x", cores: 8, threads: 16, avx2: true, avx512: false },
  ramTotalBytes: 64 * 2 ** 30,
  ramAvailableBytes: 48 * 2 ** 30,
  gpus,
  vulkan: true,
  ...over,
});

test("each GPU backend runs only where its hardware and OS are, with the reason otherwise", () => {
  const nvidia = machine([{ vendor: "nvidia", name: "RTX" }]);
  const amd = machine([{ vendor: "amd", name: "RX", gfx: "gfx1100" }]);
  const cpuOnly = machine([], { vulkan: false });
  expect(hardwareProblem("cuda", nvidia)).toBeNull();
  expect(hardwareProblem("cuda", amd)).toContain("no NVIDIA GPU");
  expect(hardwareProblem("rocm", amd)).toBeNull();
  expect(hardwareProblem("rocm", machine([{ vendor: "amd", name: "old" }]))).toContain("gfx target");
  expect(hardwareProblem("vulkan", amd)).toBeNull();
  expect(hardwareProblem("vulkan", machine([{ vendor: "intel", name: "iGPU" }], { vulkan: false }))).toContain("libvulkan1");
  expect(hardwareProblem("vulkan", cpuOnly)).toContain("no GPU");
  expect(hardwareProblem("metal", nvidia)).toContain("Apple Silicon");
  expect(hardwareProblem("metal", machine([{ vendor: "apple", name: "M3" }], { platform: "darwin-arm64" }))).toBeNull();
});

test("auto picks CUDA on NVIDIA, ROCm on AMD, Vulkan on an Intel GPU — once their releases are pinned — else the CPU", () => {
  const cacheDir = tempDir();
  const pin = (repo: string, tag: string, asset: string) => ({ [repo]: { [tag]: { [asset]: `sha256:${"a".repeat(64)}` } } });
  writeFileSync(
    join(cacheDir, "backend_versions.json"),
    JSON.stringify({
      checksums: {
        github: {
          ...pin("lemonade-sdk/llama.cpp", "b10397", "llama-b10397-bin-ubuntu-cuda-x64.tar.gz"),
          ...pin("lemonade-sdk/llamacpp-rocm", "b10470", "llama-b10470-ubuntu-rocm-gfx110X-x64.zip"),
          "ggml-org/llama.cpp": { b10375: { "llama-b10375-bin-ubuntu-vulkan-x64.tar.gz": `sha256:${"b".repeat(64)}` } },
        },
      },
    }),
  );
  const env = (d: Devices) => ({ cacheDir, path: "", devices: d });
  expect(bestGpuBackend("llamacpp", env(machine([{ vendor: "nvidia", name: "RTX" }])))).toBe("cuda");
  expect(bestGpuBackend("llamacpp", env(machine([{ vendor: "amd", name: "RX", gfx: "gfx1100" }])))).toBe("rocm");
  // ROCm builds are published per GPU family: a gfx1100 fetches the gfx110X asset, checked against its pin.
  expect(releaseBackendStatus("llamacpp", "rocm", env(machine([{ vendor: "amd", name: "RX", gfx: "gfx1100" }]))).message).toBe(
    "downloads llama-b10470-ubuntu-rocm-gfx110X-x64.zip from lemonade-sdk/llamacpp-rocm b10470, checked against its pinned sha256",
  );
  expect(bestGpuBackend("llamacpp", env(machine([{ vendor: "intel", name: "Arc" }])))).toBe("vulkan");
  expect(bestGpuBackend("llamacpp", env(machine([], { vulkan: false })))).toBeNull();
  expect(llamacpp.resolveBackend!("auto", env(machine([{ vendor: "nvidia", name: "RTX" }])))).toBe("cuda");
  expect(releaseBackendStatus("llamacpp", "cuda", env(machine([{ vendor: "nvidia", name: "RTX" }])))).toMatchObject({ state: "installable", action: "lemonade backends install llamacpp:cuda" });
  // Without a pinned checksum the backend still installs, checked against GitHub's published digest.
  const unpinned = { cacheDir: tempDir(), path: "", devices: machine([{ vendor: "nvidia", name: "RTX" }]) };
  expect(releaseBackendStatus("llamacpp", "cuda", unpinned)).toMatchObject({ state: "installable", message: expect.stringContaining("the sha256 digest GitHub publishes") });
});

test("live on this machine: a CPU, and every GPU backend unsupported with its reason", () => {
  const live = detectDevices();
  expect(live.cpu.threads).toBeGreaterThan(0);
  expect(live.cpu.name.length).toBeGreaterThan(0);
  expect(live.ramTotalBytes).toBeGreaterThan(live.ramAvailableBytes * 0.5);
  if (live.gpus.length) return; // a machine with a GPU has other answers; this one checks the CPU-only case
  const status = llamacpp.status({ cacheDir: tempDir(), path: "", devices: live });
  for (const b of ["cuda", "rocm", "vulkan"]) {
    expect(status.backends[b]?.state, b).toBe("unsupported");
    expect(status.backends[b]?.message.length, b).toBeGreaterThan(5);
  }
});
