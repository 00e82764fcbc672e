// Try-it panels for the other model types: speech, transcription (a file or the microphone),
// embeddings (similarity of two texts), reranking, text classification, and images
// (web/images.tsx) when an image or upscaling model exists.
import { useState } from "preact/hooks";
import { getJson, postJson, request, socket, type Model } from "./api.ts";
import { usePoll } from "./hooks.ts";
import { ModelPicker } from "./model-picker.tsx";
import { ImagePanels } from "./images.tsx";

const VOICES = ["alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse"];

function Speech({ models }: { models: Model[] }) {
  const [model, setModel] = useState(models[0]!.id);
  const [text, setText] = useState("Hello from Lemonade.");
  const [voice, setVoice] = useState("alloy");
  const [speed, setSpeed] = useState("1");
  const [audio, setAudio] = useState("");
  const [error, setError] = useState("");
  const speak = async () => {
    setError("");
    if (!text.trim()) return setError("Type some text to speak.");
    try {
      const res = await request("/v1/audio/speech", { method: "POST", body: JSON.stringify({ model, input: text, voice, speed: Number(speed), response_format: "mp3" }) });
      setAudio(URL.createObjectURL(await res.blob()));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <fieldset>
      <legend>Text to speech</legend>
      <ModelPicker models={models} value={model} onChange={setModel} label="Model" />
      <label>
        Text <textarea value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
      </label>
      <label>
        Voice{" "}
        <select value={voice} onChange={(e) => setVoice((e.target as HTMLSelectElement).value)}>
          {VOICES.map((v) => (
            <option key={v}>{v}</option>
          ))}
        </select>
      </label>
      <label>
        Speed <input type="number" min="0.25" max="4" step="0.25" value={speed} onInput={(e) => setSpeed((e.target as HTMLInputElement).value)} />
      </label>
      <button onClick={speak}>Speak</button>
      {audio && <audio controls src={audio} data-testid="speech-audio" />}
      {error && <p class="error">{error}</p>}
    </fieldset>
  );
}

/** Live transcription over /realtime: the microphone at 16 kHz, sent as base64 PCM16 as it is heard. */
function useLive(model: string, onText: (t: string) => void, onError: (e: string) => void) {
  const [live, setLive] = useState<{ stop: () => void } | null>(null);
  const [status, setStatus] = useState("");
  const start = async () => {
    let stream: MediaStream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (err) {
      return onError(`The microphone is not available: ${(err as Error).message}`);
    }
    const ws = socket(`/realtime?model=${encodeURIComponent(model)}`);
    const audio = new AudioContext({ sampleRate: 16000 });
    const source = audio.createMediaStreamSource(stream);
    // ScriptProcessor: an AudioWorklet would need a module URL the page's CSP does not allow.
    const node = audio.createScriptProcessor(4096, 1, 1);
    let segments = 0;
    node.onaudioprocess = (e) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      const input = e.inputBuffer.getChannelData(0);
      const pcm = new Int16Array(input.length);
      for (let i = 0; i < input.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(input[i]! * 32767)));
      let binary = "";
      const bytes = new Uint8Array(pcm.buffer);
      for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
      ws.send(JSON.stringify({ type: "input_audio_buffer.append", audio: btoa(binary) }));
    };
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: "session.update", session: { model } }));
      source.connect(node);
      node.connect(audio.destination);
      setStatus("Listening…");
    };
    ws.onmessage = (ev) => {
      const msg = JSON.parse(String(ev.data));
      if (msg.type === "conversation.item.input_audio_transcription.delta") setStatus(`Hearing: ${msg.delta}`);
      if (msg.type === "conversation.item.input_audio_transcription.completed") {
        segments++;
        setStatus(`Live: ${segments} segment(s) transcribed`);
        if (msg.transcript) onText(msg.transcript);
      }
      // A commit after the last turn was already transcribed finds the buffer empty: nothing to say.
      if (msg.type === "error" && msg.error?.code !== "input_audio_buffer_commit_empty") onError(msg.error?.message ?? "the live session failed");
    };
    ws.onclose = () => setLive(null);
    setLive({
      stop: () => {
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "input_audio_buffer.commit" }));
        source.disconnect();
        node.disconnect();
        stream.getTracks().forEach((t) => t.stop());
        void audio.close();
        // The last segment's transcript arrives after the commit.
        setTimeout(() => ws.close(), 5000);
        setLive(null);
      },
    });
  };
  return { live, status, toggle: () => (live ? live.stop() : void start()) };
}

function Transcription({ models }: { models: Model[] }) {
  const [model, setModel] = useState(models[0]!.id);
  const [text, setText] = useState("");
  const [error, setError] = useState("");
  const [recording, setRecording] = useState<MediaRecorder | null>(null);
  const live = useLive(model, (t) => setText((prev) => (prev && prev !== "Transcribing…" ? `${prev} ${t}` : t)), setError);
  const send = async (file: Blob, name: string) => {
    setError("");
    setText("Transcribing…");
    const form = new FormData();
    form.set("file", file, name);
    form.set("model", model);
    try {
      setText((await (await request("/v1/audio/transcriptions", { method: "POST", body: form })).json()).text);
    } catch (err) {
      setText("");
      setError((err as Error).message);
    }
  };
  const record = async () => {
    if (recording) return recording.stop();
    try {
      const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
      const rec = new MediaRecorder(stream);
      const chunks: Blob[] = [];
      rec.ondataavailable = (e) => chunks.push(e.data);
      rec.onstop = () => {
        stream.getTracks().forEach((t) => t.stop());
        setRecording(null);
        void send(new Blob(chunks, { type: rec.mimeType }), "recording.webm");
      };
      rec.start();
      setRecording(rec);
    } catch (err) {
      setError(`The microphone is not available: ${(err as Error).message}`);
    }
  };
  return (
    <fieldset>
      <legend>Transcription</legend>
      <ModelPicker models={models} value={model} onChange={setModel} label="Model" />
      <label>
        Audio file <input type="file" accept="audio/*" onChange={(e) => (e.target as HTMLInputElement).files?.[0] && send((e.target as HTMLInputElement).files![0]!, (e.target as HTMLInputElement).files![0]!.name)} />
      </label>
      <button onClick={record}>{recording ? "Stop recording" : "Record"}</button>{" "}
      <button onClick={live.toggle}>{live.live ? "Stop live" : "Live"}</button>
      {live.status && <p class="hint" role="status">{live.status}</p>}
      {text && <p class="transcript">{text}</p>}
      {error && <p class="error">{error}</p>}
    </fieldset>
  );
}

function Embeddings({ models }: { models: Model[] }) {
  const [model, setModel] = useState(models[0]!.id);
  const [a, setA] = useState("A lemon is a citrus fruit.");
  const [b, setB] = useState("Lemons are sour.");
  const [result, setResult] = useState("");
  const compare = async () => {
    try {
      const res = await postJson("/v1/embeddings", { model, input: [a, b] });
      const [x, y] = res.data.map((d: any) => d.embedding as number[]);
      const dot = x.reduce((n: number, v: number, i: number) => n + v * y[i], 0);
      const norm = (v: number[]) => Math.sqrt(v.reduce((n, w) => n + w * w, 0));
      setResult(`Cosine similarity: ${(dot / (norm(x) * norm(y))).toFixed(4)}`);
    } catch (err) {
      setResult((err as Error).message);
    }
  };
  return (
    <fieldset>
      <legend>Embeddings</legend>
      <ModelPicker models={models} value={model} onChange={setModel} label="Model" />
      <label>
        First text <input value={a} onInput={(e) => setA((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Second text <input value={b} onInput={(e) => setB((e.target as HTMLInputElement).value)} />
      </label>
      <button onClick={compare}>Compare</button>
      {result && <p role="status">{result}</p>}
    </fieldset>
  );
}

function Rerank({ models }: { models: Model[] }) {
  const [model, setModel] = useState(models[0]!.id);
  const [query, setQuery] = useState("What is a lemon?");
  const [docs, setDocs] = useState("A lemon is a citrus fruit.\nParis is in France.\nLemons are yellow.");
  const [result, setResult] = useState<{ text: string; score: number }[]>([]);
  const [error, setError] = useState("");
  const rank = async () => {
    const documents = docs.split("\n").filter(Boolean);
    setError("");
    try {
      const res = await postJson("/v1/rerank", { model, query, documents });
      setResult((res.results as any[]).map((r) => ({ text: documents[r.index]!, score: r.relevance_score })).sort((x, y) => y.score - x.score));
    } catch (err) {
      setResult([]);
      setError((err as Error).message);
    }
  };
  return (
    <fieldset>
      <legend>Reranking</legend>
      <ModelPicker models={models} value={model} onChange={setModel} label="Model" />
      <label>
        Query <input value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Documents, one per line <textarea value={docs} onInput={(e) => setDocs((e.target as HTMLTextAreaElement).value)} />
      </label>
      <button onClick={rank}>Rank</button>
      <ol>
        {result.map((r) => (
          <li key={r.text}>
            {r.score.toFixed(3)} — {r.text}
          </li>
        ))}
      </ol>
      {error && <p class="error">{error}</p>}
    </fieldset>
  );
}

function Classify({ models }: { models: Model[] }) {
  const [model, setModel] = useState(models[0]!.id);
  const [input, setInput] = useState("Please verify your account at http://secure-login.example now.");
  const [labels, setLabels] = useState<[string, number][]>([]);
  const [error, setError] = useState("");
  const classify = async () => {
    setError("");
    try {
      setLabels(Object.entries((await postJson("/v1/classify", { model, input })).labels as Record<string, number>));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <fieldset>
      <legend>Classification</legend>
      <ModelPicker models={models} value={model} onChange={setModel} label="Model" />
      <label>
        Text <textarea value={input} onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)} />
      </label>
      <button onClick={classify}>Classify</button>
      <ol aria-label="Label scores">
        {labels.map(([label, score]) => (
          <li key={label}>
            <meter min={0} max={1} value={score} /> {score.toFixed(3)} — {label}
          </li>
        ))}
      </ol>
      {error && <p class="error">{error}</p>}
    </fieldset>
  );
}

/** Each panel's model label and its name. */
const KINDS = [
  ["tts", "Text to speech"],
  ["transcription", "Transcription"],
  ["embeddings", "Embeddings"],
  ["reranking", "Reranking"],
  ["classification", "Classification"],
  ["image", "Images"],
  ["upscaling", "Upscale"],
] as const;

export function TryIt() {
  const { data, error } = usePoll(() => getJson("/v1/models"), 0);
  if (error) return <p class="error">{error}</p>;
  if (!data) return <p>Loading models…</p>;
  const all = data.data as Model[];
  const having = (label: string) => all.filter((m) => m.labels.includes(label));
  const [tts, asr, emb, rr, clf, img, up] = KINDS.map(([label]) => having(label));
  const missing = KINDS.filter(([label]) => !having(label).length);
  return (
    <section class="tryit">
      {missing.length > 0 && (
        <div class="missing">
          <p>Some panels are hidden because no model of their kind is here:</p>
          <ul>
            {missing.map(([label, panel]) => (
              <li key={label}>
                {panel} needs a model labelled <code>{label}</code>: <a href={`#models?label=${label}`}>find one in the Model manager</a>
              </li>
            ))}
          </ul>
        </div>
      )}
      {tts!.length > 0 && <Speech models={tts!} />}
      {asr!.length > 0 && <Transcription models={asr!} />}
      {emb!.length > 0 && <Embeddings models={emb!} />}
      {rr!.length > 0 && <Rerank models={rr!} />}
      {clf!.length > 0 && <Classify models={clf!} />}
      {(img!.length > 0 || up!.length > 0) && <ImagePanels image={img!} upscaling={up!} />}
    </section>
  );
}
