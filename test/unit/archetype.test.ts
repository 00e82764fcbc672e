// Hardware archetypes from recorded /v1/system-info snapshots, and the bundled profile each gets.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { archetypeOf, memoryBucket, type SystemInfoSnapshot } from "../../lib/archetype.ts";
import { bundledProfiles, profileFor } from "../../models/tuning.ts";

const snapshot = (name: string): SystemInfoSnapshot => JSON.parse(readFileSync(join(import.meta.dir, "..", "fixtures", "system-info", `${name}.json`), "utf8"));

describe("archetypes of recorded machines", () => {
  test("an NVIDIA desktop: the RTX 4090's architecture and VRAM, its iGPU ignored", () => {
    const a = archetypeOf(snapshot("nvidia-desktop"));
    expect(a).toMatchObject({ id: "nvidia-ada-24gb", family: "nvidia-ada", accelerator: "nvidia", memory: "discrete", memory_gb: 24, isa: "avx512", cores: 16, gpu: "NVIDIA GeForce RTX 4090" });
    expect(a.bandwidth_tier).toBe("high");
    expect(profileFor(bundledProfiles(), a)?.archetype).toBe("nvidia-*");
  });

  test("a Radeon 780M laptop: unified memory, RAM plus the iGPU's carve-out", () => {
    const a = archetypeOf(snapshot("radeon-780m-laptop"));
    expect(a).toMatchObject({ id: "radeon-780m-32gb", family: "radeon-780m", accelerator: "amd", memory: "unified", memory_gb: 32, bandwidth_tier: "unknown" });
    expect(profileFor(bundledProfiles(), a)?.recommended_backend).toEqual({ llamacpp: "vulkan" });
  });

  test("an Apple M3: unified, NEON, Apple's published bandwidth", () => {
    const a = archetypeOf(snapshot("apple-m3"));
    expect(a).toMatchObject({ id: "apple-m3-16gb", family: "apple-m3", accelerator: "apple", memory: "unified", isa: "neon", bandwidth_gbps: 100, bandwidth_tier: "low" });
    expect(profileFor(bundledProfiles(), a)?.archetype).toBe("apple-*");
  });

  test("a Strix Halo: gfx1151 is unified, 96 GB carve-out plus 31 GB for the OS is a 128 GB machine", () => {
    const a = archetypeOf(snapshot("strix-halo"));
    expect(a).toMatchObject({ id: "strix-halo-128gb", family: "strix-halo", memory: "unified", memory_gb: 128, bandwidth_gbps: 256, bandwidth_tier: "mid" });
    const p = profileFor(bundledProfiles(), a)!;
    expect(p.backends["llamacpp:vulkan"]).toEqual({ batch_size: 2048, ubatch_size: 1024 });
  });

  test("this CPU-only box: ISA level, physical cores and a RAM bucket", () => {
    const a = archetypeOf(snapshot("cpu-only-box"));
    expect(a).toMatchObject({ id: "cpu-avx512-2c-24gb", family: "cpu-avx512", accelerator: "cpu", memory: "system", isa: "avx512", cores: 2 });
    expect(a.gpu).toBeUndefined();
    expect(profileFor(bundledProfiles(), a)?.backends.llamacpp).toEqual({ threads: "physical-cores" });
  });

  test("stable: free memory, storage and backend states do not change the archetype", () => {
    const one = snapshot("nvidia-desktop");
    const two = structuredClone(one) as SystemInfoSnapshot & { model_storage: { free_bytes: number } };
    (two.devices.nvidia_gpu[0] as { vram_free_gb: number }).vram_free_gb = 3.2;
    two.model_storage.free_bytes = 12;
    expect(archetypeOf(two)).toEqual(archetypeOf(one));
  });

  test("CPU ISA levels: AVX2 without AVX-512, and a plain x86 CPU", () => {
    const s = snapshot("cpu-only-box");
    s.devices.cpu.avx512 = false;
    expect(archetypeOf(s).id).toBe("cpu-avx2-2c-24gb");
    s.devices.cpu.avx2 = false;
    expect(archetypeOf(s).isa).toBe("baseline");
  });

  test("memory buckets round a reported total up to the size machines ship with", () => {
    expect(memoryBucket(23.99)).toBe(24);
    expect(memoryBucket(15.3)).toBe(16);
    expect(memoryBucket(24.1)).toBe(32);
    expect(memoryBucket(2000)).toBe(2000);
  });
});
