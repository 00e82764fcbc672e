// Forms that make and change collections: a `collection.router` policy (candidates, a default,
// rules of one condition each, or the whole document as JSON), checked live by
// /v1/routing/validate against the registered models and tried on a test prompt (the rule it
// matches is marked), registered with /v1/models/register; and a `collection.omni` whose
// components are picked per role from the models here, made with /v1/pull (which downloads the
// components not yet downloaded).
import { useEffect, useState } from "preact/hooks";
import { displayName, getJson, postJson, type Model } from "./api.ts";

export const ROUTER = "collection.router";
export const OMNI = "collection.omni";

/** Leaf conditions the form edits; other match shapes (any/all/not, classifiers) are edited as JSON. */
const CONDITIONS = {
  keywords_any: "contains any of the words",
  keywords_all: "contains all of the words",
  regex: "matches the regular expression",
  min_chars: "is at least this many characters",
  max_chars: "is at most this many characters",
  has_images: "carries images",
  has_tools: "carries tools",
} as const;
type Condition = keyof typeof CONDITIONS;

interface RuleRow {
  id: string;
  condition: Condition;
  value: string;
  route_to: string;
}

interface RouterDraft {
  name: string;
  candidates: string[];
  default_model: string;
  rules: RuleRow[];
}

/** Labels of models that do not chat. */
const NOT_CHAT = new Set(["image", "edit", "tts", "transcription", "embeddings", "reranking", "classification", "upscaling", "speech", "audio", "3d"]);
const chats = (m: Model) => !m.labels.some((l) => NOT_CHAT.has(l));

const words = (text: string) => text.split(",").map((w) => w.trim()).filter(Boolean);

function matchOf(r: RuleRow): Record<string, unknown> {
  if (r.condition === "keywords_any" || r.condition === "keywords_all") return { [r.condition]: words(r.value) };
  if (r.condition === "min_chars" || r.condition === "max_chars") return { [r.condition]: Number(r.value) };
  if (r.condition === "regex") return { regex: r.value };
  return { [r.condition]: true };
}

function routingOf(d: RouterDraft): Record<string, unknown> {
  return { candidates: d.candidates, default_model: d.default_model, rules: d.rules.map((r) => ({ id: r.id, match: matchOf(r), route_to: r.route_to })) };
}

/** The models a policy names (candidates, classifier and router models): the router's
 * components, which a registration must list. */
function componentsOf(routing: any): string[] {
  const named: unknown[] = [...(routing?.candidates ?? []), ...(routing?.classifiers ?? []).map((c: any) => c?.model), routing?.router?.model];
  return [...new Set(named.filter((n): n is string => typeof n === "string" && n.length > 0))];
}

/** A registered policy as the form's draft, or null when it uses what the form does not edit. */
function draftOf(name: string, routing: any): RouterDraft | null {
  if (!routing || routing.router || routing.classifiers?.length) return null;
  const rules: RuleRow[] = [];
  for (const rule of routing.rules ?? []) {
    const keys = Object.keys(rule.match ?? {});
    const key = keys[0] as Condition;
    if (keys.length !== 1 || !(key in CONDITIONS) || rule.outputs) return null;
    const v = rule.match[key];
    if ((key === "has_images" || key === "has_tools") && v !== true) return null;
    rules.push({ id: rule.id, condition: key, value: Array.isArray(v) ? v.join(", ") : typeof v === "boolean" ? "" : String(v), route_to: rule.route_to });
  }
  return { name, candidates: routing.candidates ?? [], default_model: routing.default_model ?? "", rules };
}

/** Debounced: the policy checked against the registered models, then its decision for the test prompt. */
function useValidation(routing: unknown, prompt: string) {
  const [state, setState] = useState<{ error?: string; decision?: { route_to: string; matched_rule: string; default_used: boolean } }>({});
  const key = JSON.stringify([routing, prompt]);
  useEffect(() => {
    let live = true;
    const timer = setTimeout(async () => {
      try {
        await postJson("/v1/routing/validate", { version: "1", routing });
        const { decision } = await postJson("/v1/routing/validate", { policy: { version: "1", recipe: ROUTER, components: componentsOf(routing), routing }, prompt });
        if (live) setState({ decision });
      } catch (err) {
        if (live) setState({ error: (err as Error).message });
      }
    }, 300);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [key]);
  return state;
}

const bare = (id: string) => id.replace(/^user\./, "");

export function RouterForm({ models, editing, onDone }: { models: Model[]; editing?: { id: string; routing: unknown }; onDone: (message: string) => void }) {
  const chat = models.filter((m) => !m.recipe.startsWith("collection.") && m.downloaded && chats(m));
  const initial = editing ? draftOf(bare(editing.id), editing.routing) : null;
  const [draft, setDraft] = useState<RouterDraft>(initial ?? { name: editing ? bare(editing.id) : "", candidates: [], default_model: "", rules: [] });
  // A policy the form cannot show is edited as its JSON.
  const [asJson, setAsJson] = useState(Boolean(editing && !initial));
  const [json, setJson] = useState(() => JSON.stringify(editing && !initial ? editing.routing : routingOf(draft), null, 2));
  const [prompt, setPrompt] = useState("Write a Python function that reverses a list");
  const [message, setMessage] = useState("");
  let routing: unknown = routingOf(draft);
  let jsonProblem = "";
  if (asJson) {
    try {
      routing = JSON.parse(json);
    } catch (err) {
      jsonProblem = `Not JSON: ${(err as Error).message}`;
    }
  }
  const check = useValidation(routing, prompt);
  // A new, untouched form is not wrong yet: the checker's verdict shows from the first edit on.
  const [touched, setTouched] = useState(Boolean(editing));
  const set = (patch: Partial<RouterDraft>) => {
    setTouched(true);
    setDraft({ ...draft, ...patch });
  };
  const setRule = (i: number, patch: Partial<RuleRow>) => set({ rules: draft.rules.map((r, j) => (j === i ? { ...r, ...patch } : r)) });
  const toggle = (id: string, on: boolean) => {
    const candidates = on ? [...draft.candidates, id] : draft.candidates.filter((c) => c !== id);
    set({ candidates, default_model: candidates.includes(draft.default_model) ? draft.default_model : (candidates[0] ?? "") });
  };
  const save = async (e: Event) => {
    e.preventDefault();
    if (!draft.name.trim()) return setMessage("Give the router a name.");
    if (jsonProblem) return setMessage(jsonProblem);
    try {
      const res = await postJson("/v1/models/register", { model_name: `user.${draft.name.trim()}`, recipe: ROUTER, version: "1", components: componentsOf(routing), routing });
      onDone(`${editing ? "Saved" : "Created"} the router ${res.model_name}`);
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  const matched = check.decision?.matched_rule;
  return (
    <form class="collection-form" aria-label={editing ? `Edit router ${editing.id}` : "New router"} onSubmit={save}>
      <label>
        Router name{" "}
        <input value={draft.name} disabled={Boolean(editing)} onInput={(e) => set({ name: (e.target as HTMLInputElement).value })} placeholder="my-router" />
      </label>
      <label>
        <input type="checkbox" checked={asJson} onChange={(e) => {
          const on = (e.target as HTMLInputElement).checked;
          if (on) setJson(JSON.stringify(routingOf(draft), null, 2));
          setAsJson(on);
        }} />{" "}
        Edit the routing block as JSON (classifiers, any/all/not)
      </label>
      {asJson ? (
        <label class="block">
          Routing JSON <textarea rows={12} value={json} onInput={(e) => setJson((e.target as HTMLTextAreaElement).value)} spellcheck={false} />
        </label>
      ) : (
        <>
          <fieldset>
            <legend>Candidates</legend>
            {chat.length === 0 && <p class="hint">No model is downloaded yet to route to.</p>}
            <div class="checks">
              {chat.map((m) => (
                <label key={m.id}>
                  <input type="checkbox" checked={draft.candidates.includes(m.id)} onChange={(e) => toggle(m.id, (e.target as HTMLInputElement).checked)} /> {displayName(m)}
                </label>
              ))}
            </div>
            <label>
              Default model{" "}
              <select value={draft.default_model} onChange={(e) => set({ default_model: (e.target as HTMLSelectElement).value })}>
                {draft.candidates.map((c) => (
                  <option key={c}>{c}</option>
                ))}
              </select>
            </label>
          </fieldset>
          <fieldset>
            <legend>Rules, first match wins</legend>
            <ol class="rules">
              {draft.rules.map((r, i) => (
                <li key={i} data-rule={r.id} class={matched && matched === r.id ? "matched" : undefined}>
                  <label>
                    Rule id <input value={r.id} onInput={(e) => setRule(i, { id: (e.target as HTMLInputElement).value })} />
                  </label>
                  <label>
                    When the prompt{" "}
                    <select aria-label={`Condition of rule ${i + 1}`} value={r.condition} onChange={(e) => setRule(i, { condition: (e.target as HTMLSelectElement).value as Condition })}>
                      {Object.entries(CONDITIONS).map(([k, text]) => (
                        <option key={k} value={k}>
                          {text}
                        </option>
                      ))}
                    </select>
                  </label>
                  {r.condition !== "has_images" && r.condition !== "has_tools" && (
                    <label>
                      Value of rule {i + 1} <input value={r.value} onInput={(e) => setRule(i, { value: (e.target as HTMLInputElement).value })} placeholder={r.condition.startsWith("keywords") ? "code, python" : ""} />
                    </label>
                  )}
                  <label>
                    Route rule {i + 1} to{" "}
                    <select value={r.route_to} onChange={(e) => setRule(i, { route_to: (e.target as HTMLSelectElement).value })}>
                      <option value="">(choose)</option>
                      {draft.candidates.map((c) => (
                        <option key={c}>{c}</option>
                      ))}
                    </select>
                  </label>
                  {matched === r.id && <strong class="badge">matches the test prompt</strong>}
                  <button type="button" class="link" onClick={() => set({ rules: draft.rules.filter((_, j) => j !== i) })}>
                    Remove rule {i + 1}
                  </button>
                </li>
              ))}
            </ol>
            <button type="button" onClick={() => set({ rules: [...draft.rules, { id: `rule-${draft.rules.length + 1}`, condition: "keywords_any", value: "", route_to: draft.candidates[0] ?? "" }] })}>
              Add a rule
            </button>
          </fieldset>
        </>
      )}
      <label>
        Test prompt <input value={prompt} onInput={(e) => setPrompt((e.target as HTMLInputElement).value)} />
      </label>
      <p role="status" class={touched && (check.error || jsonProblem) ? "error" : "hint"} data-validation>
        {!touched ? "Pick the candidates and add rules; the policy is checked as you go." : jsonProblem ||
          (check.error
            ? check.error
            : check.decision
              ? `Valid. The test prompt goes to ${check.decision.route_to} ${check.decision.default_used ? "by default (no rule matches)" : `by rule ${check.decision.matched_rule}`}.`
              : "Checking…")}
      </p>
      <button type="submit" class="primary">
        {editing ? "Save router" : "Create router"}
      </button>
      {message && <p class="error">{message}</p>}
    </form>
  );
}

/** The roles an Omni collection's components play (protocols/omni.ts's omniRoles), by the labels they carry. */
const ROLES = [
  { key: "chat", name: "Chat model (plans and answers)", fits: chats, required: true },
  { key: "image", name: "Image model", fits: (m: Model) => m.labels.includes("image") && !m.labels.includes("edit") },
  { key: "edit", name: "Image edit model", fits: (m: Model) => m.labels.includes("edit") },
  { key: "tts", name: "Speech model", fits: (m: Model) => m.labels.includes("tts") },
] as const;

export function OmniForm({ models, editing, onDone }: { models: Model[]; editing?: { id: string; components: string[]; system_prompt?: string }; onDone: (message: string) => void }) {
  const parts = models.filter((m) => !m.recipe.startsWith("collection."));
  const roleOf = (key: string) => {
    const fits = ROLES.find((r) => r.key === key)!.fits;
    return editing?.components.find((c) => parts.some((m) => m.id === c && fits(m))) ?? "";
  };
  const [name, setName] = useState(editing ? bare(editing.id) : "");
  const [picked, setPicked] = useState<Record<string, string>>(() => Object.fromEntries(ROLES.map((r) => [r.key, roleOf(r.key)])));
  const [system, setSystem] = useState(editing?.system_prompt ?? "");
  const [message, setMessage] = useState("");
  const save = async (e: Event) => {
    e.preventDefault();
    if (!name.trim()) return setMessage("Give the collection a name.");
    if (!picked.chat) return setMessage("An Omni collection needs a chat model to plan with.");
    const components = [...new Set(ROLES.map((r) => picked[r.key]).filter((c): c is string => Boolean(c)))];
    try {
      await postJson("/v1/pull", { model_name: `user.${name.trim()}`, recipe: OMNI, components, ...(system.trim() ? { system_prompt: system } : {}), stream: true, subscribe: false });
      onDone(`${editing ? "Saved" : "Created"} the collection user.${name.trim()}; components not downloaded yet are downloading`);
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  return (
    <form class="collection-form" aria-label={editing ? `Edit collection ${editing.id}` : "New Omni collection"} onSubmit={save}>
      <label>
        Collection name <input value={name} disabled={Boolean(editing)} onInput={(e) => setName((e.target as HTMLInputElement).value)} placeholder="my-omni" />
      </label>
      {ROLES.map((r) => (
        <label key={r.key}>
          {r.name}{" "}
          <select aria-label={r.name} value={picked[r.key]} onChange={(e) => setPicked({ ...picked, [r.key]: (e.target as HTMLSelectElement).value })}>
            <option value="">{"required" in r ? "(choose)" : "(none)"}</option>
            {parts.filter(r.fits).map((m) => (
              <option key={m.id} value={m.id}>
                {displayName(m)}
                {m.downloaded ? "" : " (not downloaded)"}
              </option>
            ))}
          </select>
        </label>
      ))}
      <label class="block">
        System prompt (optional) <textarea rows={3} value={system} onInput={(e) => setSystem((e.target as HTMLTextAreaElement).value)} />
      </label>
      <button type="submit" class="primary">
        {editing ? "Save collection" : "Create collection"}
      </button>
      {message && <p class="error">{message}</p>}
    </form>
  );
}

/** The "new router" and "new Omni collection" forms, and the one editing a collection's row. */
export function Collections({ models, editing, onClose, onDone }: { models: Model[]; editing: string | null; onClose: () => void; onDone: (message: string) => void }) {
  const [detail, setDetail] = useState<any>(null);
  useEffect(() => {
    setDetail(null);
    if (editing) getJson(`/v1/models/${encodeURIComponent(editing)}`).then(setDetail, (err: Error) => onDone(err.message));
  }, [editing]);
  return (
    <>
      {editing && detail && (
        <div class="options" role="dialog" aria-label={`Edit ${editing}`}>
          <h3>Edit {editing}</h3>
          {detail.recipe === ROUTER ? (
            <RouterForm key={editing} models={models} editing={{ id: detail.id, routing: detail.routing }} onDone={onDone} />
          ) : (
            <OmniForm key={editing} models={models} editing={{ id: detail.id, components: detail.components ?? [], system_prompt: detail.system_prompt }} onDone={onDone} />
          )}
          <button onClick={onClose}>Close</button>
        </div>
      )}
      <details class="register">
        <summary>New router (collection.router)</summary>
        <RouterForm models={models} onDone={onDone} />
      </details>
      <details class="register">
        <summary>New Omni collection</summary>
        <OmniForm models={models} onDone={onDone} />
      </details>
    </>
  );
}
