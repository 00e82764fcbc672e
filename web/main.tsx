// The web app: one page with a panel per task, switched by the address's #fragment, a status bar,
// a theme toggle (system, light, dark) and toasts for what happens in the background.
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import "./style.css";
import { Chat } from "./chat.tsx";
import { Models } from "./models.tsx";
import { Backends } from "./backends.tsx";
import { Logs } from "./logs.tsx";
import { Settings } from "./settings.tsx";
import { TryIt } from "./tryit.tsx";
import { StatusBar, useHealth } from "./status.tsx";
import { Dashboard } from "./dashboard.tsx";
import { Compare } from "./compare.tsx";
import { Downloads, useInstalls, useJobs } from "./downloads.tsx";
import { useLogStream, useStored } from "./hooks.ts";
import type { Job } from "./api.ts";

const PANELS = [
  ["chat", "Chat"],
  ["models", "Model manager"],
  ["downloads", "Downloads"],
  ["compare", "Compare"],
  ["dashboard", "Dashboard"],
  ["try", "Try it"],
  ["backends", "Backends"],
  ["logs", "Logs"],
  ["settings", "Settings"],
] as const;
type Panel = (typeof PANELS)[number][0];

const current = (): Panel => {
  // `#models?label=tts`: a panel, and what it opens with.
  const hash = location.hash.slice(1).split("?")[0];
  return (PANELS.find(([id]) => id === hash)?.[0] ?? "chat") as Panel;
};

type Theme = "system" | "light" | "dark";

/** How long a toast that is not an error stays. */
const TOAST_MS = 6000;

interface Toast {
  id: number;
  text: string;
  error?: boolean;
}

/** What the scheduler logs when an engine exits on its own (runtime/scheduler.ts, onExit). */
const CRASH = /The engine for (\S+) \(pid (\d+)\) exited unexpectedly with code (-?\d+)/;

/** Calls `onCrash` for each engine that exits unexpectedly from now on, as the server's log
 * stream tells it (the snapshot of earlier lines is skipped: those are old news). */
function useEngineCrashes(onCrash: (model: string, pid: number, code: string) => void): void {
  useLogStream({
    message(msg) {
      const found = msg.type === "logs.entry" ? CRASH.exec(msg.entry.line) : null;
      if (found) onCrash(found[1]!, Number(found[2]), found[3]!);
    },
  });
}

/** Toasts for download jobs that finished or failed, models that left memory since the last poll,
 * and engines that crashed. */
function useToasts(jobs: Job[] | undefined, entries: { model_name: string; pid: number }[] | undefined): [Toast[], (id: number) => void] {
  const loaded = entries?.map((m) => m.model_name);
  // The log names a model by the server's own id; health by its listed id: the pid joins the two.
  const byPid = useRef(new Map<number, string>());
  for (const m of entries ?? []) byPid.current.set(m.pid, m.model_name);
  const [toasts, setToasts] = useState<Toast[]>([]);
  const seen = useRef<Map<string, Job["status"]> | null>(null);
  const resident = useRef<string[] | null>(null);
  // When each model's engine last crashed: its leaving memory soon after is told by the crash's own toast.
  const crashed = useRef(new Map<string, number>());
  const next = useRef(0);
  /** Adds toasts, keeping the last four; all but errors go by themselves after a while. */
  const push = (news: Toast[]) => {
    setToasts((t) => [...t, ...news].slice(-4));
    for (const n of news) if (!n.error) setTimeout(() => setToasts((t) => t.filter((x) => x.id !== n.id)), TOAST_MS);
  };
  useEngineCrashes((logged, pid, code) => {
    const model = byPid.current.get(pid) ?? logged;
    crashed.current.set(model, Date.now());
    push([{ id: next.current++, text: `The engine for ${model} crashed (exit code ${code}); the next request starts it again`, error: true }]);
  });
  useEffect(() => {
    if (!loaded) return;
    const before = resident.current;
    resident.current = loaded;
    if (!before) return;
    const gone = before.filter((m) => !loaded.includes(m) && Date.now() - (crashed.current.get(m) ?? 0) > 15_000);
    const came = loaded.filter((m) => !before.includes(m));
    // A model that leaves as another arrives made room for it; one that leaves alone was unloaded
    // (by a client or idle eviction; a crash has its own toast).
    const news = gone.map((m) => ({ id: next.current++, text: came.length ? `${m} was evicted for ${came.join(", ")}` : `${m} was unloaded` }));
    if (news.length) push(news);
  }, [loaded?.join("\n")]);
  useEffect(() => {
    if (!jobs) return;
    const before = seen.current;
    seen.current = new Map(jobs.map((j) => [j.id, j.status]));
    // The first poll is what was there already: nothing new to tell.
    if (!before) return;
    const news: Toast[] = [];
    for (const j of jobs) {
      if (before.get(j.id) === j.status) continue;
      if (j.status === "completed") news.push({ id: next.current++, text: `Download of ${j.model_name} done` });
      if (j.status === "error") news.push({ id: next.current++, text: `Download of ${j.model_name} failed: ${j.error ?? "error"}`, error: true });
    }
    if (news.length) push(news);
  }, [jobs]);
  return [toasts, (id) => setToasts((t) => t.filter((x) => x.id !== id))];
}

function App() {
  const [panel, setPanel] = useState<Panel>(current());
  useEffect(() => {
    const onHash = () => setPanel(current());
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  const go = (p: Panel) => (location.hash = p);
  // One poll of the jobs for the badge, the toasts and the panels that show them: faster while one is open.
  const every = panel === "models" || panel === "downloads" ? 1000 : 3000;
  const jobs = useJobs(every, [panel]);
  const installs = useInstalls(every, [panel]);
  // Engine installs are downloads too (an engine's release, or its build).
  const active = (jobs.data ?? []).filter((j) => j.status === "downloading").length + (installs.data?.length ?? 0);
  const health = useHealth();
  const [toasts, dismiss] = useToasts(jobs.data, health.data?.all_models_loaded as { model_name: string; pid: number }[] | undefined);
  const [theme, setTheme] = useStored<Theme>("lemonade.theme", "system");
  useEffect(() => {
    if (theme === "system") delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = theme;
  }, [theme]);
  return (
    <div class="app">
      <header>
        <h1>Lemonade</h1>
        <nav aria-label="Panels">
          {PANELS.map(([id, label]) => (
            <button key={id} class={panel === id ? "tab active" : "tab"} aria-current={panel === id ? "page" : undefined} onClick={() => go(id)}>
              {label}
              {id === "downloads" && active > 0 && (
                <span class="nav-badge" aria-label={`${active} active`}>
                  {active}
                </span>
              )}
            </button>
          ))}
          <a class="tab" href="/docs">
            API docs
          </a>
        </nav>
        <label class="theme">
          Theme{" "}
          <select value={theme} onChange={(e) => setTheme((e.target as HTMLSelectElement).value as Theme)}>
            <option value="system">system</option>
            <option value="light">light</option>
            <option value="dark">dark</option>
          </select>
        </label>
      </header>
      {/* The panel scrolls here, not the page: focusable, so that the keys scroll it too where it holds
          nothing focusable (a dashboard on a phone). */}
      <main tabIndex={0}>
        {panel === "chat" && <Chat onManageModels={() => go("models")} />}
        {panel === "models" && <Models jobs={jobs} />}
        {panel === "downloads" && <Downloads jobs={jobs} installs={installs} />}
        {panel === "compare" && <Compare />}
        {panel === "dashboard" && <Dashboard />}
        {panel === "try" && <TryIt />}
        {panel === "backends" && <Backends />}
        {panel === "logs" && <Logs />}
        {panel === "settings" && <Settings />}
      </main>
      <div class="toasts" role="status" aria-live="polite">
        {toasts.map((t) => (
          <div key={t.id} class={t.error ? "toast error" : "toast"}>
            <p>{t.text}</p>
            <button class="link" aria-label="Dismiss" onClick={() => dismiss(t.id)}>
              ×
            </button>
          </div>
        ))}
      </div>
      <StatusBar health={health} />
    </div>
  );
}

render(<App />, document.getElementById("app")!);
