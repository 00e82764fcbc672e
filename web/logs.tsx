// Logs: the server's /logs/stream, live, with a level filter, pause and search.
import { useEffect, useRef, useState } from "preact/hooks";
import { socket } from "./api.ts";

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
  useEffect(() => {
    const ws = socket("/logs/stream");
    const add = (list: Entry[]) => !pausedRef.current && setEntries((e) => [...e, ...list].slice(-MAX));
    ws.onopen = () => {
      setState("live");
      ws.send(JSON.stringify({ type: "logs.subscribe", after_seq: null }));
    };
    ws.onmessage = (ev) => {
      const msg = JSON.parse(String(ev.data));
      if (msg.type === "logs.snapshot") add(msg.entries);
      else if (msg.type === "logs.entry") add([msg.entry]);
    };
    ws.onclose = () => setState("closed: check the API key in Settings if the server needs one");
    return () => ws.close();
  }, []);
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
          Search <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        </label>
        <button onClick={() => setPaused(!paused)}>{paused ? "Resume" : "Pause"}</button>
        <span class="hint">{state}</span>
      </div>
      <pre class="log-lines" aria-live="polite">
        {shown.map((e) => (
          <div key={e.seq} class={`log ${e.severity}`}>
            {e.line}
          </div>
        ))}
      </pre>
    </section>
  );
}
