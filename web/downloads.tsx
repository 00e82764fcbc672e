// Downloads: engine installs under way (GET /v1/installs), which can be cancelled but not paused
// (the server can stop a release download or a build, not suspend one), and every server-owned
// download job, active ones first, with progress, speed and time left (from the bytes between two
// polls), and what each job's state allows: pause, resume, retry, cancel (which deletes the
// partial files), remove from the list; finished jobs cleared.
import { useRef, useState } from "preact/hooks";
import { getJson, postJson, type Install, type Job } from "./api.ts";
import { usePoll } from "./hooks.ts";

const ORDER: Record<Job["status"], number> = { downloading: 0, paused: 1, error: 2, cancelled: 3, completed: 4 };

export type Jobs = ReturnType<typeof useJobs>;

export const useJobs = (ms: number, deps: unknown[] = []) => usePoll<Job[]>(() => getJson("/v1/downloads"), ms, deps);
export const useInstalls = (ms: number, deps: unknown[] = []) => usePoll<Install[]>(() => getJson("/v1/installs"), ms, deps);
type Installs = ReturnType<typeof useInstalls>;

const size = (bytes: number) => (bytes >= 1e9 ? `${(bytes / 1e9).toFixed(2)} GB` : `${(bytes / 1e6).toFixed(1)} MB`);
const duration = (s: number) => (s >= 3600 ? `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min` : s >= 60 ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s` : `${Math.ceil(s)} s`);

/** Bytes per second of each running job, from its last two snapshots. */
function useSpeeds(jobs: Job[] | undefined): Record<string, number> {
  const last = useRef<Record<string, { bytes: number; at: number; speed: number }>>({});
  const now = performance.now();
  for (const j of jobs ?? []) {
    const prev = last.current[j.id];
    if (!prev || !j.running) last.current[j.id] = { bytes: j.overall_bytes_downloaded, at: now, speed: 0 };
    else if (j.overall_bytes_downloaded !== prev.bytes && now > prev.at) {
      last.current[j.id] = { bytes: j.overall_bytes_downloaded, at: now, speed: ((j.overall_bytes_downloaded - prev.bytes) * 1000) / (now - prev.at) };
    }
  }
  return Object.fromEntries(Object.entries(last.current).map(([id, v]) => [id, v.speed]));
}


/** `jobs` and `installs` are the app shell's polls, which the nav badge shares. */
export function Downloads({ jobs, installs }: { jobs: Jobs; installs: Installs }) {
  const speeds = useSpeeds(jobs.data);
  const [message, setMessage] = useState("");
  const act = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
      setMessage("");
    } catch (err) {
      setMessage(`${what} failed: ${(err as Error).message}`);
    }
    jobs.refresh();
  };
  const control = (j: Job, action: "pause" | "cancel" | "remove") => act(`${action} ${j.model_name}`, () => postJson("/v1/downloads/control", { id: j.id, action }));
  // A stopped job goes on from its partial files (or from the start after a cancel) with a new pull;
  // a backend install's job (`<recipe>:<backend>`) starts over with a new install.
  const restart = (j: Job, what: string) =>
    act(`${what} ${j.model_name}`, () => {
      if (j.type !== "backend") return postJson("/v1/pull", { model_name: j.model_name, stream: true, subscribe: false });
      const [recipe, backend] = j.model_name.split(":");
      return postJson("/v1/install", { recipe, backend, stream: true, subscribe: false });
    });
  const list = [...(jobs.data ?? [])].sort((a, b) => ORDER[a.status] - ORDER[b.status]);
  const finished = list.filter((j) => j.status === "completed" || j.status === "cancelled");
  return (
    <section class="downloads">
      <h2>Downloads</h2>
      {jobs.error && <p class="error">{jobs.error}</p>}
      {message && <p class="error" role="alert">{message}</p>}
      {jobs.data && !list.length && !installs.data?.length && <p class="hint">No downloads. Start one in the Model manager.</p>}
      {installs.data && installs.data.length > 0 && (
        <ul class="job-list" aria-label="Engine installs">
          {installs.data.map((i) => (
            <li key={`${i.recipe}:${i.backend}`} class="card" data-install={`${i.recipe}:${i.backend}`}>
              <div class="job-head">
                <strong>
                  {i.recipe} ({i.backend})
                </strong>{" "}
                <span class="badge">installing</span>
              </div>
              <progress max={100} value={i.percent} aria-label={`Install of ${i.recipe}:${i.backend}`} />
              <div class="hint">
                {i.phase}, {Math.round(i.percent)} % · an install cannot be paused, only cancelled (installing again starts over)
              </div>
              <div class="actions">
                <button class="danger" onClick={() => act(`cancel the install of ${i.recipe}:${i.backend}`, () => postJson("/v1/installs/cancel", { recipe: i.recipe, backend: i.backend }).then(installs.refresh))} title="Stops the download or build and deletes what it had fetched">
                  Cancel install
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
      {finished.length > 0 && <button onClick={() => finished.forEach((j) => void control(j, "remove"))}>Clear finished ({finished.length})</button>}
      <ul class="job-list">
        {list.map((j) => {
          const speed = speeds[j.id] ?? 0;
          const left = j.total_download_size - j.overall_bytes_downloaded;
          return (
            <li key={j.id} class="card" data-job={j.model_name} data-status={j.status}>
              <div class="job-head">
                <strong>{j.model_name}</strong> <span class={`badge ${j.status}`}>{j.status}</span>
              </div>
              <progress max={100} value={j.percent} aria-label={`Download of ${j.model_name}`} />
              <div class="hint">
                {j.percent}% · {size(j.overall_bytes_downloaded)} of {size(j.total_download_size)}
                {j.running && speed > 0 && ` · ${size(speed)}/s · ${duration(left / speed)} left`}
                {j.running && j.file && ` · ${j.file}`}
              </div>
              {j.error && <p class="error">{j.error}</p>}
              <div class="actions">
                {j.status === "downloading" && <button onClick={() => control(j, "pause")}>Pause</button>}
                {j.status === "paused" && <button onClick={() => restart(j, "Resume")}>Resume</button>}
                {(j.status === "error" || j.status === "cancelled") && <button onClick={() => restart(j, "Retry")}>Retry</button>}
                {(j.status === "downloading" || j.status === "paused" || j.status === "error") && (
                  <button class="danger" onClick={() => control(j, "cancel")} title="Stops the download and deletes its partial files">
                    Cancel
                  </button>
                )}
                {!j.running && <button onClick={() => control(j, "remove")}>Remove</button>}
              </div>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
