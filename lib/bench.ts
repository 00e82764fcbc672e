// The measuring code `bun run bench` and `lemonade bench` share: statistics, a stream timed from
// the client's side, request rates with keep-alive clients, a conversation's next turn, and the
// figures with their goals, printed as one table. It speaks HTTP only, so it measures this server,
// the real Lemonade (`lemond`) or any OpenAI-compatible URL alike.

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
export const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
export const fmt = (ms: number) => `${ms.toFixed(1)} ms`;
/** The median of the ratios of runs taken in pairs (`over[i]` sent beside `under[i]`): drift
 * between pairs cancels, which a ratio of the two sides' medians does not. */
export const pairedRatio = (over: number[], under: number[]) => median(over.map((x, i) => x / under[i]!));

/** A goal on a figure: on its ratio to the baseline (when it has one) or on its value. */
export interface Goal {
  op: "<=" | ">=" | "<";
  target: number;
  /** On the value itself though the figure has a baseline (an absolute goal, the ratio shown beside it). */
  onValue?: boolean;
}

/** One measured figure: its value, the baseline measured in the same run, and its goal. */
export interface Figure {
  name: string;
  value: number;
  unit: string;
  baseline?: { name: string; value: number };
  goal?: Goal;
}

export const ratioOf = (f: Figure) => (f.baseline ? f.value / f.baseline.value : undefined);

/** Whether a figure meets its goal (undefined without one). */
export function meets(f: Figure): boolean | undefined {
  if (!f.goal) return undefined;
  const x = f.goal.onValue ? f.value : (ratioOf(f) ?? f.value);
  return f.goal.op === "<=" ? x <= f.goal.target : f.goal.op === "<" ? x < f.goal.target : x >= f.goal.target;
}

const num = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(Math.abs(x) >= 10 ? 1 : 2));

/** A figure's value as printed: a ratio (unit "x") to three places, as the ratio column prints them. */
const valueText = (f: Figure) => (f.unit === "x" ? `${f.value.toFixed(3)} x` : `${num(f.value)} ${f.unit}`);

/** The figures as rows: value, baseline, ratio, goal and whether it is met. */
export function table(title: string, figures: Figure[]): string {
  const rows = figures.map((f) => {
    const r = ratioOf(f);
    const ok = meets(f);
    return [
      f.name,
      valueText(f),
      f.baseline ? `${f.baseline.name} ${num(f.baseline.value)} ${f.unit}` : "",
      r === undefined ? "" : r.toFixed(3),
      f.goal ? `${r === undefined || f.goal.onValue ? "" : "ratio "}${f.goal.op} ${f.goal.target}${f.goal.onValue ? ` ${f.unit}` : ""}` : "",
      ok === undefined ? "" : ok ? "met" : "MISSED",
    ];
  });
  const head = ["figure", "value", "baseline (same run)", "ratio", "goal", ""];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => "  " + cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  return [title, line(head), ...rows.map(line)].join("\n");
}

export interface StreamTiming {
  /** Until the response's headers. */
  headersMs: number;
  ttftMs: number;
  totalMs: number;
  events: number;
  tokensPerSecond: number;
  /** The text streamed. */
  text: string;
}

/** One streamed chat completion, timed from the client: headers, first content event, last, and
 * how many. `send` is the HTTP client (one that retries a pooled connection the engine closed). */
export async function timeChatStream(url: string, body: Record<string, unknown>, init: { headers?: Record<string, string>; send?: typeof fetch } = {}): Promise<StreamTiming> {
  const t0 = performance.now();
  const res = await (init.send ?? fetch)(url, {
    method: "POST",
    body: JSON.stringify({ ...body, stream: true }),
    headers: { "content-type": "application/json", ...init.headers },
  });
  const headersMs = performance.now() - t0;
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let first = 0;
  let last = 0;
  let events = 0;
  let rest = "";
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    // Events can straddle reads: only whole ones count, the partial rest carried over.
    const parts = (rest + decoder.decode(value, { stream: true })).split("\n\n");
    rest = parts.pop()!;
    let n = 0;
    for (const part of parts) {
      if (!part.includes('"content":"')) continue;
      n++;
      const data = part.slice(part.indexOf("{"));
      try {
        text += JSON.parse(data).choices?.[0]?.delta?.content ?? "";
      } catch {}
    }
    if (n > 0) {
      last = performance.now();
      if (!first) first = last;
      events += n;
    }
  }
  const totalMs = performance.now() - t0;
  return { headersMs, ttftMs: first - t0, totalMs, events, tokensPerSecond: events > 1 ? ((events - 1) * 1000) / (last - first) : 0, text };
}

/** Requests per second `clients` keep-alive clients get from `url` in `seconds`. */
export async function rate(url: string, seconds: number, clients = 8, headers: Record<string, string> = {}): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let count = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const res = await fetch(url, { headers });
        if (!res.ok) throw new Error(`${url} answered ${res.status}`);
        await res.arrayBuffer();
        count++;
      }
    }),
  );
  return count / seconds;
}

/** A user turn of about `tokens` tokens (one short English word is about one token), different per
 * `seed`, so conversations share no prefix. */
export function longTurn(tokens: number, seed: number): string {
  const words = ["lamp", "river", "stone", "cloud", "field", "wind", "road", "ship", "tree", "glass", "bird", "hill", "door", "fire", "snow", "sand"];
  let x = seed * 2654435761;
  const out = [`Story ${seed}:`];
  for (let i = 0; i < tokens; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out.push(words[x % words.length]!);
  }
  return out.join(" ");
}

export interface Server {
  /** The server's base URL (`/v1/...` and `/live` below it), or an OpenAI-compatible `.../v1` URL. */
  base: string;
  headers?: Record<string, string>;
}

/** The OpenAI API's root of a server: `<base>/v1` unless the base already ends with it. */
export const apiRoot = (s: Server) => (/\/v\d+$/.test(s.base) ? s.base : `${s.base}/v1`);

/** Loads a model through Lemonade's `/v1/load` (a server without it loads on first use). */
export async function loadModel(s: Server, model: string, extra: Record<string, unknown> = {}): Promise<boolean> {
  const res = await fetch(`${apiRoot(s)}/load`, { method: "POST", headers: { "content-type": "application/json", ...s.headers }, body: JSON.stringify({ model_name: model, ...extra }) }).catch(() => null);
  await res?.arrayBuffer();
  return res?.ok === true;
}

/** Listing and health req/s over /live's (on a server that has them), with their goals. */
export async function servingRates(s: Server, seconds: number): Promise<Figure[]> {
  const root = apiRoot(s);
  const live = await rate(`${s.base.replace(/\/v\d+$/, "")}/live`, seconds, 8, s.headers).catch(() => undefined);
  const out: Figure[] = [];
  for (const [name, path, goal] of [["/v1/models req/s", "/models", 0.3], ["/v1/health req/s", "/health", undefined]] as const) {
    const rps = await rate(`${root}${path}`, seconds, 8, s.headers).catch(() => undefined);
    if (rps === undefined) continue;
    out.push({ name, value: rps, unit: "req/s", ...(live ? { baseline: { name: "/live", value: live } } : {}), ...(goal && live ? { goal: { op: ">=", target: goal } } : {}) });
  }
  if (live) out.push({ name: "/live req/s", value: live, unit: "req/s" });
  return out;
}

/** A short stream's time to headers and first token, and a long one's tokens/s, for a model. */
export async function streamFigures(s: Server, model: string, runs: number): Promise<Figure[]> {
  const url = `${apiRoot(s)}/chat/completions`;
  const body = (n: number) => ({ model, messages: [{ role: "user", content: "Tell me a story." }], max_tokens: n, ignore_eos: true, seed: 1 });
  await timeChatStream(url, body(4), { headers: s.headers });
  const short = [];
  for (let i = 0; i < runs; i++) short.push(await timeChatStream(url, body(32), { headers: s.headers }));
  return [
    { name: `time to first token p50 (32-token stream, ${model})`, value: median(short.map((t) => t.ttftMs)), unit: "ms" },
    { name: "time to headers p50", value: median(short.map((t) => t.headersMs)), unit: "ms" },
    { name: "tokens/s p50", value: median(short.map((t) => t.tokensPerSecond)), unit: "tok/s" },
  ];
}

/** Alternating requests for two models: each one swaps when one model fits at a time. */
export async function swapFigures(s: Server, a: string, b: string, runs: number): Promise<Figure[]> {
  const url = `${apiRoot(s)}/chat/completions`;
  const body = (model: string) => ({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
  await timeChatStream(url, body(a), { headers: s.headers });
  const swaps: number[] = [];
  for (let i = 0; i < runs; i++) swaps.push((await timeChatStream(url, body(i % 2 ? a : b), { headers: s.headers })).ttftMs);
  return [{ name: `time to first token forcing a swap p50 (${a} <-> ${b})`, value: median(swaps), unit: "ms" }];
}

/** A long conversation's next turn after a swap: time to first token with the saved KV cache
 * restored, over the same turn on a model never evicted (goal <= 1.3) and over the same turn
 * after a swap with nothing saved to restore (the prefill it saved). `swap` unloads `a` (by
 * loading `b`) and loads `a` again, so load time is not counted. */
export async function kvRestoreFigures(s: Server, a: string, b: string, runs: number, tokens = 3000): Promise<Figure[]> {
  const url = `${apiRoot(s)}/chat/completions`;
  const ask = (messages: { role: string; content: string }[]) => timeChatStream(url, { model: a, messages, max_tokens: 8, temperature: 0, seed: 1 }, { headers: s.headers });
  const swap = async () => {
    if (!(await loadModel(s, b)) || !(await loadModel(s, a))) throw new Error("the KV restore figures need /v1/load (a Lemonade server) and max_loaded_models=1");
  };
  const conversation = async (seed: number, swapped: boolean, first: boolean) => {
    const user = { role: "user", content: longTurn(tokens, seed) };
    const reply = first ? (await ask([user])).text : "Once upon a time.";
    if (swapped) await swap();
    return (await ask([user, { role: "assistant", content: reply }, { role: "user", content: "Go on." }])).ttftMs;
  };
  await loadModel(s, a);
  await conversation(1000, false, true);
  const warm: number[] = [];
  const restored: number[] = [];
  const cold: number[] = [];
  for (let i = 0; i < runs; i++) {
    warm.push(await conversation(3 * i + 1, false, true));
    restored.push(await conversation(3 * i + 2, true, true));
    // Its first turn never sent, this conversation has nothing saved: the whole prompt is prefilled.
    cold.push(await conversation(3 * i + 3, true, false));
  }
  const r = median(restored);
  return [
    { name: `next turn of a ${tokens}-token conversation after a swap, KV restored: TTFT p50`, value: r, unit: "ms", baseline: { name: "never evicted", value: median(warm) }, goal: { op: "<=", target: 1.3 } },
    { name: "the same, over the turn after a swap with nothing restored", value: r, unit: "ms", baseline: { name: "full prefill", value: median(cold) } },
  ];
}
