// The sweep `lemonade tune` and the Job Engine's `tune` op run (auto-tune.md phase 5): from the
// current settings, one parameter at a time, each candidate measured by the caller, keeping a value
// only when it is clearly faster, and starting no trial once the time is up.

export type SweepParams = Record<string, string | number>;

export interface SweepTrial {
  params: SweepParams;
  backend?: string;
  tokensPerSecond: number | null;
  ttftMs: number | null;
  error?: string;
}

export interface SweepResult {
  baseline: SweepTrial;
  best: SweepTrial;
  trials: SweepTrial[];
  /** Whether the time ran out before every candidate was tried. */
  exhausted: boolean;
}

/** A candidate must beat the best by this share to replace it: less is measurement noise. */
const MARGIN = 1.02;

/** llama.cpp refuses a quantized V cache without flash attention, so such a KV type is tried with it on. */
const withCompanions = (params: SweepParams, param: string, value: string | number): SweepParams =>
  param === "kv_cache_type" && /^(q|iq)/.test(String(value)) ? { ...params, [param]: value, flash_attn: "on" } : { ...params, [param]: value };

/** The values worth trying per parameter on a machine, in sweep order: threads over the physical
 * and logical cores; llama.cpp's default batch sizes (2048/512) with smaller (CPU) or larger (GPU)
 * ones; flash attention's three settings; an 8-bit KV cache; on a GPU, full and no offload. */
export function sweepSpace(machine: { accelerator: string; cores: number }, logicalThreads: number): Record<string, (string | number)[]> {
  const gpu = machine.accelerator !== "cpu";
  return {
    threads: [...new Set([machine.cores, logicalThreads, Math.max(1, Math.floor(machine.cores / 2))])],
    batch_size: gpu ? [2048, 1024, 4096] : [2048, 512],
    ubatch_size: gpu ? [512, 1024, 256] : [512, 128, 256],
    flash_attn: ["auto", "on", "off"],
    kv_cache_type: ["f16", "q8_0"],
    ...(gpu ? { gpu_layers: ["all", 0] } : {}),
  };
}

export async function sweep(opts: {
  start: SweepParams;
  space: Record<string, (string | number)[]>;
  /** Backends to compare first, when more than one can run the model. */
  backends: string[];
  measure(params: SweepParams, backend: string | undefined): Promise<{ tokensPerSecond: number; ttftMs: number }>;
  within(): boolean;
  onTrial?(trial: SweepTrial, index: number): void;
}): Promise<SweepResult> {
  const trials: SweepTrial[] = [];
  const trial = async (params: SweepParams, backend?: string): Promise<SweepTrial> => {
    const t: SweepTrial = { params, ...(backend ? { backend } : {}), tokensPerSecond: null, ttftMs: null };
    try {
      Object.assign(t, await opts.measure(params, backend));
    } catch (err) {
      t.error = (err as Error).message.split("\n")[0];
    }
    trials.push(t);
    opts.onTrial?.(t, trials.length);
    return t;
  };
  const baseline = await trial(opts.start);
  if (baseline.tokensPerSecond === null) return { baseline, best: baseline, trials, exhausted: false };
  let best = baseline;
  const better = (t: SweepTrial) => t.tokensPerSecond !== null && t.tokensPerSecond > best.tokensPerSecond! * MARGIN;
  if (opts.backends.length > 1) {
    for (const backend of opts.backends) {
      if (!opts.within()) break;
      const t = await trial(best.params, backend);
      if (better(t)) best = t;
    }
  }
  for (const [param, values] of Object.entries(opts.space)) {
    for (const value of values) {
      if (!opts.within()) break;
      if (best.params[param] === value) continue;
      const t = await trial(withCompanions(best.params, param, value), best.backend);
      if (better(t)) best = t;
    }
  }
  return { baseline, best, trials, exhausted: !opts.within() };
}
