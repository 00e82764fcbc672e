// The engine room: loaded models (web/loaded-models.tsx, from /v1/health); tokens/s, time to
// first token and requests per minute over the last 15 minutes as charts (uPlot), from the change
// between two scrapes of /metrics; the last request (/v1/stats) and the host's CPU, RAM and GPU
// (/v1/system-stats). The series live in this page.
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { getJson, request, type Loaded } from "./api.ts";
import { usePoll } from "./hooks.ts";
import { RpcWorkerList } from "./rpc-workers.tsx";
import { LoadedModels } from "./loaded-models.tsx";

const EVERY_MS = 5000;
const WINDOW_S = 15 * 60;

/** The sum over every label set of each named sample in a Prometheus text exposition. */
function sums(text: string, names: string[]): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const name = line.slice(0, line.search(/[{\s]/));
    if (name in out) out[name]! += Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
  }
  return out;
}

const NAMES = ["lemonade_generated_tokens_total", "lemonade_engine_requests_total", "lemonade_time_to_first_token_seconds_sum", "lemonade_time_to_first_token_seconds_count"];

interface Series {
  t: number[];
  tps: (number | null)[];
  ttft: (number | null)[];
  rpm: (number | null)[];
}

/** Scrapes /metrics every few seconds; each point is the rate since the scrape before. */
function useSeries(): { series: Series; error?: string } {
  const [series, setSeries] = useState<Series>({ t: [], tps: [], ttft: [], rpm: [] });
  const [error, setError] = useState<string>();
  const last = useRef<{ at: number; v: Record<string, number> } | null>(null);
  useEffect(() => {
    let live = true;
    const scrape = async () => {
      try {
        const v = sums(await (await request("/metrics")).text(), NAMES);
        const at = Date.now() / 1000;
        const prev = last.current;
        last.current = { at, v };
        setError(undefined);
        if (!prev || !live) return;
        const dt = at - prev.at;
        const d = (n: string) => Math.max(0, v[n]! - prev.v[n]!);
        const count = d("lemonade_time_to_first_token_seconds_count");
        setSeries((s) => {
          const keep = s.t.findIndex((x) => x >= at - WINDOW_S);
          const from = keep < 0 ? s.t.length : keep;
          return {
            t: [...s.t.slice(from), at],
            tps: [...s.tps.slice(from), d("lemonade_generated_tokens_total") / dt],
            ttft: [...s.ttft.slice(from), count ? (d("lemonade_time_to_first_token_seconds_sum") / count) * 1000 : null],
            rpm: [...s.rpm.slice(from), (d("lemonade_engine_requests_total") / dt) * 60],
          };
        });
      } catch (err) {
        if (live) setError((err as Error).message);
      }
    };
    void scrape();
    const timer = setInterval(scrape, EVERY_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  return { series, error };
}

/** The x axis: the last 15 minutes up to now, whatever the data (one point, or none, would stretch it over years). */
function lastWindow(): [number, number] {
  const now = Date.now() / 1000;
  return [now - WINDOW_S, now];
}

function Chart({ title, unit, t, values }: { title: string; unit: string; t: number[]; values: (number | null)[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const width = Math.max(240, (box.current?.clientWidth ?? 320) - 8);
    plot.current = new uPlot(
      {
        width,
        height: 160,
        legend: { show: false },
        scales: { x: { time: true, range: lastWindow }, y: { range: (_u, min, max) => [0, Math.max(1, max ?? 1, min ?? 0)] } },
        axes: [{ stroke: "currentColor", grid: { stroke: "rgba(128,128,128,0.2)" } }, { stroke: "currentColor", grid: { stroke: "rgba(128,128,128,0.2)" }, size: 50 }],
        series: [{}, { label: title, stroke: "#c79a00", width: 2, fill: "rgba(242,197,61,0.15)", spanGaps: false }],
      },
      [[], []],
      box.current!,
    );
    return () => plot.current?.destroy();
  }, []);
  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    u.setData([t, values]);
    // The span the x axis shows, for a test to read.
    box.current!.dataset.xSpan = String(Math.round(u.scales.x!.max! - u.scales.x!.min!));
  }, [t, values]);
  const latest = values.findLast((v) => v !== null);
  return (
    <figure class="chart" data-chart={title}>
      <figcaption>
        {title}: <strong>{latest == null ? "—" : `${latest.toFixed(1)} ${unit}`}</strong>
      </figcaption>
      <div ref={box} role="img" aria-label={`${title} over the last 15 minutes`} />
    </figure>
  );
}

export function Dashboard() {
  const health = usePoll(() => getJson("/v1/health"), EVERY_MS);
  const stats = usePoll(() => getJson("/v1/stats"), EVERY_MS);
  const host = usePoll(() => getJson("/v1/system-stats"), EVERY_MS);
  const { series, error } = useSeries();
  const loaded = (health.data?.all_models_loaded ?? []) as Loaded[];
  // The runtime monitor's flags (auto-tune): models running well under their tuned speed.
  const retune = (health.data?.auto_tune?.retune_suggested ?? []) as { model_name: string; expected_tokens_per_second: number; observed_tokens_per_second: number; hint: string }[];
  const pct = (v: number | null | undefined) => (v == null ? "n/a" : `${v.toFixed(0)} %`);
  return (
    <section class="dashboard">
      <h2>Engine room</h2>
      {(health.error || error) && <p class="error">{health.error ?? error}</p>}
      <div class="host">
        <span>CPU {pct(host.data?.cpu_percent)}</span>
        <span>RAM in use {host.data ? `${host.data.memory_gb.toFixed(1)} GiB` : "…"}</span>
        <span>GPU {pct(host.data?.gpu_percent)}</span>
        <span>GPU memory {host.data?.vram_gb == null ? "n/a" : `${host.data.vram_gb.toFixed(1)} GiB`}</span>
        {stats.data?.tokens_per_second ? (
          <span>
            last request: {stats.data.tokens_per_second.toFixed(1)} tokens/s, TTFT {Math.round(stats.data.time_to_first_token * 1000)} ms
          </span>
        ) : null}
      </div>
      <div class="charts">
        <Chart title="Tokens per second" unit="tokens/s" t={series.t} values={series.tps} />
        <Chart title="Time to first token" unit="ms" t={series.t} values={series.ttft} />
        <Chart title="Requests per minute" unit="/min" t={series.t} values={series.rpm} />
      </div>
      {retune.length > 0 && (
        <div class="retune" role="status">
          {retune.map((r) => (
            <p key={r.model_name} class="warning" data-retune={r.model_name}>
              {r.model_name} runs at {r.observed_tokens_per_second.toFixed(1)} tokens/s, under half the {r.expected_tokens_per_second.toFixed(1)} its tuning measured: re-tune it with <code>{r.hint}</code>
            </p>
          ))}
        </div>
      )}
      <RpcWorkerList />
      <LoadedModels loaded={loaded} />
    </section>
  );
}
