// Compare: one prompt to two models at once, both replies streaming side by side, with the time to
// the first token the user saw and the engine's tokens/s under each.
import { useEffect, useState } from "preact/hooks";
import { chatStream, getJson, type Model } from "./api.ts";
import { renderMarkdown } from "./markdown.ts";
import { ModelPicker } from "./model-picker.tsx";

interface Side {
  model: string;
  text: string;
  stats?: string;
  error?: string;
}

export function Compare() {
  const [models, setModels] = useState<Model[]>([]);
  const [error, setError] = useState("");
  const [picked, setPicked] = useState<[string, string]>(["", ""]);
  const [prompt, setPrompt] = useState("");
  const [maxTokens, setMaxTokens] = useState("256");
  const [sides, setSides] = useState<Side[]>([]);
  const [busy, setBusy] = useState<AbortController | null>(null);
  useEffect(() => {
    getJson("/v1/models").then(
      (all) => {
        const chat = (all.data as Model[]).filter((m) => m.labels.includes("chat"));
        setModels(chat);
        setPicked([chat[0]?.id ?? "", chat[1]?.id ?? chat[0]?.id ?? ""]);
      },
      (err) => setError((err as Error).message),
    );
  }, []);

  const run = async (e: Event) => {
    e.preventDefault();
    if (!prompt.trim() || busy) return;
    const controller = new AbortController();
    setBusy(controller);
    const start: Side[] = picked.map((model) => ({ model, text: "" }));
    setSides(start);
    const set = (i: number, side: Side) => setSides((all) => all.map((s, j) => (j === i ? side : s)));
    await Promise.all(
      start.map(async (side, i) => {
        const began = performance.now();
        let first: number | undefined;
        let tps: number | undefined;
        try {
          for await (const piece of chatStream({ model: side.model, messages: [{ role: "user", content: prompt }], max_tokens: Number(maxTokens) || undefined }, controller.signal)) {
            if (piece.content) first ??= performance.now();
            if (piece.timings?.predicted_per_second) tps = piece.timings.predicted_per_second;
            side = { ...side, text: side.text + piece.content };
            set(i, side);
          }
          const parts = [...(tps ? [`${tps.toFixed(1)} tokens/s`] : []), ...(first ? [`TTFT ${Math.round(first - began)} ms`] : [])];
          set(i, { ...side, stats: parts.join(" · ") || "no tokens" });
        } catch (err) {
          set(i, { ...side, ...(controller.signal.aborted ? { stats: "(stopped)" } : { error: (err as Error).message }) });
        }
      }),
    );
    setBusy(null);
  };

  if (error) return <p class="error">{error}</p>;
  return (
    <section class="compare">
      <h2>Compare two models</h2>
      <form onSubmit={run} class="compare-form">
        <ModelPicker label="Left model" models={models} value={picked[0]} onChange={(v) => setPicked([v, picked[1]])} />
        <ModelPicker label="Right model" models={models} value={picked[1]} onChange={(v) => setPicked([picked[0], v])} />
        <label>
          Max tokens <input inputMode="numeric" size={6} value={maxTokens} onInput={(e) => setMaxTokens((e.target as HTMLInputElement).value)} />
        </label>
        <label class="grow">
          Prompt <textarea value={prompt} onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)} />
        </label>
        {busy ? (
          <button type="button" onClick={() => busy.abort()}>
            Stop
          </button>
        ) : (
          <button type="submit" class="primary" disabled={!models.length}>
            Send to both
          </button>
        )}
      </form>
      <div class="compare-sides">
        {sides.map((s, i) => (
          <div key={i} class="bubble assistant" data-side={i === 0 ? "left" : "right"}>
            <p class="hint">{s.model}</p>
            <div class="markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(s.text) }} />
            {s.error && <p class="error">{s.error}</p>}
            {s.stats && <p class="stats">{s.stats}</p>}
          </div>
        ))}
      </div>
    </section>
  );
}
