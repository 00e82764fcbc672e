// Logs: the server's /logs/stream, live, with a level filter, pause and search.
import { useRef, useState } from "preact/hooks";
import { ApiError, getJson } from "./api.ts";
import { useLogStream } from "./hooks.ts";

interface Entry {
  seq: number;
  severity: string;
  line: string;
}

const RANK: Record<string, number> = { Trace: 0, Debug: 1, Info: 2, Warning: 3, Error: 4, Fatal: 5 };
const MAX = 2000;

export function Logs() {
  const [entries, setEntries] = useState<Entry[]>([]);
  const [level, setLevel] = useState("Info");
  const [search, setSearch] = useState("");
  const [paused, setPaused] = useState(false);
  const [state, setState] = useState("connecting");
  const pausedRef = useRef(false);
  pausedRef.current = paused;
  useLogStream({
    open: () => setState("live"),
    message(msg) {
      if (msg.type === "logs.snapshot") setEntries((msg.entries as Entry[]).slice(-MAX));
      else if (msg.type === "logs.entry" && !pausedRef.current) setEntries((e) => [...e, msg.entry].slice(-MAX));
    },
    closed(wait, mounted) {
      setState(`disconnected: reconnecting in ${Math.ceil(wait / 1000)} s`);
      // A socket says nothing of why it closed: a plain request tells a refused key from a server that is away.
      getJson("/v1/health").catch((err) => mounted() && err instanceof ApiError && err.status === 401 && setState("closed: the server needs its API key: set it in Settings"));
    },
  });
  const shown = entries.filter((e) => (RANK[e.severity] ?? 2) >= RANK[level]! && (!search || e.line.toLowerCase().includes(search.toLowerCase())));
  return (
    <section class="logs">
      <div class="filters">
        <label>
          Level{" "}
          <select value={level} onChange={(e) => setLevel((e.target as HTMLSelectElement).value)}>
            {Object.keys(RANK).map((l) => (
              <option key={l}>{l}</option>
            ))}
          </select>
        </label>
        <label>
          Search the log <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        </label>
        <button onClick={() => setPaused(!paused)}>{paused ? "Resume" : "Pause"}</button>
        <span class="hint">{state}</span>
      </div>
      <pre class="log-lines" role="log" tabIndex={0} aria-label="Log lines">
        {shown.map((e) => (
          <div key={e.seq} class={`log ${e.severity}`}>
            {e.line}
          </div>
        ))}
      </pre>
    </section>
  );
}
