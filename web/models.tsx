// Model manager: the catalog with filters; downloads as server-owned jobs (they survive a reload)
// with pause, resume and cancel; load, unload, pin, delete, export; a per-model options editor;
// registering a Hugging Face checkpoint (or a published Omni collection) as a user model; and
// making or changing routers and Omni collections (web/collections.tsx).
import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { activeJob, bareName, displayName, getJson, installPhase, isJobOf, postJson, pullable, type Loaded, type Model } from "./api.ts";
import { download, usePoll } from "./hooks.ts";
import type { Jobs } from "./downloads.tsx";
import { Collections, OMNI as COLLECTION, ROUTER } from "./collections.tsx";

/** The model manager's sections, by `rank` in `Models`. */
const SECTIONS = ["Downloading", "Loaded", "Downloaded", "Suggested for this machine", "All models"];

/** A listed model; a collection adds the names of its components (none until a published one is downloaded). */
type Listed = Model & { components?: string[] };

/** A typed option value from the editor's text, or the reason it is not one. */
function parseOption(text: string, like: unknown): { value?: unknown; problem?: string } {
  if (typeof like === "number") {
    const n = Number(text);
    if (text.trim() === "" || !Number.isFinite(n)) return { problem: "must be a number" };
    return { value: n };
  }
  return { value: text };
}

function OptionsEditor({ id, onClose }: { id: string; onClose: () => void }) {
  const { data, error, refresh } = usePoll(() => getJson(`/v1/models/${encodeURIComponent(id)}/options`), 0, [id]);
  const [edits, setEdits] = useState<Record<string, unknown>>({});
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [message, setMessage] = useState("");
  if (error) return <p class="error">{error}</p>;
  if (!data) return <p>Loading options…</p>;
  // model_name names the model the options belong to: it is shown, not edited.
  const keys = Object.keys(data.effective).filter((k) => k !== "model_name");
  const like = (k: string) => data.defaults?.[k] ?? data.effective[k];
  const edit = (k: string, text: string) => {
    const { value, problem } = parseOption(text, like(k));
    setProblems({ ...problems, [k]: problem ?? "" });
    setEdits({ ...edits, [k]: problem ? text : value });
  };
  const save = async (body: Record<string, unknown>) => {
    if (Object.values(problems).some(Boolean)) return setMessage("Fix the values marked first; nothing was saved.");
    try {
      await postJson(`/v1/models/${encodeURIComponent(id)}/options`, body);
      setMessage("Saved; the next load uses them.");
      setEdits({});
      refresh();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  // A load for this once, the saved options left as they are.
  const loadWith = async () => {
    if (Object.values(problems).some(Boolean)) return setMessage("Fix the values marked first; nothing was loaded.");
    setMessage(`Loading ${id}…`);
    try {
      await postJson("/v1/load", { ...data.effective, ...edits, model_name: id });
      setMessage(`Loaded ${id} with these options.`);
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  return (
    <div class="options" role="dialog" aria-label={`Options of ${id}`}>
      <h3>Options of {id}</h3>
      <p>
        Recipe {data.recipe}; context size the next load uses: {data.resolved_ctx_size ?? "n/a"}
      </p>
      <div class="table-wrap">
        <table class="cards">
          <thead>
            <tr>
              <th>Option</th>
              <th>Effective</th>
              <th>Default</th>
              <th>Saved</th>
              <th>New value</th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => {
              const saved = k in (data.saved ?? {});
              const input =
                typeof like(k) === "boolean" ? (
                  <input
                    type="checkbox"
                    role="switch"
                    aria-label={`New ${k}`}
                    checked={Boolean(k in edits ? edits[k] : data.effective[k])}
                    onChange={(e) => setEdits({ ...edits, [k]: (e.target as HTMLInputElement).checked })}
                  />
                ) : (
                  <input
                    aria-label={`New ${k}`}
                    name={k}
                    inputMode={typeof like(k) === "number" ? "decimal" : undefined}
                    aria-invalid={problems[k] ? "true" : undefined}
                    aria-describedby={problems[k] ? `problem-${k}` : undefined}
                    value={k in edits ? String(edits[k]) : ""}
                    onInput={(e) => edit(k, (e.target as HTMLInputElement).value)}
                  />
                );
              return (
                <tr key={k}>
                  <td data-label="Option">{k}</td>
                  <td data-label="Effective">{String(data.effective[k])}</td>
                  <td data-label="Default">{String(data.defaults?.[k] ?? "")}</td>
                  <td data-label="Saved">
                    {saved ? String(data.saved[k]) : ""}
                    {saved && (
                      <button class="link" aria-label={`Clear saved ${k}`} onClick={() => save({ [k]: null })}>
                        clear
                      </button>
                    )}
                  </td>
                  <td data-label="New value">
                    {input}
                    {problems[k] && (
                      <span class="error" id={`problem-${k}`}>
                        {" "}
                        {k} {problems[k]}
                      </span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <button class="primary" onClick={() => save(edits)} disabled={!Object.keys(edits).length}>
        Save options
      </button>{" "}
      <button onClick={loadWith}>Load with these options</button>{" "}
      <button onClick={onClose}>Close</button>
      {message && <p role="status">{message}</p>}
    </div>
  );
}

function Register({ onDone }: { onDone: () => void }) {
  const [query, setQuery] = useState("");
  const [results, setResults] = useState<any[]>([]);
  const [repo, setRepo] = useState("");
  const [variants, setVariants] = useState<any>(null);
  const [message, setMessage] = useState("");
  const search = async (e: Event) => {
    e.preventDefault();
    try {
      setResults((await getJson(`/v1/registry/search?query=${encodeURIComponent(query)}&format=gguf`)).results);
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  const inspect = async (checkpoint: string) => {
    setRepo(checkpoint);
    try {
      setVariants(await getJson(`/v1/pull/variants?checkpoint=${encodeURIComponent(checkpoint)}`));
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  const pullOmni = async () => {
    const name = `user.${variants.suggested_name}`;
    try {
      // The job installs the whole collection: its manifest, then each component.
      await postJson("/v1/pull", { model_name: name, checkpoint: variants.checkpoint, recipe: COLLECTION, stream: true, subscribe: false });
      setMessage(`Downloading ${name}`);
      onDone();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  const pull = async (variant: string) => {
    try {
      await postJson("/v1/pull", {
        model_name: `user.${variants.suggested_name}-${variant}`,
        checkpoint: `${repo}:${variant}`,
        recipe: "llamacpp",
        ...(variants.mmproj_files?.[0] ? { mmproj: variants.mmproj_files[0] } : {}),
        ...(variants.suggested_labels?.length ? { labels: variants.suggested_labels } : {}),
        stream: true,
        subscribe: false,
      });
      setMessage(`Downloading ${repo}:${variant}`);
      onDone();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  return (
    <details class="register">
      <summary>Add a model from Hugging Face</summary>
      <form onSubmit={search}>
        <label>
          Search Hugging Face <input value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} placeholder="qwen3 gguf" />
        </label>{" "}
        <button type="submit">Search</button>{" "}
        <label>
          or a repository <input value={repo} onInput={(e) => setRepo((e.target as HTMLInputElement).value)} placeholder="org/name-GGUF" />
        </label>{" "}
        <button type="button" onClick={() => inspect(repo)}>
          Show variants
        </button>
      </form>
      {results.map((r) => (
        <button key={r.repository_id} class="link" onClick={() => inspect(r.repository_id)}>
          {r.repository_id}
        </button>
      ))}
      {variants?.repo_kind === "collection" ? (
        <p>
          Omni collection with {variants.component_count} components <button onClick={pullOmni}>Download</button>
        </p>
      ) : variants && (
        <ul>
          {variants.variants.map((v: any) => (
            <li key={v.name}>
              {v.name} ({(v.size_bytes / 1e9).toFixed(2)} GB) <button onClick={() => pull(v.name)}>Download</button>
            </li>
          ))}
        </ul>
      )}
      {message && <p role="status">{message}</p>}
    </details>
  );
}

/** The name an exported model registers under: /v1/pull registers user models only. */
const userName = (m: Model) => `user.${bareName(m)}`;

/** A model's definition as an import-ready /v1/pull body, the file `lemonade export` writes
 * (cli/commands/models.ts, whose shape this follows): a collection carries each component's
 * definition, a router its policy. */
function exportBody(m: any): Record<string, unknown> {
  if ((m.recipe === COLLECTION || m.recipe === ROUTER) && m.components?.length) {
    const models = (m.models ?? []).flatMap((d: any, i: number) => (d ? [{ ...exportBody(d), model_name: m.components[i] }] : []));
    return {
      model_name: userName(m),
      recipe: m.recipe,
      components: m.components,
      models,
      ...(m.routing ? { version: m.version, routing: m.routing } : {}),
      ...(m.system_prompt ? { system_prompt: m.system_prompt } : {}),
    };
  }
  const body: Record<string, unknown> = { model_name: userName(m), recipe: m.recipe, checkpoints: m.checkpoints, labels: m.labels };
  if (m.size !== undefined) body.size = m.size;
  if (m.recipe_options && Object.keys(m.recipe_options).length) body.recipe_options = m.recipe_options;
  return body;
}

/** Whether Delete can work: a model with files of its own in the cache (none for a model of the extra models folder,
 * whose file belongs to its folder, a cloud model, or a built-in engine's that serves without files),
 * or a collection's entry. */
const deletable = (m: Listed) =>
  m.recipe.startsWith("collection.") || (m.downloaded && m.source !== "extra_models_dir" && m.source !== "cloud" && (m.checkpoint_status ?? []).some((c) => c.present));

/** Deleting a collection removes only its entry: its components are models of their own. */
const deletePrompt = (m: Listed) =>
  m.recipe === COLLECTION
    ? `Delete the collection ${m.id}? Only the collection entry is removed; its components (${m.components?.join(", ")}) stay downloaded.`
    : `Delete ${m.id} and its files?`;

export function Models({ jobs }: { jobs: Jobs }) {
  const models = usePoll(() => getJson("/v1/models?show_all=true"), 2000);
  const health = usePoll(() => getJson("/v1/health"), 2000);
  const [filter, setFilter] = useState(() => ({ search: "", recipe: "", label: new URLSearchParams(location.hash.split("?")[1] ?? "").get("label") ?? "", downloaded: false }));
  const [options, setOptions] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [message, setMessage] = useState("");
  const all: Listed[] = models.data?.data ?? [];
  const loaded = new Map<string, Loaded>(((health.data?.all_models_loaded ?? []) as Loaded[]).map((m) => [m.model_name, m]));
  const jobOf = (m: Model) => jobs.data?.find((j) => isJobOf(j, m) && activeJob(j));
  /** `started` is what to say once a background job (a download) has begun, rather than "done". */
  const act = async (what: string, fn: () => Promise<unknown>, started?: string) => {
    setMessage(`${what}…`);
    try {
      await fn();
      setMessage(started ?? `${what}: done`);
    } catch (err) {
      setMessage(`${what} failed: ${(err as Error).message}`);
    }
    models.refresh();
    health.refresh();
    jobs.refresh();
  };
  // Models being loaded, with what each waits for: an engine install (polled, as chat does) or the load itself.
  const [loading, setLoading] = useState<Record<string, string>>({});
  const load = async (m: Listed) => {
    const say = (phase: string) => setLoading((l) => (m.id in l ? { ...l, [m.id]: phase } : l));
    setLoading((l) => ({ ...l, [m.id]: `Loading ${m.id}…` }));
    const watch = setInterval(async () => say((await installPhase(m.recipe)) ?? `Loading ${m.id}…`), 1000);
    await act(`Load ${m.id}`, () => postJson("/v1/load", { model_name: m.id }));
    clearInterval(watch);
    setLoading(({ [m.id]: _, ...rest }) => rest);
  };
  const shown = all.filter(
    (m) =>
      (!filter.search || m.id.toLowerCase().includes(filter.search.toLowerCase())) &&
      (!filter.recipe || m.recipe === filter.recipe) &&
      (!filter.label || m.labels.includes(filter.label)) &&
      (!filter.downloaded || m.downloaded),
  );
  // What is moving first (downloads), then loaded, then downloaded, then what suits this machine, then the rest.
  const rank = (m: Model) => (jobOf(m) ? 0 : loaded.has(m.id) ? 1 : m.downloaded ? 2 : m.suggested ? 3 : 4);
  shown.sort((a, b) => rank(a) - rank(b));
  // The filter asked for (`#models?label=image`) is an option before the list arrives, so the select shows it.
  const recipes = [...new Set([...all.map((m) => m.recipe), ...(filter.recipe ? [filter.recipe] : [])])].sort();
  const labels = [...new Set([...all.flatMap((m) => m.labels), ...(filter.label ? [filter.label] : [])])].sort();
  return (
    <section class="models">
      <div class="filters">
        <label>
          Filter models <input type="search" value={filter.search} onInput={(e) => setFilter({ ...filter, search: (e.target as HTMLInputElement).value })} />
        </label>
        <label>
          Recipe{" "}
          <select value={filter.recipe} onChange={(e) => setFilter({ ...filter, recipe: (e.target as HTMLSelectElement).value })}>
            <option value="">any</option>
            {recipes.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </label>
        <label>
          Label{" "}
          <select value={filter.label} onChange={(e) => setFilter({ ...filter, label: (e.target as HTMLSelectElement).value })}>
            <option value="">any</option>
            {labels.map((l) => (
              <option key={l}>{l}</option>
            ))}
          </select>
        </label>
        <label>
          <input type="checkbox" checked={filter.downloaded} onChange={(e) => setFilter({ ...filter, downloaded: (e.target as HTMLInputElement).checked })} /> Downloaded only
        </label>
      </div>
      <Register onDone={jobs.refresh} />
      <Collections
        models={all}
        editing={editing}
        onClose={() => setEditing(null)}
        onDone={(text) => {
          setMessage(text);
          setEditing(null);
          models.refresh();
          jobs.refresh();
        }}
      />
      {message && <p role="status">{message}</p>}
      {models.error && <p class="error">{models.error}</p>}
      {options && <OptionsEditor id={options} onClose={() => setOptions(null)} />}
      <div class="table-wrap">
      <table class="catalog cards">
        <thead>
          <tr>
            <th>Model</th>
            <th>Recipe</th>
            <th>Size</th>
            <th>Labels</th>
            <th>State</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((m, i) => {
            const job = jobOf(m);
            // A stopped job goes on with a pull of its name, while that name still names this model.
            const resumable = job !== undefined && (job.model_name === m.id || job.model_name === m.canonical_id);
            const slot = loaded.get(m.id);
            const section = SECTIONS[rank(m)]!;
            const first = i === 0 || SECTIONS[rank(shown[i - 1]!)] !== section;
            return (
              <Fragment key={m.id}>
              {first && (
                <tr class="section">
                  <th colSpan={6} scope="rowgroup">
                    {section}
                  </th>
                </tr>
              )}
              <tr data-model={m.id}>
                <td data-label="Model">
                  {displayName(m)}
                  {m.update_available && <span class="badge"> update available</span>}
                  {m.recipe === COLLECTION && (
                    <div class="hint">{m.components?.length ? `collection of ${m.components.join(", ")}` : "collection; its components are listed once it is downloaded"}</div>
                  )}
                </td>
                <td data-label="Recipe">{m.recipe}</td>
                <td data-label="Size">{m.size !== undefined ? `${m.size} GB` : ""}</td>
                <td data-label="Labels">{m.labels.join(", ")}</td>
                <td data-label="State" data-state={job ? "downloading" : slot ? "loaded" : m.downloaded ? "downloaded" : "available"}>
                  {job ? (
                    <span class="job">
                      <progress max={100} value={job.percent} aria-label={`Download of ${m.id}`} /> {job.percent}% {job.status}
                      {job.error && <span class="error"> {job.error}</span>}
                    </span>
                  ) : loading[m.id] ? (
                    <span class="phase" role="status">
                      {loading[m.id]}
                    </span>
                  ) : slot ? (
                    `loaded${slot.pinned ? ", pinned" : ""}`
                  ) : m.downloaded ? (
                    "downloaded"
                  ) : (
                    ""
                  )}
                </td>
                <td class="actions" data-label="Actions">
                  <div class="buttons">
                  {job && job.status === "downloading" && <button onClick={() => act(`Pause ${m.id}`, () => postJson("/v1/downloads/control", { id: job.id, action: "pause" }))}>Pause</button>}
                  {job && job.status !== "downloading" && resumable && (
                    <button onClick={() => act(`Resume ${m.id}`, () => postJson("/v1/pull", { model_name: job.model_name, stream: true, subscribe: false }), `Download of ${m.id} resumed`)}>
                      {job.status === "error" ? "Retry" : "Resume"}
                    </button>
                  )}
                  {job && <button onClick={() => act(`Cancel ${m.id}`, () => postJson("/v1/downloads/control", { id: job.id, action: "cancel" }))}>Cancel</button>}
                  {!job && !m.downloaded && pullable(m) && (
                    <button onClick={() => act(`Download ${m.id}`, () => postJson("/v1/pull", { model_name: m.id, stream: true, subscribe: false }), `Download of ${m.id} started; follow it in Downloads`)}>
                      Download
                    </button>
                  )}
                  {((!job && !m.downloaded && !pullable(m)) || (job && job.status !== "downloading" && !resumable)) && <span class="hint">not downloadable while {bareName(m)} names another model</span>}
                  {m.downloaded && !slot && (
                    <button disabled={m.id in loading} onClick={() => void load(m)}>
                      Load
                    </button>
                  )}
                  {slot && <button onClick={() => act(`Unload ${m.id}`, () => postJson("/v1/unload", { model_name: m.id }))}>Unload</button>}
                  {slot && (
                    <button onClick={() => act(`${slot.pinned ? "Unpin" : "Pin"} ${m.id}`, () => postJson("/internal/pin", { model_name: m.id, pinned: !slot.pinned }))}>{slot.pinned ? "Unpin" : "Pin"}</button>
                  )}
                  {!m.recipe.startsWith("collection.") && <button onClick={() => setOptions(m.id)}>Options</button>}
                  {m.recipe.startsWith("collection.") && <button onClick={() => setEditing(m.id)}>Edit</button>}
                  {/* What is here to share: a catalog model not downloaded is shared by its name already. */}
                  {m.source !== "cloud" && m.downloaded && (
                    <button
                      onClick={() =>
                        act(`Export ${m.id}`, async () => {
                          const body = exportBody(await getJson(`/v1/models/${encodeURIComponent(m.id)}`));
                          download(`${String(body.model_name).replace(/^user\./, "")}.json`, "application/json", JSON.stringify(body, null, 2) + "\n");
                        })
                      }
                    >
                      Export
                    </button>
                  )}
                  {deletable(m) && (
                    <button
                      class="danger"
                      onClick={() => confirm(deletePrompt(m)) && act(`Delete ${m.id}`, () => postJson("/v1/delete", { model_name: m.id }))}
                    >
                      Delete
                    </button>
                  )}
                  </div>
                </td>
              </tr>
              </Fragment>
            );
          })}
        </tbody>
      </table>
      </div>
    </section>
  );
}
