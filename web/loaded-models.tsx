// The dashboard's table of loaded models (from /v1/health): backend, context, activity, the
// engine's slots in use, the queue, the memory each takes by the server's own estimate (the one
// that admits loads), idle time and pin.
import type { Loaded } from "./api.ts";

const idle = (lastUse: number) => {
  const s = Math.max(0, Date.now() / 1000 - lastUse);
  return s >= 60 ? `${Math.floor(s / 60)} min` : `${Math.round(s)} s`;
};

const bytes = (n: number) => (n >= 1024 ** 3 ? `${(n / 1024 ** 3).toFixed(2)} GiB` : `${(n / 1024 ** 2).toFixed(0)} MiB`);

export function LoadedModels({ loaded }: { loaded: Loaded[] }) {
  const estimated = loaded.filter((m) => m.memory_estimate_bytes !== undefined);
  const total = estimated.reduce((n, m) => n + m.memory_estimate_bytes!, 0);
  return (
    <>
      <h3>Loaded models</h3>
      {loaded.length === 0 ? (
        <p class="hint">No model is loaded.</p>
      ) : (
        <div class="table-wrap">
          {estimated.length > 0 && (
            <p class="hint" data-memory-total>
              {estimated.length === loaded.length ? "Together they take" : `${estimated.length} of them ${estimated.length === 1 ? "takes" : "take"}`} about {bytes(total)} by the server's estimate.
            </p>
          )}
          <table class="cards loaded">
            <thead>
              <tr>
                <th>Model</th>
                <th>Type</th>
                <th>Backend</th>
                <th>Context</th>
                <th>Activity</th>
                <th>Slots in use</th>
                <th>Queue</th>
                <th>Memory</th>
                <th>Idle</th>
                <th>Pinned</th>
              </tr>
            </thead>
            <tbody>
              {loaded.map((m) => (
                <tr key={m.model_name} data-loaded={m.model_name}>
                  <td data-label="Model">{m.model_name}</td>
                  <td data-label="Type">{m.type}</td>
                  <td data-label="Backend">
                    {m.recipe}
                    {m.backend ? `:${m.backend}` : ""}
                  </td>
                  <td data-label="Context">{m.recipe_options?.ctx_size ?? ""}</td>
                  <td data-label="Activity">{m.is_streaming ? "streaming" : m.is_busy ? "busy" : "idle"}</td>
                  <td data-label="Slots in use" data-slots>
                    <meter min={0} max={m.slots} value={m.slots_in_use} aria-label={`Slots of ${m.model_name} in use`} /> {m.slots_in_use} of {m.slots}
                  </td>
                  <td data-label="Queue">{m.queue_depth}</td>
                  <td data-label="Memory" data-memory>
                    {m.memory_estimate_bytes === undefined ? "no estimate" : `≈ ${bytes(m.memory_estimate_bytes)}`}
                  </td>
                  <td data-label="Idle">{m.is_busy ? "0 s" : idle(m.last_use)}</td>
                  <td data-label="Pinned">{m.pinned ? "yes" : "no"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
