// Small things the panels share: polling the server, values kept in this browser's storage, and
// saving a file the page made.
import { useEffect, useState } from "preact/hooks";

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
