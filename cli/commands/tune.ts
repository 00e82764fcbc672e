// `lemonade tune MODEL` (auto-tune.md phase 5, "learn from this run"): sweeps the performance
// parameters that matter on this machine's archetype, one at a time from the current best, each
// candidate loaded through `/v1/load`'s `tuning` and measured with bench's code, within a time
// budget; shows progress and a table, and saves the best as the model's local overlay, which sits
// below the user's own saved options and so never replaces them.
import { Client, CliError, ensureServer, target } from "../client.ts";
import { SERVER_FLAGS, SERVER_FLAGS_HELP, type Command } from "../command.ts";
import { bold, dim, green, table } from "../format.ts";
import { measureLoaded } from "../bench-runs.ts";
import { median } from "../../lib/bench.ts";
import { pullAndLoad } from "./run.ts";
import { sweep, sweepSpace, type SweepTrial } from "../../lib/sweep.ts";

interface Archetype {
  id: string;
  accelerator: string;
  cores: number;
}

const describe = (t: Pick<SweepTrial, "params" | "backend">) =>
  [...(t.backend ? [`backend=${t.backend}`] : []), ...Object.entries(t.params).map(([k, v]) => `${k}=${v}`)].join(" ") || "(current settings)";

export const tune: Command = {
  name: "tune",
  summary: "Find the fastest performance parameters for a model on this PC and save them",
  usage: "tune MODEL [--budget SECONDS] [--tokens N] [--runs N] [--dry-run] [--json]",
  help: `Loads the model with each candidate value of the parameters that matter on this machine's
hardware archetype (threads, batch and micro-batch size, GPU offload, flash attention, KV cache
type, the backend where several are installed), one parameter at a time from the best so far,
measures generation speed with the requests 'lemonade bench' sends, and stops when the budget is
spent. The best is saved as the model's local tuning overlay (POST /v1/models/{id}/tuning), which
the next load uses; options you saved yourself still win, and are not swept.
  --budget SECONDS   Time for the sweep (default 300): no trial starts after it, so the command
                     ends within the budget plus one trial and the final reload
  --tokens N         Tokens generated per measured request (default 32)
  --runs N           Measured requests per candidate (default 2, after 1 warm-up)
  --dry-run          Measure and show, save nothing
  --json             Print the trials and the result as JSON
${SERVER_FLAGS_HELP}`,
  options: { ...SERVER_FLAGS, budget: { type: "string" }, tokens: { type: "string" }, runs: { type: "string" }, "dry-run": { type: "boolean" }, json: { type: "boolean" } },
  async run(input) {
    const [model, ...extra] = input.positionals;
    if (!model || extra.length) throw new CliError(`usage: lemonade ${this.usage}`, 2);
    const num = (flag: string, fallback: number) => {
      const raw = input.values[flag];
      if (raw === undefined) return fallback;
      const n = Number(raw);
      if (!(Number.isInteger(n) && n >= 1)) throw new CliError(`--${flag} must be a whole number from 1, got ${raw}`, 2);
      return n;
    };
    const budgetMs = num("budget", 300) * 1000;
    const measure = { runs: num("runs", 2), warmup: 1, tokens: num("tokens", 32) };
    const client = new Client(target(input.values as { host?: string; port?: string }));
    await ensureServer(client);
    const started = performance.now();
    const elapsed = () => Math.round((performance.now() - started) / 1000);
    const log = (line: string) => process.stderr.write(`${line}\n`);

    const info = await client.json("GET", "/v1/system-info");
    const archetype = info.archetype as Archetype;
    const view = await client.json("GET", `/v1/models/${encodeURIComponent(model)}/options`);
    if (!view.tuning) throw new CliError(`${model} (${view.recipe}) takes no tuning parameters`);
    // The user's own choices (saved options, config, the registry row) are kept, not swept.
    const fixed = Object.entries(view.tuning.params as Record<string, { source: string }>)
      .filter(([, p]) => ["saved", "registry", "config"].includes(p.source))
      .map(([k]) => k);
    const space = Object.fromEntries(Object.entries(sweepSpace(archetype, info.devices?.cpu?.threads ?? archetype.cores)).filter(([k]) => !fixed.includes(k)));
    const backendFixed = view.provenance?.[`${view.recipe}_backend`] && !["default", "profile"].includes(view.provenance[`${view.recipe}_backend`]);
    const installed = Object.entries((info.recipes?.[view.recipe]?.backends ?? {}) as Record<string, { state: string }>)
      .filter(([, b]) => b.state === "installed")
      .map(([name]) => name);
    log(bold(`Tuning ${model} on ${archetype.id}`) + dim(` (budget ${budgetMs / 1000} s${fixed.length ? `; keeping your ${fixed.join(", ")}` : ""})`));

    // The baseline: the model as its next load would run it now (profile, earlier overlay and all),
    // its auto-tuned values made explicit so that the sweep varies them one at a time.
    const current = Object.fromEntries(
      Object.entries(view.tuning.params as Record<string, { value: string | number; source: string }>)
        .filter(([k]) => !fixed.includes(k))
        .map(([k, p]) => [k, p.value]),
    );
    const { baseline, best, trials, exhausted } = await sweep({
      start: current,
      space,
      backends: backendFixed ? [] : installed,
      async measure(params, backend) {
        await pullAndLoad(client, model, { tuning: params, ...(backend ? { [`${view.recipe}_backend`]: backend } : {}) });
        const runs = await measureLoaded(client, model, measure);
        return { tokensPerSecond: median(runs.map((r) => r.generation_tokens_per_second)), ttftMs: median(runs.map((r) => r.ttft_ms)) };
      },
      within: () => performance.now() - started < budgetMs,
      onTrial: (t, i) => log(`[${i} ${elapsed()}s] ${describe(t)}: ${t.tokensPerSecond !== null ? `${t.tokensPerSecond.toFixed(1)} tok/s` : `failed (${t.error})`}`),
    });
    if (baseline.tokensPerSecond === null) throw new CliError(`${model} does not run as it is: ${baseline.error}`);

    const health = await client.json("GET", "/v1/health");
    const backend = best.backend ?? (await client.loadedEntry<{ model_name: string; backend?: string }>(model, health))?.backend ?? view.tuning.backend;
    const save = { backend, params: best.params, tokens_per_second: Math.round(best.tokensPerSecond! * 10) / 10 };
    // Saved even when the current settings won: the measured speed is the monitor's expectation.
    const saved = !input.values["dry-run"];
    if (saved) await client.json("POST", `/v1/models/${encodeURIComponent(model)}/tuning`, save);
    // The next load picks the overlay up: reload without a tuning request so the engine runs it now.
    if (saved) await pullAndLoad(client, model, {});
    const result = {
      model,
      archetype: archetype.id,
      before_tokens_per_second: baseline.tokensPerSecond,
      after_tokens_per_second: best.tokensPerSecond,
      best: { backend, params: best.params },
      saved,
      budget_exhausted: exhausted,
      seconds: elapsed(),
      trials: trials.map((t) => ({ backend: t.backend, params: t.params, tokens_per_second: t.tokensPerSecond, ttft_ms: t.ttftMs, ...(t.error ? { error: t.error } : {}) })),
    };
    if (input.values.json) {
      console.log(JSON.stringify(result, null, 2));
      return 0;
    }
    const f = (n: number | null) => (n === null ? "" : n.toFixed(1));
    console.log(
      table(
        ["#", "CANDIDATE", "GEN TOK/S", "TTFT MS", ""],
        trials.map((t, i) => [String(i + 1), describe(t), f(t.tokensPerSecond), f(t.ttftMs), t === best ? green("best") : t.error ? "failed" : ""]),
      ),
    );
    console.log(`${model}: ${f(baseline.tokensPerSecond)} tok/s before, ${f(best.tokensPerSecond)} tok/s with ${describe(best)}${exhausted ? dim(" (budget reached)") : ""}`);
    console.log(saved ? `Saved as ${model}'s local tuning overlay; the next load uses it.` : "Dry run: nothing saved.");
    return 0;
  },
};
