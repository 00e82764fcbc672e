// Try it with image models: generate from a prompt; then, on a source image (a file, or one just
// generated), edit it where a mask painted over it in the browser says, make variations of it,
// or upscale it with an upscaling model. Edits and variations go as OpenAI's images API takes
// them (multipart: `image`, and for an edit a PNG `mask` of the image's own size, white where the
// edit goes); an upscale as Lemonade's JSON body with the PNG in base64.
import { useEffect, useRef, useState } from "preact/hooks";
import { postJson, request, type Model } from "./api.ts";
import { ModelPicker } from "./model-picker.tsx";

/** The image the edit, variation and upscale panels work on. */
interface Source {
  blob: Blob;
  name: string;
  url: string;
  width: number;
  height: number;
}

async function sourceOf(blob: Blob, name: string): Promise<Source> {
  const bitmap = await createImageBitmap(blob);
  const source = { blob, name, url: URL.createObjectURL(blob), width: bitmap.width, height: bitmap.height };
  bitmap.close();
  return source;
}

const pngOfBase64 = (b64: string) => new Blob([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], { type: "image/png" });

/** One request's images (as data: URLs), its error, and whether it is running; one at a time. */
function useImageRequest() {
  const [images, setImages] = useState<string[]>([]);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const run = async (send: () => Promise<{ data: { b64_json: string }[] }>) => {
    if (busy) return;
    setBusy(true);
    setError("");
    try {
      setImages((await send()).data.map((d) => `data:image/png;base64,${d.b64_json}`));
    } catch (err) {
      setError((err as Error).message);
    }
    setBusy(false);
  };
  return { images, error, busy, run };
}

function Results({ what, images, onUse }: { what: string; images: string[]; onUse: (url: string) => void }) {
  return (
    <div class="results">
      {images.map((src, i) => (
        <figure key={src.slice(-40) + i}>
          <img src={src} alt={`${what} ${i + 1}`} class="generated" />
          <figcaption>
            <button class="link" onClick={() => onUse(src)}>
              Use as the source image
            </button>
          </figcaption>
        </figure>
      ))}
    </div>
  );
}

function Generate({ models, onUse }: { models: Model[]; onUse: (url: string) => void }) {
  const [model, setModel] = useState(models[0]!.id);
  const [prompt, setPrompt] = useState("A lemon on a table");
  const req = useImageRequest();
  return (
    <fieldset>
      <legend>Images</legend>
      <ModelPicker models={models} value={model} onChange={setModel} label="Model" />
      <label>
        Prompt <input value={prompt} onInput={(e) => setPrompt((e.target as HTMLInputElement).value)} />
      </label>
      <button onClick={() => req.run(() => postJson("/v1/images/generations", { model, prompt, response_format: "b64_json" }))} disabled={req.busy}>
        Generate
      </button>
      <Results what={prompt} images={req.images} onUse={onUse} />
      {req.error && <p class="error">{req.error}</p>}
    </fieldset>
  );
}

/** What the strokes look like on screen; the mask sent is white wherever they are. */
const PAINT = "#e5484d";

/** A canvas over the source image, the image's own size (scaled with it on screen): strokes of
 * the pointer paint where the edit goes. */
function MaskPainter({ source, canvas }: { source: Source; canvas: { current: HTMLCanvasElement | null } }) {
  const [brush, setBrush] = useState(24);
  const drawing = useRef(false);
  useEffect(() => {
    const c = canvas.current!;
    c.width = source.width;
    c.height = source.height;
  }, [source.url]);
  const at = (e: PointerEvent) => {
    const c = canvas.current!;
    const box = c.getBoundingClientRect();
    return [((e.clientX - box.left) * c.width) / box.width, ((e.clientY - box.top) * c.height) / box.height] as const;
  };
  // The stroke's last point: a fast drag gives points far apart, joined by a line rather than left as dots.
  const last = useRef<readonly [number, number] | null>(null);
  const paint = (e: PointerEvent) => {
    if (!drawing.current) return;
    const c = canvas.current!;
    const g = c.getContext("2d")!;
    const [x, y] = at(e);
    // The brush is sized in screen pixels, whatever the image's own size.
    const r = (brush / 2) * (c.width / c.getBoundingClientRect().width);
    g.fillStyle = PAINT;
    g.strokeStyle = PAINT;
    g.lineWidth = 2 * r;
    g.lineCap = "round";
    g.beginPath();
    const [fromX, fromY] = last.current ?? [x, y];
    g.moveTo(fromX, fromY);
    g.lineTo(x, y);
    g.stroke();
    g.beginPath();
    g.arc(x, y, r, 0, Math.PI * 2);
    g.fill();
    last.current = [x, y];
  };
  const fill = (all: boolean) => {
    const c = canvas.current!;
    const g = c.getContext("2d")!;
    g.clearRect(0, 0, c.width, c.height);
    if (all) {
      g.fillStyle = PAINT;
      g.fillRect(0, 0, c.width, c.height);
    }
  };
  return (
    <div class="mask-editor">
      <div class="mask-stage">
        <img src={source.url} alt="The image to edit" />
        <canvas
          ref={canvas}
          aria-label="Mask: paint over the parts to change"
          onPointerDown={(e) => {
            drawing.current = true;
            last.current = null;
            (e.target as HTMLCanvasElement).setPointerCapture(e.pointerId);
            paint(e);
          }}
          onPointerMove={paint}
          onPointerUp={() => (drawing.current = false)}
          onPointerCancel={() => (drawing.current = false)}
        />
      </div>
      <div class="mask-tools">
        <label>
          Brush <input type="range" min="4" max="96" value={brush} onInput={(e) => setBrush(Number((e.target as HTMLInputElement).value))} />
        </label>
        {/* Without a pointer: the whole image, or none of it. */}
        <button type="button" onClick={() => fill(true)}>
          Mask all
        </button>
        <button type="button" onClick={() => fill(false)}>
          Clear mask
        </button>
      </div>
    </div>
  );
}

/** The mask as the images API takes it: a PNG of the image's size, white where painted, black elsewhere. */
function maskPng(painted: HTMLCanvasElement): Promise<Blob> {
  const out = document.createElement("canvas");
  out.width = painted.width;
  out.height = painted.height;
  const g = out.getContext("2d")!;
  g.drawImage(painted, 0, 0);
  // The strokes turned white, then black put behind them.
  g.globalCompositeOperation = "source-in";
  g.fillStyle = "#fff";
  g.fillRect(0, 0, out.width, out.height);
  g.globalCompositeOperation = "destination-over";
  g.fillStyle = "#000";
  g.fillRect(0, 0, out.width, out.height);
  return new Promise((resolve, reject) => out.toBlob((b) => (b ? resolve(b) : reject(new Error("the mask could not be made"))), "image/png"));
}

/** Whether anything is painted on the mask canvas. */
function painted(c: HTMLCanvasElement): boolean {
  const data = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
  for (let i = 3; i < data.length; i += 4) if (data[i]) return true;
  return false;
}

function Edit({ models, source, onUse }: { models: Model[]; source: Source | null; onUse: (url: string) => void }) {
  const [model, setModel] = useState((models.find((m) => m.labels.includes("edit")) ?? models[0]!).id);
  const [prompt, setPrompt] = useState("Make it blue");
  const canvas = useRef<HTMLCanvasElement | null>(null);
  const req = useImageRequest();
  const [problem, setProblem] = useState("");
  const send = async () => {
    setProblem("");
    if (!source) return;
    if (!prompt.trim()) return setProblem("Say what the edit should do.");
    const form = new FormData();
    form.set("model", model);
    form.set("prompt", prompt);
    form.set("image", source.blob, source.name);
    // No stroke: no mask, and the whole image is the model's to change.
    if (canvas.current && painted(canvas.current)) form.set("mask", await maskPng(canvas.current), "mask.png");
    form.set("response_format", "b64_json");
    await req.run(async () => (await request("/v1/images/edits", { method: "POST", body: form })).json());
  };
  return (
    <fieldset>
      <legend>Edit an image</legend>
      <ModelPicker models={models} value={model} onChange={setModel} label="Model" />
      {source ? <MaskPainter source={source} canvas={canvas} /> : <p class="hint">Choose a source image above, or generate one.</p>}
      <p class="hint">Paint over what should change; with nothing painted, the whole image may change.</p>
      <label>
        Edit prompt <input value={prompt} onInput={(e) => setPrompt((e.target as HTMLInputElement).value)} />
      </label>
      <button onClick={send} disabled={!source || req.busy}>
        Edit
      </button>
      <Results what="Edited image" images={req.images} onUse={onUse} />
      {(problem || req.error) && <p class="error">{problem || req.error}</p>}
    </fieldset>
  );
}

function Variations({ models, source, onUse }: { models: Model[]; source: Source | null; onUse: (url: string) => void }) {
  const [model, setModel] = useState(models[0]!.id);
  const [n, setN] = useState("2");
  const req = useImageRequest();
  const send = () => {
    if (!source) return;
    const form = new FormData();
    form.set("model", model);
    form.set("image", source.blob, source.name);
    form.set("n", n);
    form.set("response_format", "b64_json");
    return req.run(async () => (await request("/v1/images/variations", { method: "POST", body: form })).json());
  };
  return (
    <fieldset>
      <legend>Variations</legend>
      <ModelPicker models={models} value={model} onChange={setModel} label="Model" />
      <label>
        How many <input type="number" min="1" max="10" value={n} onInput={(e) => setN((e.target as HTMLInputElement).value)} />
      </label>
      <button onClick={send} disabled={!source || req.busy}>
        Make variations
      </button>
      {!source && <p class="hint">Choose a source image above, or generate one.</p>}
      <Results what="Variation" images={req.images} onUse={onUse} />
      {req.error && <p class="error">{req.error}</p>}
    </fieldset>
  );
}

function Upscale({ models, source, onUse }: { models: Model[]; source: Source | null; onUse: (url: string) => void }) {
  const [model, setModel] = useState(models[0]!.id);
  const [size, setSize] = useState("");
  // The size it was asked for: the source may change to the result afterwards.
  const [from, setFrom] = useState("");
  const req = useImageRequest();
  const send = async () => {
    if (!source) return;
    setFrom(`${source.width}×${source.height}`);
    // The API takes a PNG: another format is drawn into one first.
    const png = source.blob.type === "image/png" ? source.blob : await toPng(source);
    const bytes = new Uint8Array(await png.arrayBuffer());
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    await req.run(() => postJson("/v1/images/upscale", { model, image: btoa(binary) }));
  };
  return (
    <fieldset>
      <legend>Upscale</legend>
      <ModelPicker models={models} value={model} onChange={setModel} label="Model" />
      <button onClick={send} disabled={!source || req.busy}>
        Upscale
      </button>
      {!source && <p class="hint">Choose a source image above, or generate one.</p>}
      {req.images[0] && (
        <p class="hint" data-upscaled>
          {from} → {size}
        </p>
      )}
      <div class="results">
        {req.images.map((src) => (
          <img key={src.slice(-40)} src={src} alt="Upscaled image" class="generated" onLoad={(e) => setSize(`${(e.target as HTMLImageElement).naturalWidth}×${(e.target as HTMLImageElement).naturalHeight}`)} />
        ))}
      </div>
      {req.images[0] && (
        <button class="link" onClick={() => onUse(req.images[0]!)}>
          Use as the source image
        </button>
      )}
      {req.error && <p class="error">{req.error}</p>}
    </fieldset>
  );
}

async function toPng(source: Source): Promise<Blob> {
  const c = document.createElement("canvas");
  c.width = source.width;
  c.height = source.height;
  c.getContext("2d")!.drawImage(await createImageBitmap(source.blob), 0, 0);
  return new Promise((resolve, reject) => c.toBlob((b) => (b ? resolve(b) : reject(new Error("the image could not be converted to PNG"))), "image/png"));
}

/** The image panels: generation, edit and variations with an image model, upscale with an upscaling one. */
export function ImagePanels({ image, upscaling }: { image: Model[]; upscaling: Model[] }) {
  const [source, setSource] = useState<Source | null>(null);
  const [error, setError] = useState("");
  const choose = (blob: Blob, name: string) => sourceOf(blob, name).then(setSource, (err: Error) => setError(`That file is not an image this browser can read: ${err.message}`));
  const use = (url: string) => {
    setError("");
    void choose(pngOfBase64(url.slice(url.indexOf(",") + 1)), "source.png");
  };
  return (
    <>
      {image.length > 0 && <Generate models={image} onUse={use} />}
      <fieldset class="source">
        <legend>Source image</legend>
        <label>
          Source image file{" "}
          <input
            type="file"
            accept="image/png,image/jpeg"
            onChange={(e) => {
              const file = (e.target as HTMLInputElement).files?.[0];
              setError("");
              if (file) void choose(file, file.name);
            }}
          />
        </label>
        {source && (
          <p class="hint" data-source>
            {source.name}, {source.width}×{source.height}
          </p>
        )}
        {error && <p class="error">{error}</p>}
      </fieldset>
      {image.length > 0 && <Edit models={image} source={source} onUse={use} />}
      {image.length > 0 && <Variations models={image} source={source} onUse={use} />}
      {upscaling.length > 0 && <Upscale models={upscaling} source={source} onUse={use} />}
    </>
  );
}
