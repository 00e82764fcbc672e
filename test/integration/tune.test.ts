// `lemonade tune` on this machine, on the tiny chat model and the real llama-server: it finishes
// within its budget (plus the one trial running when the budget ends), saves the model's local
// overlay, and the next load runs with it, as the options' provenance and the engine's argv show.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { freePort } from "../../engines/process.ts";
import { linkEngines, MODELS, testModelsDir } from "../helpers/engines.ts";
import { tempDir } from "../helpers/temp.ts";

const root = join(import.meta.dir, "..", "..");
const MODEL = "extra.tiny-chat";
const BUDGET_S = 20;
let cacheDir: string;
let port: number;
let server: ReturnType<typeof Bun.spawn>;
const base = () => `http://127.0.0.1:${port}`;
const env = () => ({ ...process.env, LEMONADE_CACHE_DIR: cacheDir, LEMONADE_PORT: String(port), LEMONADE_LOG_LEVEL: "warning" });

async function lemonade(args: string[]) {
  const p = Bun.spawn([process.execPath, join(root, "cli", "main.ts"), ...args], { env: env(), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

const get = async (path: string) => (await fetch(`${base()}${path}`)).json();

beforeAll(async () => {
  cacheDir = tempDir();
  linkEngines(cacheDir);
  const extra = join(cacheDir, "extra");
  mkdirSync(extra);
  copyFileSync(join(testModelsDir(), MODELS.chat), join(extra, MODELS.chat));
  port = freePort();
  server = Bun.spawn([process.execPath, join(root, "cli", "main.ts"), "serve"], {
    env: { ...env(), LEMONADE_EXTRA_MODELS_DIR: extra, HF_HUB_CACHE: join(cacheDir, "hf") },
    stdout: "ignore",
    stderr: "ignore",
  });
  for (let i = 0; i < 200; i++) {
    if (await fetch(`${base()}/live`).then((r) => r.ok, () => false)) return;
    await Bun.sleep(50);
  }
  throw new Error("the server did not start");
});

afterAll(async () => {
  server.kill("SIGTERM");
  await server.exited;
});

describe("lemonade tune", () => {
  test("sweeps within its budget, saves the overlay, and the next load runs with it", async () => {
    const archetype = (await get("/v1/system-info")).archetype;
    expect(archetype.accelerator).toBe("cpu");
    const started = performance.now();
    const r = await lemonade(["tune", MODEL, "--budget", String(BUDGET_S), "--tokens", "16", "--runs", "1", "--json"]);
    const seconds = (performance.now() - started) / 1000;
    expect(r.code, r.err).toBe(0);
    const result = JSON.parse(r.out);
    console.log(`lemonade tune ${MODEL} --budget ${BUDGET_S} --tokens 16 --runs 1: ${result.before_tokens_per_second.toFixed(1)} tok/s before, ${result.after_tokens_per_second.toFixed(1)} tok/s after (${result.trials.length} trials, ${seconds.toFixed(0)} s; best ${JSON.stringify(result.best.params)})`);
    // Bounded: no trial starts after the budget; one trial and the final reload may run past it.
    expect(seconds).toBeLessThan(BUDGET_S + 30);
    expect(result.trials.length).toBeGreaterThan(1);
    expect(result.before_tokens_per_second).toBeGreaterThan(0);
    expect(result.after_tokens_per_second).toBeGreaterThanOrEqual(result.before_tokens_per_second);
    // Progress lines on stderr, one per trial.
    expect(r.err.match(/^\[\d+ \d+s\] /gm)?.length).toBe(result.trials.length);
    expect(result.saved).toBe(true);

    // The overlay is the model's local_tune layer now.
    const view = await get(`/v1/models/${MODEL}/options`);
    const best = Object.entries(result.best.params as Record<string, string | number>);
    expect(best.length).toBeGreaterThan(0);
    for (const [param, value] of best) expect(view.tuning.params[param], param).toEqual({ value, source: "local_tune" });
    expect(view.tuning.expected_tokens_per_second).toBe(Math.round(result.after_tokens_per_second * 10) / 10);
    expect(readFileSync(join(cacheDir, "tuned_options.json"), "utf8")).toContain(MODEL);

    // A fresh load (no tuning in the request) runs the engine with the overlay's flags.
    expect((await fetch(`${base()}/v1/unload`, { method: "POST", body: JSON.stringify({ model_name: MODEL }) })).status).toBe(200);
    expect((await fetch(`${base()}/v1/load`, { method: "POST", body: JSON.stringify({ model_name: MODEL }) })).status).toBe(200);
    const health = await get("/v1/health");
    const argv: string = health.all_models_loaded.find((m: { model_name: string }) => m.model_name === "tiny-chat").launch_command.join(" ");
    expect(view.tuning.args.length).toBeGreaterThan(0);
    expect(argv).toContain(view.tuning.args);
    expect(health.auto_tune.archetype.id).toBe(archetype.id);

    const status = await lemonade(["status"]);
    expect(status.out).toContain(`Hardware archetype: ${archetype.id}; auto-tune on`);
    expect(status.out).toContain(`auto-tune sets ${view.tuning.args}`);
  });

  test("the Job Engine's tune op runs the same sweep in the server and saves the overlay", async () => {
    await fetch(`${base()}/v1/models/${MODEL}/tuning`, { method: "DELETE" });
    const created = await fetch(`${base()}/v1/jobs`, { method: "POST", body: JSON.stringify({ name: "tune", steps: [{ id: "tune", op: "tune", params: { model: MODEL, budget_s: 5, tokens: 8, runs: 1 } }] }) });
    expect(created.status).toBe(202);
    const { id } = await created.json();
    let job: { status: string; steps: { output?: Record<string, unknown>; error?: string }[] } = { status: "queued", steps: [] };
    for (let i = 0; i < 600 && !["completed", "failed"].includes(job.status); i++) {
      await Bun.sleep(100);
      job = await get(`/v1/jobs/${id}`);
    }
    expect(job.status, JSON.stringify(job.steps[0])).toBe("completed");
    const out = job.steps[0]!.output as { saved: boolean; trials: unknown[]; best: { params: Record<string, string | number> }; after_tokens_per_second: number };
    expect(out.saved).toBe(true);
    expect(out.trials.length).toBeGreaterThan(0);
    expect(out.after_tokens_per_second).toBeGreaterThan(0);
    const view = await get(`/v1/models/${MODEL}/options`);
    for (const [param, value] of Object.entries(out.best.params)) expect(view.tuning.params[param], param).toEqual({ value, source: "local_tune" });
  });

  test("bench --submit writes an anonymised contribution with the archetype and the parameters", async () => {
    const file = join(cacheDir, "contribution.json");
    const r = await lemonade(["bench", MODEL, "--runs", "1", "--warmup", "0", "--tokens", "4", "--submit", file]);
    expect(r.code, r.err).toBe(0);
    const c = JSON.parse(readFileSync(file, "utf8"));
    expect(c.format).toBe("lemonade-bench-contribution");
    expect(c.archetype.id).toBe((await get("/v1/system-info")).archetype.id);
    expect(c.results[0]).toMatchObject({ model: MODEL, backend: "cpu", runs: 1, tokens: 4 });
    expect(c.results[0].tokens_per_second).toBeGreaterThan(0);
    expect(c.results[0].parameters.ctx_size).toBeGreaterThan(0);
    // Nothing that names the machine or its user: no paths, no host name.
    const text = JSON.stringify(c);
    expect(text).not.toContain(cacheDir);
    expect(text).not.toContain(hostname());
  });
});
