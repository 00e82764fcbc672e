// Chat: a model picker (loaded models first), streamed replies with a stop button, Markdown,
// collapsible reasoning, image attachments for vision models, sampling settings, tokens/s and
// TTFT per reply, and conversations kept in this browser across reloads.
import { useEffect, useRef, useState } from "preact/hooks";
import { events, getJson, request, type Loaded, type Model } from "./api.ts";
import { useStored } from "./hooks.ts";
import { renderMarkdown } from "./markdown.ts";

interface Message {
  role: "user" | "assistant" | "system";
  content: string;
  reasoning?: string;
  image?: string;
  stats?: string;
  error?: string;
}

interface Conversation {
  id: string;
  model: string;
  messages: Message[];
}

interface Sampling {
  system: string;
  temperature: string;
  top_p: string;
  max_tokens: string;
  thinking: boolean;
}

const newConversation = (model = ""): Conversation => ({ id: String(Date.now()), model, messages: [] });

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

function Bubble({ m }: { m: Message }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => addCopyButtons(ref.current), [m.content]);
  return (
    <div class={`bubble ${m.role}`} data-role={m.role}>
      {m.reasoning && (
        <details class="reasoning">
          <summary>Reasoning</summary>
          <div class="reasoning-text">{m.reasoning}</div>
        </details>
      )}
      {m.image && <img class="attachment" src={m.image} alt="Attached image" />}
      {m.role === "assistant" ? <div ref={ref} class="markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(m.content) }} /> : <div class="plain">{m.content}</div>}
      {m.error && <p class="error" role="alert">{m.error}</p>}
      {m.stats && <p class="stats">{m.stats}</p>}
    </div>
  );
}

export function Chat({ onManageModels }: { onManageModels: () => void }) {
  const [models, setModels] = useState<Model[] | null>(null);
  const [loadError, setLoadError] = useState("");
  const [conversation, setConversation] = useStored<Conversation>("lemonade.conversation", newConversation());
  const [sampling, setSampling] = useStored<Sampling>("lemonade.sampling", { system: "", temperature: "", top_p: "", max_tokens: "", thinking: true });
  const [input, setInput] = useState("");
  const [image, setImage] = useState<string | undefined>();
  const [busy, setBusy] = useState<AbortController | null>(null);
  const list = useRef<HTMLDivElement>(null);

  useEffect(() => {
    (async () => {
      try {
        const [all, health] = await Promise.all([getJson("/v1/models"), getJson("/v1/health")]);
        const loaded = new Set((health.all_models_loaded as Loaded[]).map((m) => m.model_name));
        const chat = (all.data as Model[]).filter((m) => m.labels.includes("chat"));
        chat.sort((a, b) => Number(loaded.has(b.id)) - Number(loaded.has(a.id)));
        setModels(chat);
        const wanted = new URLSearchParams(location.search).get("model");
        if (wanted && chat.some((m) => m.id === wanted)) setConversation({ ...conversation, model: wanted });
        else if (!chat.some((m) => m.id === conversation.model) && chat[0]) setConversation({ ...conversation, model: chat[0].id });
      } catch (err) {
        setLoadError((err as Error).message);
      }
    })();
  }, []);
  useEffect(() => list.current?.scrollTo(0, list.current.scrollHeight), [conversation.messages]);

  const model = models?.find((m) => m.id === conversation.model);
  const vision = model?.labels.includes("vision") || model?.recipe === "cloud";

  async function send(e: Event) {
    e.preventDefault();
    const text = input.trim();
    if (!text || !conversation.model || busy) return;
    const user: Message = { role: "user", content: text, ...(image ? { image } : {}) };
    let messages = [...conversation.messages, user];
    let reply: Message = { role: "assistant", content: "" };
    const show = (m: Message) => setConversation({ ...conversation, messages: [...messages, m] });
    show(reply);
    setInput("");
    setImage(undefined);
    const controller = new AbortController();
    setBusy(controller);
    const wire = [
      ...(sampling.system ? [{ role: "system", content: sampling.system }] : []),
      ...messages.map((m) => (m.image ? { role: m.role, content: [{ type: "text", text: m.content }, { type: "image_url", image_url: { url: m.image } }] } : { role: m.role, content: m.content })),
    ];
    const num = (v: string) => (v.trim() === "" ? undefined : Number(v));
    const body = {
      model: conversation.model,
      messages: wire,
      stream: true,
      stream_options: { include_usage: true },
      temperature: num(sampling.temperature),
      top_p: num(sampling.top_p),
      max_tokens: num(sampling.max_tokens),
      ...(sampling.thinking ? {} : { chat_template_kwargs: { enable_thinking: false } }),
    };
    const started = performance.now();
    let firstToken: number | undefined;
    try {
      const res = await request("/v1/chat/completions", { method: "POST", body: JSON.stringify(body), signal: controller.signal });
      for await (const { data } of events(res)) {
        if (data === "[DONE]") break;
        if (data?.error) throw new Error(data.error.message);
        const delta = data?.choices?.[0]?.delta ?? {};
        if (delta.content || delta.reasoning_content) firstToken ??= performance.now();
        reply = { ...reply, content: reply.content + (delta.content ?? ""), reasoning: (reply.reasoning ?? "") + (delta.reasoning_content ?? "") || undefined };
        const t = data?.timings;
        if (t?.predicted_per_second) reply.stats = `${t.predicted_per_second.toFixed(1)} tokens/s · TTFT ${Math.round(t.prompt_ms)} ms`;
        show(reply);
      }
      if (!reply.stats && firstToken) reply.stats = `TTFT ${Math.round(firstToken - started)} ms`;
    } catch (err) {
      if (!controller.signal.aborted) reply = { ...reply, error: `The reply failed: ${(err as Error).message}` };
      else reply = { ...reply, stats: "(stopped)" };
    } finally {
      messages = [...messages, reply];
      setConversation({ ...conversation, messages });
      setBusy(null);
    }
  }

  function attach(e: Event) {
    const file = (e.target as HTMLInputElement).files?.[0];
    if (!file) return;
    const reader = new FileReader();
    reader.onload = () => setImage(String(reader.result));
    reader.readAsDataURL(file);
  }

  if (loadError) return <p class="error" role="alert">Cannot reach the server: {loadError}</p>;
  if (!models) return <p>Loading models…</p>;
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
  return (
    <section class="chat">
      <div class="chat-controls">
        <label>
          Model{" "}
          <select value={conversation.model} onChange={(e) => setConversation({ ...conversation, model: (e.target as HTMLSelectElement).value })}>
            {models.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
              </option>
            ))}
          </select>
        </label>
        <button onClick={() => setConversation(newConversation(conversation.model))}>New chat</button>
        <details class="sampling">
          <summary>Sampling settings</summary>
          <label>
            System prompt <textarea value={sampling.system} onInput={(e) => setSampling({ ...sampling, system: (e.target as HTMLTextAreaElement).value })} />
          </label>
          {([["temperature", "Temperature"], ["top_p", "Top p"], ["max_tokens", "Max tokens"]] as const).map(([k, label]) => (
            <label key={k}>
              {label} <input inputMode="decimal" value={sampling[k]} placeholder="model default" onInput={(e) => setSampling({ ...sampling, [k]: (e.target as HTMLInputElement).value })} />
            </label>
          ))}
          <label>
            <input type="checkbox" checked={sampling.thinking} onChange={(e) => setSampling({ ...sampling, thinking: (e.target as HTMLInputElement).checked })} /> Thinking
          </label>
        </details>
      </div>
      <div class="messages" ref={list} aria-live="polite">
        {conversation.messages.length === 0 && <p class="hint">Send a message to {conversation.model}.</p>}
        {conversation.messages.map((m, i) => (
          <Bubble key={i} m={m} />
        ))}
      </div>
      <form class="composer" onSubmit={send}>
        <textarea
          aria-label="Message"
          placeholder="Message (Enter sends, Shift+Enter for a new line)"
          value={input}
          onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) send(e);
          }}
        />
        {vision && (
          <label class="attach">
            Image <input type="file" accept="image/*" onChange={attach} />
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
    </section>
  );
}
