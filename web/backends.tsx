// Backends: each recipe's backends with their state from /v1/system-info; install (with the
// build's progress) and uninstall; the next step when one is missing.
import { useState } from "preact/hooks";
import { events, getJson, postJson, request } from "./api.ts";
import { usePoll } from "./hooks.ts";

/** Backends that are part of the server itself (onnxruntime-node from npm, espeak-ng and binaries on
 * PATH as `system`): installed, and nothing to uninstall. */
const builtIn = (recipe: string, backend: string) => recipe === "cloud" || backend === "espeak" || backend === "system" || `${recipe}:${backend}` === "onnxruntime:cpu";

/** A cloud provider (any OpenAI-compatible server) added with its key; the key stays in the server's memory. */
function CloudProvider({ onDone }: { onDone: () => void }) {
  const [form, setForm] = useState({ provider: "", base_url: "", api_key: "" });
  // A key sent to an http:// provider travels in the clear: the server takes it only on this opt-in.
  const [insecure, setInsecure] = useState(false);
  const [message, setMessage] = useState("");
  const field = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value });
  const add = async (e: Event) => {
    e.preventDefault();
    try {
      const res = await postJson("/v1/install", { backend: "cloud", provider: form.provider, base_url: form.base_url, ...(form.api_key ? { api_key: form.api_key } : {}), ...(insecure ? { allow_insecure_http: true } : {}) });
      setMessage(`Added ${res.provider}: ${res.models_discovered} model(s) found${res.warning ? `; ${res.warning}` : ""}.`);
      setForm({ ...form, api_key: "" });
      onDone();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  return (
    <details class="register">
      <summary>Add a cloud provider</summary>
      <form onSubmit={add} class="filters">
        <label>
          Provider name <input required value={form.provider} onInput={field("provider")} placeholder="fireworks" />
        </label>
        <label>
          Base URL <input required type="url" value={form.base_url} onInput={field("base_url")} placeholder="https://api.example.com/v1" />
        </label>
        <label>
          API key <input type="password" autocomplete="off" value={form.api_key} onInput={field("api_key")} />
        </label>
        {form.base_url.startsWith("http://") && (
          <label>
            <input type="checkbox" checked={insecure} onChange={(e) => setInsecure((e.target as HTMLInputElement).checked)} /> Send the key over plain http (unencrypted)
          </label>
        )}
        <button type="submit">Add provider</button>
      </form>
      <p class="hint">The key is kept in the server's memory only; its models appear in the Model manager as provider.model.</p>
      {message && <p role="status">{message}</p>}
    </details>
  );
}

export function Backends() {
  const info = usePoll(() => getJson("/v1/system-info"), 0);
  const [progress, setProgress] = useState<Record<string, string>>({});
  const install = async (recipe: string, backend: string) => {
    const key = `${recipe}:${backend}`;
    setProgress((p) => ({ ...p, [key]: "starting" }));
    try {
      const res = await request("/v1/install", { method: "POST", body: JSON.stringify({ recipe, backend, stream: true }) });
      for await (const { event, data } of events(res)) {
        if (event === "progress") setProgress((p) => ({ ...p, [key]: `${data.phase} ${data.percent}%` }));
        if (event === "error") throw new Error(data.error);
        if (event === "complete") setProgress((p) => ({ ...p, [key]: "installed" }));
      }
    } catch (err) {
      setProgress((p) => ({ ...p, [key]: `failed: ${(err as Error).message}` }));
    }
    info.refresh();
  };
  const uninstall = async (recipe: string, backend: string) => {
    try {
      await postJson("/v1/uninstall", { recipe, backend });
    } catch (err) {
      setProgress((p) => ({ ...p, [`${recipe}:${backend}`]: (err as Error).message }));
    }
    info.refresh();
  };
  if (info.error) return <p class="error">{info.error}</p>;
  if (!info.data) return <p>Loading backends…</p>;
  return (
    <section>
      <CloudProvider onDone={info.refresh} />
      <table class="backends cards">
        <thead>
          <tr>
            <th>Recipe</th>
            <th>Backend</th>
            <th>State</th>
            <th>Version</th>
            <th>Next step</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries<any>(info.data.recipes).flatMap(([recipe, r]) =>
            Object.entries<any>(r.backends).map(([backend, b]) => {
              const key = `${recipe}:${backend}`;
              return (
                <tr key={key} data-backend={key}>
                  <td data-label="Recipe">{recipe}</td>
                  <td data-label="Backend">{backend}</td>
                  <td data-label="State" class={`state ${b.state}`}>{progress[key] ?? b.state}</td>
                  <td data-label="Version">{b.version ?? ""}</td>
                  <td data-label="Next step">{b.action || b.message || (builtIn(recipe, backend) ? "built in" : "")}</td>
                  <td data-label="Actions" class="actions">
                    {b.state === "installable" || b.state === "update_required" ? (
                      <button onClick={() => install(recipe, backend)}>
                        Install
                      </button>
                    ) : null}
                    {b.state === "installed" && !builtIn(recipe, backend) ? (
                      <button onClick={() => uninstall(recipe, backend)}>
                        Uninstall
                      </button>
                    ) : null}
                  </td>
                </tr>
              );
            }),
          )}
        </tbody>
      </table>
    </section>
  );
}
