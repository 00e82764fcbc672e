// Small things the panels share: polling the server, the log stream kept open, values kept in
// this browser's storage, and saving a file the page made.
import { useEffect, useRef, useState } from "preact/hooks";
import { socket } from "./api.ts";

/** `load()` now and every `ms`; its last value, or its last error's message. */
export function usePoll<T>(load: () => Promise<T>, ms: number, deps: unknown[] = []): { data?: T; error?: string; refresh: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    const run = () =>
      load().then(
        (data) => live && setState({ data }),
        (err) => live && setState((s) => ({ ...s, error: (err as Error).message })),
      );
    void run();
    const timer = ms > 0 ? setInterval(run, ms) : undefined;
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [tick, ...deps]);
  return { ...state, refresh: () => setTick((t) => t + 1) };
}

/** What the log stream's reader is told: each message, and when the stream opens or closes. */
export interface LogStreamHandlers {
  message(msg: any): void;
  open?(): void;
  /** The stream closed; it opens again in `retryMs`. `mounted` says whether the reader still is. */
  closed?(retryMs: number, mounted: () => boolean): void;
}

/** The server's /logs/stream, subscribed from its newest snapshot, while the component is
 * mounted. The stream closes when the server stops or restarts: it is opened again a little later
 * each time (0.5 s, doubling up to 10 s; 0.5 s again once one opens), so a quick restart is
 * followed at once and a server that is away is not asked many times a second. A restarted
 * server numbers its lines anew, hence the snapshot each time. */
export function useLogStream(handlers: LogStreamHandlers): void {
  const current = useRef(handlers);
  current.current = handlers;
  useEffect(() => {
    let ws: WebSocket;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    let attempt = 0;
    const connect = () => {
      ws = socket("/logs/stream");
      ws.onopen = () => {
        attempt = 0;
        current.current.open?.();
        ws.send(JSON.stringify({ type: "logs.subscribe", after_seq: null }));
      };
      ws.onmessage = (ev) => current.current.message(JSON.parse(String(ev.data)));
      ws.onclose = () => {
        if (stopped) return;
        const wait = Math.min(10_000, 500 * 2 ** attempt++);
        timer = setTimeout(connect, wait);
        current.current.closed?.(wait, () => !stopped);
      };
    };
    connect();
    return () => {
      stopped = true;
      clearTimeout(timer);
      ws.close();
    };
  }, []);
}

/** A value kept in localStorage under `key`, as JSON. */
export function useStored<T>(key: string, initial: T): [T, (v: T) => void] {
  const [value, setValue] = useState<T>(() => {
    try {
      const raw = localStorage.getItem(key);
      return raw === null ? initial : (JSON.parse(raw) as T);
    } catch {
      return initial;
    }
  });
  const set = (v: T) => {
    setValue(v);
    try {
      localStorage.setItem(key, JSON.stringify(v));
    } catch {
      // Storage full (a chat with large generated media): the page keeps the value; a reload loses it.
    }
  };
  return [value, set];
}

/** Offers `text` to the user as a downloaded file called `name`. */
export function download(name: string, type: string, text: string): void {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type }));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
