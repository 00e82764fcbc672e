// Chat: conversations kept in this browser (IndexedDB) with new, rename, delete and search; a
// model picker (loaded models first); streamed replies with a stop button, Markdown, LaTeX and
// collapsible reasoning; per message copy, delete, edit and resend, regenerate and read aloud;
// image attachments by file, paste or drop; a system prompt per conversation; sampling settings;
// export as Markdown or JSON; and under each reply what the user saw: tokens/s, the time to the
// first token on the wire, and the model's load time when the reply had to wait for one.
import { useEffect, useRef, useState } from "preact/hooks";
import { bareName, chatStream, displayName, getJson, installPhase, request, type Loaded, type Model } from "./api.ts";
import { download, useStored } from "./hooks.ts";
import { renderMarkdown } from "./markdown.ts";
import { conversations as store } from "./store.ts";
import { parse, type SettingSchema } from "./settings.tsx";

interface Message {
  role: "user" | "assistant";
  content: string;
  reasoning?: string;
  image?: string;
  stats?: string;
  error?: string;
  /** What the reply waits on before its first token, such as "Loading model…". */
  phase?: string;
}

interface Conversation {
  id: string;
  title: string;
  model: string;
  system: string;
  messages: Message[];
  updated: number;
}

interface Sampling {
  temperature: string;
  top_p: string;
  top_k: string;
  min_p: string;
  repeat_penalty: string;
  seed: string;
  max_tokens: string;
  thinking: boolean;
}

/** Each sampling field with the values it takes, checked as Settings checks its numbers. */
const SAMPLING: [Exclude<keyof Sampling, "thinking">, string, SettingSchema][] = [
  ["temperature", "Temperature", { type: "number", default: undefined, minimum: 0, maximum: 5 }],
  ["top_p", "Top p", { type: "number", default: undefined, minimum: 0, maximum: 1 }],
  ["top_k", "Top k", { type: "number", default: undefined, minimum: 0, integer: true }],
  ["min_p", "Min p", { type: "number", default: undefined, minimum: 0, maximum: 1 }],
  ["repeat_penalty", "Repeat penalty", { type: "number", default: undefined, minimum: 0 }],
  ["seed", "Seed", { type: "number", default: undefined, integer: true }],
  ["max_tokens", "Max tokens", { type: "number", default: undefined, minimum: 1, integer: true }],
];

/** Why each filled-in sampling field is not a value it takes; an empty field is the model's default. */
const samplingProblems = (sampling: Sampling): Partial<Record<string, string>> =>
  Object.fromEntries(SAMPLING.flatMap(([k, , schema]) => (sampling[k].trim() === "" ? [] : [[k, parse(sampling[k], schema).problem]])).filter(([, p]) => p));

const CURRENT = "lemonade.currentConversation";

const newConversation = (model = ""): Conversation => ({ id: crypto.randomUUID(), title: "New chat", model, system: "", messages: [], updated: Date.now() });

const titleOf = (text: string) => (text.length > 48 ? `${text.slice(0, 47)}…` : text) || "New chat";

/** Copy buttons on the code blocks of rendered Markdown. */
function addCopyButtons(root: HTMLElement | null) {
  if (!root) return;
  for (const pre of root.querySelectorAll("pre")) {
    if (pre.querySelector("button.copy")) continue;
    const button = document.createElement("button");
    button.className = "copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy code");
    button.onclick = () => void navigator.clipboard?.writeText(pre.querySelector("code")?.textContent ?? "").then(() => (button.textContent = "Copied"));
    pre.appendChild(button);
  }
}

const asMarkdown = (c: Conversation) =>
  [`# ${c.title}`, `Model: ${c.model}`, ...(c.system ? [`System: ${c.system}`] : []), ...c.messages.map((m) => `## ${m.role === "user" ? "User" : "Assistant"}\n\n${m.content}`)].join("\n\n") + "\n";

interface BubbleActions {
  onDelete: () => void;
  onEdit?: (text: string) => void;
  onRegenerate?: () => void;
  onSpeak?: () => void;
}

function Bubble({ m, actions, busy }: { m: Message; actions: BubbleActions; busy: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  useEffect(() => addCopyButtons(ref.current), [m.content]);
  const who = m.role === "user" ? "what you wrote" : "the reply";
  return (
    <div class={`bubble ${m.role}`} data-role={m.role}>
      {m.reasoning && (
        <details class="reasoning">
          <summary>Reasoning</summary>
          <div class="reasoning-text">{m.reasoning}</div>
        </details>
      )}
      {m.image && <img class="attachment" src={m.image} alt="Attached image" />}
      {m.phase && !m.content && (
        <p class="hint phase" role="status">
          {m.phase}
        </p>
      )}
      {editing !== null ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setEditing(null);
            actions.onEdit!(editing);
          }}
        >
          <textarea aria-label="Edit message" value={editing} onInput={(e) => setEditing((e.target as HTMLTextAreaElement).value)} />
          <button type="submit" class="primary">
            Save and resend
          </button>{" "}
          <button type="button" onClick={() => setEditing(null)}>
            Cancel
          </button>
        </form>
      ) : m.role === "assistant" ? (
        <div ref={ref} class="markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(m.content) }} />
      ) : (
        <div class="plain">{m.content}</div>
      )}
      {m.error && (
        <p class="error" role="alert">
          {m.error}
        </p>
      )}
      {m.stats && <p class="stats">{m.stats}</p>}
      {!busy && editing === null && (
        <div class="message-actions">
          <button
            class="link"
            aria-label={`Copy ${who}`}
            onClick={() => void navigator.clipboard?.writeText(m.content).then(() => setCopied(true))}
          >
            {copied ? "Copied" : "Copy"}
          </button>
          {actions.onEdit && (
            <button class="link" aria-label="Edit what you wrote" onClick={() => setEditing(m.content)}>
              Edit
            </button>
          )}
          {actions.onRegenerate && (
            <button class="link" aria-label="Regenerate the reply" onClick={actions.onRegenerate}>
              Regenerate
            </button>
          )}
          {actions.onSpeak && (
            <button class="link" aria-label="Read the reply aloud" onClick={actions.onSpeak}>
              Read aloud
            </button>
          )}
          <button class="link" aria-label={`Delete ${who}`} onClick={actions.onDelete}>
            Delete
          </button>
        </div>
      )}
    </div>
  );
}

function ConversationList({
  list,
  current,
  onOpen,
  onNew,
  onRename,
  onDelete,
}: {
  list: Conversation[];
  current: string;
  onOpen: (id: string) => void;
  onNew: () => void;
  onRename: (c: Conversation) => void;
  onDelete: (c: Conversation) => void;
}) {
  const [search, setSearch] = useState("");
  const q = search.toLowerCase();
  const shown = list.filter((c) => !q || c.title.toLowerCase().includes(q) || c.messages.some((m) => m.content.toLowerCase().includes(q)));
  return (
    <nav class="conversations" aria-label="Conversations">
      <button class="primary" onClick={onNew}>
        New chat
      </button>
      <label>
        Search conversations <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
      </label>
      <ul>
        {shown.map((c) => (
          <li key={c.id} class={c.id === current ? "active" : undefined}>
            <button class="link open" aria-current={c.id === current ? "true" : undefined} onClick={() => onOpen(c.id)}>
              {c.title}
            </button>
            <button class="link" aria-label={`Rename ${c.title}`} onClick={() => onRename(c)}>
              Rename
            </button>
            <button class="link danger" aria-label={`Delete ${c.title}`} onClick={() => onDelete(c)}>
              Delete
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}

export function Chat({ onManageModels }: { onManageModels: () => void }) {
  const [models, setModels] = useState<Model[] | null>(null);
  const [speech, setSpeech] = useState<string | undefined>();
  const [loadError, setLoadError] = useState("");
  const [list, setList] = useState<Conversation[] | null>(null);
  const [currentId, setCurrentId] = useStored<string>(CURRENT, "");
  const [sampling, setSampling] = useStored<Sampling>("lemonade.sampling", { temperature: "", top_p: "", top_k: "", min_p: "", repeat_penalty: "", seed: "", max_tokens: "", thinking: true });
  const problems = samplingProblems(sampling);
  const [input, setInput] = useState("");
  const [image, setImage] = useState<string | undefined>();
  const [busy, setBusy] = useState<AbortController | null>(null);
  const [notice, setNotice] = useState("");
  const messagesRef = useRef<HTMLDivElement>(null);
  const conversation = list?.find((c) => c.id === currentId) ?? list?.[0];

  /** Shows a conversation's new state; `keep` also writes it to IndexedDB (not on every streamed token). */
  const update = (c: Conversation, keep = true) => {
    setList((l) => [c, ...(l ?? []).filter((x) => x.id !== c.id)]);
    if (keep) void store.put(c).catch((err) => setNotice(`This browser did not keep the conversation: ${(err as Error).message}`));
  };

  useEffect(() => {
    (async () => {
      try {
        const [all, health, kept] = await Promise.all([getJson("/v1/models"), getJson("/v1/health"), store.all<Conversation>().catch((): Conversation[] => [])]);
        const loaded = new Set((health.all_models_loaded as Loaded[]).map((m) => m.model_name));
        const chat = (all.data as Model[]).filter((m) => m.labels.includes("chat"));
        chat.sort((a, b) => Number(loaded.has(b.id)) - Number(loaded.has(a.id)));
        setModels(chat);
        setSpeech((all.data as Model[]).find((m) => m.labels.includes("tts"))?.id);
        // The conversation an earlier version of the app kept in localStorage comes along once.
        const legacy = localStorage.getItem("lemonade.conversation");
        if (legacy && !kept.length) {
          try {
            const old = JSON.parse(legacy) as Partial<Conversation>;
            const moved = { ...newConversation(old.model), messages: old.messages ?? [], title: titleOf(old.messages?.[0]?.content ?? "") };
            kept.push(moved);
            await store.put(moved);
          } catch {
            // Unreadable: nothing to bring along.
          }
          localStorage.removeItem("lemonade.conversation");
        }
        kept.sort((a, b) => b.updated - a.updated);
        const wanted = new URLSearchParams(location.search).get("model");
        let c = kept.find((x) => x.id === currentId) ?? kept[0] ?? newConversation();
        // ?model= takes every form of a name: the listed id, the canonical one, or the bare name of
        // the model that wins it.
        const picked = wanted ? chat.find((m) => m.id === wanted || m.canonical_id === wanted || (!m.shadowed && bareName(m) === wanted)) : undefined;
        if (picked) c = { ...c, model: picked.id };
        else if (!chat.some((m) => m.id === c.model) && chat[0]) c = { ...c, model: chat[0].id };
        setList([c, ...kept.filter((x) => x.id !== c.id)]);
        setCurrentId(c.id);
      } catch (err) {
        setLoadError((err as Error).message);
      }
    })();
  }, []);
  useEffect(() => messagesRef.current?.scrollTo(0, messagesRef.current.scrollHeight), [conversation?.messages]);

  if (loadError) return <p class="error" role="alert">Cannot reach the server: {loadError}</p>;
  if (!models || !list || !conversation) return <p>Loading models…</p>;
  if (!models.length) {
    return (
      <section class="empty">
        <h2>No chat model is downloaded yet</h2>
        <p>Download one in the Model manager; small ones such as Qwen3-0.6B-GGUF take a minute.</p>
        <button class="primary" onClick={onManageModels}>
          Open the Model manager
        </button>
      </section>
    );
  }
  const model = models.find((m) => m.id === conversation.model);
  const vision = model?.labels.includes("vision") || model?.recipe === "cloud";

  /** Streams the reply to `messages` (ending with the user's turn) into the conversation. */
  async function reply(base: Conversation, messages: Message[]) {
    if (refuseSampling()) return;
    let answer: Message = { role: "assistant", content: "" };
    const show = (m: Message, keep = false) => update({ ...base, messages: [...messages, m], updated: Date.now() }, keep);
    const controller = new AbortController();
    setBusy(controller);
    const started = performance.now();
    // A model not loaded yet loads before the first token: say so, and time it apart.
    let cold = false;
    let phase = "Waiting for the first token…";
    try {
      const health = await getJson("/v1/health");
      cold = !(health.all_models_loaded as Loaded[]).some((m) => m.model_name === base.model);
      if (cold) phase = `Loading ${base.model}…`;
      // A backend that is not installed yet is installed (downloaded or built) before the load.
      const recipe = models!.find((m) => m.id === base.model)?.recipe;
      const info = cold && recipe ? (await getJson("/v1/system-info")).recipes?.[recipe] : undefined;
      const backend = info?.default_backend;
      if (backend && info.backends?.[backend] && info.backends[backend].state !== "installed") phase = `Installing ${recipe} (${backend}), then loading ${base.model}…`;
    } catch {
      // The chat request below reports what is wrong.
    }
    answer = { ...answer, phase };
    show(answer);
    let firstToken: number | undefined;
    // Until the first token: the server's installs under way (an engine this load needs) with their progress.
    const recipe = models!.find((m) => m.id === base.model)?.recipe;
    let installing = false;
    const watch = cold
      ? setInterval(async () => {
          const install = await installPhase(recipe);
          if (firstToken || !answer.phase) return;
          if (install) installing = true;
          const next = install ?? (installing ? `Loading ${base.model}…` : answer.phase);
          if (next !== answer.phase) {
            answer = { ...answer, phase: next };
            show(answer);
          }
        }, 1000)
      : undefined;
    const wire = [
      ...(base.system ? [{ role: "system", content: base.system }] : []),
      ...messages.map((m) => (m.image ? { role: m.role, content: [{ type: "text", text: m.content }, { type: "image_url", image_url: { url: m.image } }] } : { role: m.role, content: m.content })),
    ];
    const body = {
      model: base.model,
      messages: wire,
      ...Object.fromEntries(SAMPLING.filter(([k]) => sampling[k].trim() !== "").map(([k]) => [k, Number(sampling[k])])),
      ...(sampling.thinking ? {} : { chat_template_kwargs: { enable_thinking: false } }),
    };
    let promptMs: number | undefined;
    let tps: number | undefined;
    try {
      for await (const piece of chatStream(body, controller.signal)) {
        if (piece.content || piece.reasoning) firstToken ??= performance.now();
        answer = { ...answer, content: answer.content + piece.content, reasoning: (answer.reasoning ?? "") + piece.reasoning || undefined };
        if (piece.timings?.predicted_per_second) tps = piece.timings.predicted_per_second;
        if (piece.timings?.prompt_ms !== undefined) promptMs = piece.timings.prompt_ms;
        show(answer);
      }
      answer = { ...answer, phase: undefined };
      if (firstToken) {
        const ttft = Math.round(firstToken - started);
        const parts = [...(tps ? [`${tps.toFixed(1)} tokens/s`] : []), `TTFT ${ttft} ms`];
        // The engine's prompt time is part of the wait; on a cold start the rest of it is the load.
        if (cold && promptMs !== undefined) parts.push(`model load ${Math.max(0, ttft - Math.round(promptMs))} ms`);
        answer.stats = parts.join(" · ");
      }
    } catch (err) {
      answer = { ...answer, phase: undefined };
      if (!controller.signal.aborted) answer = { ...answer, error: `The reply failed: ${(err as Error).message}` };
      else answer = { ...answer, stats: "(stopped)" };
    } finally {
      clearInterval(watch);
      show(answer, true);
      setBusy(null);
    }
  }

  /** A sampling field that holds no value it takes stops the request (its field says why). */
  function refuseSampling(): boolean {
    const refused = "Fix the sampling settings first";
    if (!Object.keys(problems).length) {
      setNotice((n) => (n.startsWith(refused) ? "" : n));
      return false;
    }
    setNotice(`${refused}: ${Object.keys(problems).join(", ")}.`);
    return true;
  }

  function send(e: Event) {
    e.preventDefault();
    const text = input.trim();
    if (!text || !conversation!.model || busy || refuseSampling()) return;
    const user: Message = { role: "user", content: text, ...(image ? { image } : {}) };
    const base = conversation!.messages.length ? conversation! : { ...conversation!, title: titleOf(text) };
    setInput("");
    setImage(undefined);
    void reply(base, [...base.messages, user]);
  }

  const c = conversation;
  const removeAt = (i: number) => update({ ...c, messages: c.messages.filter((_, j) => j !== i), updated: Date.now() });
  const editAt = (i: number, text: string) => {
    const messages = [...c.messages.slice(0, i), { ...c.messages[i]!, content: text }];
    void reply(c, messages);
  };
  const regenerateAt = (i: number) => void reply(c, c.messages.slice(0, i));
  const speak = async (text: string) => {
    try {
      const res = await request("/v1/audio/speech", { method: "POST", body: JSON.stringify({ model: speech, input: text.slice(0, 4000), voice: "alloy", response_format: "mp3" }) });
      const audio = new Audio(URL.createObjectURL(await res.blob()));
      audio.dataset.testid = "read-aloud";
      await audio.play().catch(() => {});
      setNotice("Reading the reply aloud.");
    } catch (err) {
      setNotice(`Read aloud failed: ${(err as Error).message}`);
    }
  };

  function attachFile(file: File | null | undefined) {
    if (!file || !file.type.startsWith("image/")) return;
    const reader = new FileReader();
    reader.onload = () => setImage(String(reader.result));
    reader.readAsDataURL(file);
  }

  const open = (id: string) => !busy && setCurrentId(id);
  const startNew = () => {
    if (busy) return;
    // An empty conversation is reused rather than piling up.
    const fresh = c.messages.length ? newConversation(c.model) : c;
    update(fresh);
    setCurrentId(fresh.id);
  };
  const rename = (x: Conversation) => {
    const title = prompt("Rename the conversation", x.title);
    if (title?.trim()) update({ ...x, title: title.trim(), updated: Date.now() });
  };
  const remove = (x: Conversation) => {
    if (!confirm(`Delete the conversation “${x.title}”? This cannot be undone.`)) return;
    void store.delete(x.id);
    const rest = list.filter((y) => y.id !== x.id);
    const next = rest.length ? rest : [newConversation(c.model)];
    setList(next);
    if (x.id === c.id) setCurrentId(next[0]!.id);
  };

  return (
    <section class="chat-layout">
      <ConversationList list={list} current={c.id} onOpen={open} onNew={startNew} onRename={rename} onDelete={remove} />
      <div class="chat">
        <div class="chat-controls">
          <label>
            Model{" "}
            <select value={c.model} onChange={(e) => update({ ...c, model: (e.target as HTMLSelectElement).value })}>
              {models.map((m) => (
                <option key={m.id} value={m.id}>
                  {displayName(m)}
                </option>
              ))}
            </select>
          </label>
          <details class="sampling">
            <summary>Sampling settings</summary>
            <label>
              System prompt (this conversation) <textarea value={c.system} onInput={(e) => update({ ...c, system: (e.target as HTMLTextAreaElement).value })} />
            </label>
            {SAMPLING.map(([k, label]) => (
              <label key={k}>
                {label}{" "}
                <input
                  inputMode="decimal"
                  value={sampling[k]}
                  placeholder="model default"
                  aria-invalid={problems[k] ? "true" : undefined}
                  aria-describedby={problems[k] ? `sampling-${k}-problem` : undefined}
                  onInput={(e) => setSampling({ ...sampling, [k]: (e.target as HTMLInputElement).value })}
                />
                {problems[k] && (
                  <span class="field-error" id={`sampling-${k}-problem`} role="alert">
                    {problems[k]}
                  </span>
                )}
              </label>
            ))}
            <label>
              <input type="checkbox" role="switch" checked={sampling.thinking} onChange={(e) => setSampling({ ...sampling, thinking: (e.target as HTMLInputElement).checked })} /> Thinking
            </label>
          </details>
          <details class="export">
            <summary>Export</summary>
            <button onClick={() => download(`${c.title}.md`, "text/markdown", asMarkdown(c))}>Markdown</button>{" "}
            <button onClick={() => download(`${c.title}.json`, "application/json", JSON.stringify(c, null, 2))}>JSON</button>
          </details>
        </div>
        {notice && (
          <p class="hint" role="status">
            {notice}
          </p>
        )}
        <div class="messages" ref={messagesRef} aria-live="polite">
          {c.messages.length === 0 && <p class="hint">Send a message to {c.model}.</p>}
          {c.messages.map((m, i) => (
            <Bubble
              key={`${c.id}-${i}`}
              m={m}
              busy={Boolean(busy)}
              actions={{
                onDelete: () => removeAt(i),
                ...(m.role === "user" ? { onEdit: (text: string) => editAt(i, text) } : { onRegenerate: () => regenerateAt(i) }),
                ...(m.role === "assistant" && speech && m.content ? { onSpeak: () => void speak(m.content) } : {}),
              }}
            />
          ))}
        </div>
        <form
          class="composer"
          onSubmit={send}
          onDragOver={(e) => vision && e.preventDefault()}
          onDrop={(e) => {
            if (!vision) return;
            e.preventDefault();
            attachFile(e.dataTransfer?.files?.[0]);
          }}
        >
          {image && (
            <span class="pending">
              <img class="attachment" src={image} alt="Image to send" />
              <button type="button" class="link" onClick={() => setImage(undefined)}>
                Remove image
              </button>
            </span>
          )}
          <textarea
            aria-label="Message"
            placeholder={vision ? "Message (Enter sends, Shift+Enter for a new line; paste or drop an image)" : "Message (Enter sends, Shift+Enter for a new line)"}
            value={input}
            onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)}
            onPaste={(e) => {
              if (!vision) return;
              const file = [...(e.clipboardData?.files ?? [])].find((f) => f.type.startsWith("image/"));
              if (file) {
                e.preventDefault();
                attachFile(file);
              }
            }}
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.shiftKey) send(e);
            }}
          />
          {vision && (
            <label class="attach">
              Image <input type="file" accept="image/*" onChange={(e) => attachFile((e.target as HTMLInputElement).files?.[0])} />
            </label>
          )}
          {busy ? (
            <button type="button" class="stop" onClick={() => busy.abort()}>
              Stop
            </button>
          ) : (
            <button type="submit" class="primary">
              Send
            </button>
          )}
        </form>
      </div>
    </section>
  );
}
