// The app's only way to the server: its public HTTP and WebSocket API, with the key the user
// gave in Settings (kept in this browser's storage).
const KEY = "lemonade.apiKey";

export const apiKey = {
  get: () => localStorage.getItem(KEY) ?? "",
  set: (key: string) => (key ? localStorage.setItem(KEY, key) : localStorage.removeItem(KEY)),
};

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** The request field the error is about, when the server names one. */
    readonly param?: string,
  ) {
    super(message);
  }
}

/** The message of an error body in any of the server's shapes, in plain words. */
export function messageOf(body: any, status: number): string {
  if (status === 401) return "The server needs its API key: set it in Settings.";
  const m = typeof body?.error === "string" ? body.error : (body?.error?.message ?? body?.message);
  return m || `The server answered HTTP ${status}.`;
}

export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const key = apiKey.get();
  if (key) headers.set("authorization", `Bearer ${key}`);
  if (init.body && typeof init.body === "string" && !headers.has("content-type")) headers.set("content-type", "application/json");
  const res = await fetch(path, { ...init, headers });
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    const param = body?.param ?? body?.error?.param;
    throw new ApiError(messageOf(body, res.status), res.status, typeof param === "string" ? param : undefined);
  }
  return res;
}

export async function getJson<T = any>(path: string): Promise<T> {
  return (await request(path)).json();
}

export async function postJson<T = any>(path: string, body: unknown, init: RequestInit = {}): Promise<T> {
  return (await request(path, { ...init, method: "POST", body: JSON.stringify(body) })).json();
}

/** Server-Sent Events of a response, as `{event, data}` with `data` parsed when it is JSON. */
export async function* events(res: Response): AsyncGenerator<{ event: string; data: any }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(line[5] === " " ? 6 : 5));
      }
      if (!data.length) continue;
      const text = data.join("\n");
      let parsed: any = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // Plain text, such as [DONE].
      }
      yield { event, data: parsed };
    }
  }
}

/** The pieces of a streamed /v1/chat/completions reply: text, reasoning, and the engine's timings. */
export async function* chatStream(body: Record<string, unknown>, signal: AbortSignal): AsyncGenerator<{ content: string; reasoning: string; timings?: { predicted_per_second?: number; prompt_ms?: number } }> {
  const res = await request("/v1/chat/completions", { method: "POST", body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }), signal });
  for await (const { data } of events(res)) {
    if (data === "[DONE]") return;
    if (data?.error) throw new Error(data.error.message);
    const delta = data?.choices?.[0]?.delta ?? {};
    yield { content: delta.content ?? "", reasoning: delta.reasoning_content ?? "", timings: data?.timings };
  }
}

/** A WebSocket to the server, the key sent as the `bearer.<base64url>` subprotocol browsers allow. */
export function socket(path: string): WebSocket {
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${path}`;
  const key = apiKey.get();
  if (!key) return new WebSocket(url);
  const b64 = btoa(String.fromCharCode(...new TextEncoder().encode(key))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return new WebSocket(url, [`bearer.${b64}`]);
}

export interface Model {
  id: string;
  recipe: string;
  labels: string[];
  size?: number;
  downloaded: boolean;
  suggested: boolean;
  update_available?: boolean;
  context_length?: number;
  cloud_provider?: string;
  /** `huggingface`, `extra_models_dir`, `local_path` or `cloud`. */
  source?: string;
  /** `user.NAME`, `extra.NAME` or `builtin.NAME` (a cloud model's own id). */
  canonical_id?: string;
  /** Whether a source of higher precedence holds the bare name (`id` is then `canonical_id`). */
  shadowed?: boolean;
  checkpoint_status?: { type: string; present: boolean }[];
}

/** What each source is called where another outranks it on a name, by its canonical id's prefix. */
const SHADOWED_AS: [prefix: string, word: string][] = [["user.", "registered"], ["extra.", "imported"], ["builtin.", "builtin"]];

/** A model's name without its source: its canonical id, unprefixed. */
export function bareName(m: Pick<Model, "id" | "canonical_id">): string {
  const canonical = m.canonical_id ?? m.id;
  const hit = SHADOWED_AS.find(([prefix]) => canonical.startsWith(prefix));
  return hit ? canonical.slice(hit[0].length) : canonical;
}

/** How model lists show a model: its id, or for a shadowed source (listed by its canonical id)
 * `NAME (registered)`, `NAME (imported)` or `NAME (builtin)`, as the custom-models guide has GUIs
 * show it. An alias's row carries its target's canonical id and keeps its own name. */
export function displayName(m: Pick<Model, "id" | "canonical_id" | "shadowed">): string {
  const hit = m.shadowed && m.canonical_id === m.id ? SHADOWED_AS.find(([prefix]) => m.id.startsWith(prefix)) : undefined;
  return hit ? `${bareName(m)} (${hit[1]})` : m.id;
}

/** A server-owned download job (GET /v1/downloads). */
export interface Job {
  id: string;
  /** `backend` for a backend install, whose `model_name` is `<recipe>:<backend>`. */
  type: "model" | "backend";
  model_name: string;
  /** A model job's model by its canonical id, as a model row's `canonical_id`. */
  canonical_id?: string;
  status: "downloading" | "paused" | "cancelled" | "completed" | "error";
  running: boolean;
  file?: string;
  percent: number;
  total_download_size: number;
  overall_bytes_downloaded: number;
  error?: string;
}

/** Whether a download job is a model row's: the job's model is the row's (by canonical id, since
 * the name a pull gave may since name another model: a registration shadowing the built-in the job
 * downloads), and the row is that model's own listing or the alias the pull named. */
export function isJobOf(j: Pick<Job, "model_name" | "canonical_id">, m: Pick<Model, "id" | "canonical_id">): boolean {
  const canonical = m.canonical_id ?? m.id;
  if (j.canonical_id !== canonical) return false;
  return m.id === canonical || m.id === bareName(m) || j.model_name === m.id;
}

/** Whether /v1/pull takes the name the model is listed by: not one with a prefix the server keeps
 * for itself (a shadowed built-in's `builtin.<name>`), which a pull refuses as reserved. */
export const pullable = (m: Pick<Model, "id">) => !/^(builtin|extra)\./.test(m.id);

/** Jobs that still hold a model's download: a cancelled one has deleted its partial files. */
export const activeJob = (j: Job) => j.status === "downloading" || j.status === "paused" || j.status === "error";

/** A loaded model, as /v1/health lists it. */
export interface Loaded {
  model_name: string;
  type: string;
  pinned: boolean;
  is_busy: boolean;
  is_streaming: boolean;
  pid: number;
  recipe: string;
  backend?: string;
  recipe_options?: { ctx_size?: number };
  last_use: number;
  queue_depth: number;
  slots: number;
  slots_in_use: number;
  memory_estimate_bytes?: number;
}

/** An engine install under way (GET /v1/installs). */
export interface Install {
  recipe: string;
  backend: string;
  phase: string;
  percent: number;
}

/** What a load waits for while `recipe`'s engine is installed: the install's phase and progress, or undefined when none runs. */
export async function installPhase(recipe: string | undefined): Promise<string | undefined> {
  const mine = ((await getJson("/v1/installs").catch(() => [])) as Install[]).find((i) => i.recipe === recipe);
  return mine && `Installing ${mine.recipe} (${mine.backend}) — ${mine.phase}, ${Math.round(mine.percent)} %`;
}
