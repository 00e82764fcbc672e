// Settings: the server's configuration as GET /internal/config/schema describes it (booleans as
// switches, numbers with their bounds, lists as selects, each key's description), its values from
// GET /internal/config, saved with POST /internal/set; a value is never coerced: what does not
// parse is refused at its field, and so is what the server refuses. Also the API key this browser sends.
import { useState } from "preact/hooks";
import { ApiError, apiKey, getJson, postJson } from "./api.ts";
import { usePoll } from "./hooks.ts";

export interface SettingSchema {
  type: string;
  default: unknown;
  description?: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  special?: number;
  integer?: boolean;
}

/** `a.b.c` of a nested object. */
const at = (config: Record<string, unknown>, key: string): unknown => key.split(".").reduce<unknown>((node, part) => (node && typeof node === "object" ? (node as Record<string, unknown>)[part] : undefined), config);

/** The value typed into a field, or why it is not one the setting takes. */
export function parse(text: string, s: SettingSchema): { value?: unknown; problem?: string } {
  if (s.type !== "number") return { value: text };
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n)) return { problem: "must be a number" };
  if (n === s.special) return { value: n };
  if (s.integer && !Number.isInteger(n)) return { problem: "must be a whole number" };
  const range = `${s.special !== undefined ? `${s.special} or ` : ""}${s.minimum ?? "…"} to ${s.maximum ?? "…"}`;
  if ((s.minimum !== undefined && n < s.minimum) || (s.maximum !== undefined && n > s.maximum)) return { problem: `must be ${range}` };
  return { value: n };
}

function Field({ name, s, value, edit, problem, onEdit }: { name: string; s: SettingSchema; value: unknown; edit?: string | boolean; problem?: string; onEdit: (v: string | boolean) => void }) {
  const id = `set-${name}`;
  const described = [s.description ? `${id}-doc` : "", problem ? `${id}-problem` : ""].filter(Boolean).join(" ") || undefined;
  const common = { id, "aria-describedby": described, "aria-invalid": problem ? ("true" as const) : undefined };
  let input;
  if (s.type === "boolean") {
    input = <input {...common} type="checkbox" role="switch" class="switch" checked={Boolean(edit ?? value)} onChange={(e) => onEdit((e.target as HTMLInputElement).checked)} />;
  } else if (s.enum) {
    input = (
      <select {...common} value={String(edit ?? value)} onChange={(e) => onEdit((e.target as HTMLSelectElement).value)}>
        {s.enum.map((v) => (
          <option key={v}>{v}</option>
        ))}
      </select>
    );
  } else if (s.type === "number") {
    // A text field, not type=number: the browser would turn "lots" into an empty value silently.
    input = <input {...common} inputMode="decimal" value={String(edit ?? value)} onInput={(e) => onEdit((e.target as HTMLInputElement).value)} />;
  } else {
    input = <input {...common} value={String(edit ?? value ?? "")} onInput={(e) => onEdit((e.target as HTMLInputElement).value)} />;
  }
  const bounds =
    s.type === "number" && (s.minimum !== undefined || s.maximum !== undefined)
      ? ` (${s.special !== undefined ? `${s.special}, or ` : ""}${s.minimum ?? "…"} to ${s.maximum ?? "…"}${s.integer ? ", whole numbers" : ""})`
      : "";
  return (
    <div class="setting" data-setting={name}>
      <label for={id}>{name}</label>
      <div>
        {input}
        {problem && (
          <span class="field-error" id={`${id}-problem`} role="alert">
            {problem}
          </span>
        )}
      </div>
      {(s.description || bounds) && (
        <div class="doc" id={`${id}-doc`}>
          {s.description}
          {bounds}
        </div>
      )}
    </div>
  );
}

export function Settings() {
  const [key, setKey] = useState(apiKey.get());
  const config = usePoll(() => getJson("/internal/config"), 0);
  const schema = usePoll<Record<string, SettingSchema>>(() => getJson("/internal/config/schema"), 0);
  const [edits, setEdits] = useState<Record<string, string | boolean>>({});
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [message, setMessage] = useState("");
  const [showAll, setShowAll] = useState(false);
  const keys = Object.keys(schema.data ?? {}).filter((k) => ["string", "number", "boolean"].includes(schema.data![k]!.type));
  const shown = showAll ? keys : keys.filter((k) => schema.data![k]!.description);
  const edit = (k: string, v: string | boolean) => {
    setEdits({ ...edits, [k]: v });
    setProblems({ ...problems, [k]: typeof v === "string" ? (parse(v, schema.data![k]!).problem ?? "") : "" });
  };
  const save = async () => {
    const body: Record<string, unknown> = {};
    const found: Record<string, string> = {};
    for (const [k, v] of Object.entries(edits)) {
      const { value, problem } = typeof v === "boolean" ? { value: v } : parse(v, schema.data![k]!);
      if (problem) found[k] = problem;
      else body[k] = value;
    }
    if (Object.keys(found).length) {
      setProblems(found);
      setMessage("Nothing was saved: fix the fields marked.");
      return;
    }
    try {
      const res = await postJson("/internal/set", body);
      setMessage(`Saved. Applied now: ${res.applied.join(", ") || "none"}; at the next start: ${res.saved.join(", ") || "none"}.`);
      setEdits({});
      setProblems({});
      config.refresh();
    } catch (err) {
      // The server names the key it refused (`param`): its message is shown at that field.
      const text = (err as Error).message;
      const named = err instanceof ApiError ? err.param : undefined;
      if (named && named in edits) setProblems({ ...problems, [named]: text });
      setMessage(`Nothing was saved: ${text}`);
    }
  };
  const error = config.error ?? schema.error;
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
          schema.refresh();
          setMessage("Key saved in this browser.");
        }}
      >
        Save key
      </button>
      <h2>Server configuration</h2>
      {error && <p class="error">{error}</p>}
      {config.data && schema.data && (
        <>
          <label>
            <input type="checkbox" role="switch" class="switch" checked={showAll} onChange={(e) => setShowAll((e.target as HTMLInputElement).checked)} /> Also the settings kept for Lemonade that change nothing here
          </label>
          {shown.map((k) => (
            <Field key={k} name={k} s={schema.data![k]!} value={at(config.data, k)} edit={edits[k]} problem={problems[k] || undefined} onEdit={(v) => edit(k, v)} />
          ))}
          <p>
            <button class="primary" onClick={save} disabled={!Object.keys(edits).length}>
              Save settings
            </button>
          </p>
          <details>
            <summary>Every setting as JSON</summary>
            <pre>{JSON.stringify(config.data, null, 2)}</pre>
          </details>
        </>
      )}
      {message && <p role="status">{message}</p>}
    </section>
  );
}
