// The status bar: server version, loaded models with their type, memory in use, and the last
// request's tokens/s.
import { getJson } from "./api.ts";
import { usePoll } from "./hooks.ts";

export type Health = ReturnType<typeof useHealth>;

export const useHealth = () => usePoll(() => getJson("/v1/health"), 3000);

/** `health` is the app shell's poll, which its toasts share. */
export function StatusBar({ health }: { health: Health }) {
  const stats = usePoll(() => getJson("/v1/stats"), 3000);
  const system = usePoll(() => getJson("/v1/system-stats"), 5000);
  if (health.error) return <footer class="status error">Server unreachable: {health.error}</footer>;
  const loaded = (health.data?.all_models_loaded ?? []) as { model_name: string; type: string }[];
  return (
    <footer class="status" aria-label="Server status">
      <span>Lemonade {health.data?.version ?? "…"}</span>
      <span data-testid="loaded">{loaded.length ? loaded.map((m) => `${m.model_name} (${m.type})`).join(", ") : "no model loaded"}</span>
      {system.data && <span>RAM in use {system.data.memory_gb.toFixed(1)} GiB</span>}
      {stats.data?.tokens_per_second ? <span>last: {stats.data.tokens_per_second.toFixed(1)} tokens/s</span> : null}
    </footer>
  );
}
