// Settings: the server's configuration (read from /internal/config, saved with /internal/set),
// and the API key this browser sends.
import { useState } from "preact/hooks";
import { apiKey, getJson, postJson } from "./api.ts";
import { usePoll } from "./hooks.ts";

const COMMON = ["max_loaded_models", "ctx_size", "log_level", "offline", "extra_models_dir", "global_timeout"];

export function Settings() {
  const [key, setKey] = useState(apiKey.get());
  const config = usePoll(() => getJson("/internal/config"), 0);
  const [edits, setEdits] = useState<Record<string, string>>({});
  const [message, setMessage] = useState("");
  const save = async () => {
    const body: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(edits)) {
      const before = config.data?.[k];
      body[k] = typeof before === "number" ? Number(v) : typeof before === "boolean" ? v === "true" : v;
    }
    try {
      const res = await postJson("/internal/set", body);
      setMessage(`Saved. Applied now: ${res.applied.join(", ") || "none"}; at the next start: ${res.saved.join(", ") || "none"}.`);
      setEdits({});
      config.refresh();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  return (
    <section class="settings">
      <h2>API key</h2>
      <p>When the server runs with LEMONADE_API_KEY (or an admin key), this browser sends it with every request.</p>
      <label>
        Key <input type="password" autocomplete="off" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
      </label>{" "}
      <button
        onClick={() => {
          apiKey.set(key);
          config.refresh();
          setMessage("Key saved in this browser.");
        }}
      >
        Save key
      </button>
      <h2>Server configuration</h2>
      {config.error && <p class="error">{config.error}</p>}
      {config.data && (
        <>
          <table>
            <tbody>
              {COMMON.filter((k) => k in config.data).map((k) => (
                <tr key={k}>
                  <td>
                    <label for={`set-${k}`}>{k}</label>
                  </td>
                  <td>
                    <input id={`set-${k}`} value={edits[k] ?? String(config.data[k])} onInput={(e) => setEdits({ ...edits, [k]: (e.target as HTMLInputElement).value })} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <button class="primary" onClick={save} disabled={!Object.keys(edits).length}>
            Save settings
          </button>
          <details>
            <summary>Every setting</summary>
            <pre>{JSON.stringify(config.data, null, 2)}</pre>
          </details>
        </>
      )}
      {message && <p role="status">{message}</p>}
    </section>
  );
}
