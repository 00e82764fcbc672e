// /v1/classify on the real onnxruntime engine, with the tiny random-weight classifiers the project
// writes (scripts/test-models/classifier.py), pulled from a loopback hub. Each classifier's
// folder carries the scores an independent numpy forward pass and WordPiece give for a few
// texts (expected-scores.json); the server's answers are checked against them. A router's
// `classifier` condition routes on those scores between two FAKE chat models.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { classify as classifySpec } from "../../spec/classify.ts";
import { classifierDir } from "../helpers/engines.ts";
import { startFakeServer } from "../helpers/fake-engine.ts";
import { startFakeHub, type FakeHub } from "../helpers/fake-hub.ts";
import { expectMatches, type TestServer } from "../helpers/server.ts";

type Scores = Record<string, Record<string, number>>;
type Name = Parameters<typeof classifierDir>[0];

let server: TestServer;
let hub: FakeHub;
const REPOS: Record<string, Name> = {
  // The catalog's Phishing-Email-Detection-ONNX, stood in for by the DistilBERT classifier.
  "lemonade-sdk/phishing-email-detection-distilbert-ONNX": "distilbert",
  "test-org/sentiment-ONNX": "sentiment",
  "test-org/multi-label-ONNX": "multiLabel",
  "test-org/names-ONNX": "names",
  "test-org/roberta-ONNX": "roberta",
  "test-org/manifest-ONNX": "manifest",
  "test-org/xlnet-ONNX": "xlnet",
};
const expected = (name: Name): Scores => JSON.parse(readFileSync(join(classifierDir(name), "expected-scores.json"), "utf8"));
const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
const loaded = async () => (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded.map((m: any) => m.model_name);

function expectScores(labels: Record<string, number>, want: Record<string, number>): void {
  expect(Object.keys(labels).sort()).toEqual(Object.keys(want).sort());
  for (const [label, score] of Object.entries(want)) expect(labels[label]!).toBeCloseTo(score, 4);
  const values = Object.values(labels);
  expect(values).toEqual([...values].sort((a, b) => b - a));
}

const folderFiles = (dir: string) => Object.fromEntries(readdirSync(dir).map((f) => [f, new Uint8Array(readFileSync(join(dir, f)))]));
const hubRepos = () => Object.fromEntries(Object.entries(REPOS).map(([repo, name], i) => [repo, { sha: String(i + 1).repeat(40), files: folderFiles(classifierDir(name)) }]));

beforeAll(async () => {
  // The sentiment model with a manifest that declares two labels for its three outputs.
  const files = folderFiles(classifierDir("sentiment"));
  files["manifest.json"] = new TextEncoder().encode(JSON.stringify({ id2label: { "0": "BAD", "1": "GOOD" } }));
  hub = startFakeHub({ ...hubRepos(), "test-org/mislabelled-ONNX": { sha: "f".repeat(40), files } });
  // Two FAKE chat models (extra.alpha, extra.beta) for the router to route between.
  server = await startFakeServer(["alpha", "beta"], { HF_ENDPOINT: hub.url });
});
afterAll(async () => {
  await server?.close();
  hub?.stop();
});

test("malformed requests are 400s before anything loads", async () => {
  const cases: [unknown, number, string][] = [
    ["{not json", 400, "invalid_json"],
    [[1, 2], 400, ""],
    [{ model: "Phishing-Email-Detection-ONNX" }, 400, "missing_argument"],
    [{ model: "Phishing-Email-Detection-ONNX", input: 42 }, 400, "invalid_argument"],
    [{ model: "Phishing-Email-Detection-ONNX", text: ["a"] }, 400, "invalid_argument"],
    [{ model: 7, input: "x" }, 400, "invalid_argument"],
    [{ model: "", input: "x" }, 400, "invalid_argument"],
    [{ model: "Phishing-Email-Detection-ONNX", input: "x", top_k: 0 }, 400, "invalid_argument"],
    [{ model: "Phishing-Email-Detection-ONNX", input: "x", top_k: 1.5 }, 400, "invalid_argument"],
    [{ model: "Phishing-Email-Detection-ONNX", input: "x", top_k: "2" }, 400, "invalid_argument"],
    // No model named and none loaded.
    [{ input: "x" }, 400, "missing_argument"],
    // A chat model is refused by its type before its load.
    [{ model: "Qwen3-0.6B-GGUF", input: "x" }, 400, "invalid_argument"],
    [{ model: "No-Such-Classifier", input: "x" }, 404, "model_not_found"],
  ];
  for (const [body, status, code] of cases) {
    const res = await post("/v1/classify", body);
    expect(res.status, JSON.stringify(body)).toBe(status);
    const err = (await res.json()).error;
    expect(typeof err.message, JSON.stringify(body)).toBe("string");
    if (code) expect(err.code, JSON.stringify(body)).toBe(code);
  }
  expect(await loaded()).toEqual([]);
});

test("the catalog's classifier downloads, loads and scores as the reference does, on every path", async () => {
  const entry = (await (await fetch(`${server.url}/v1/models?show_all=true`)).json()).data.find((m: any) => m.id === "Phishing-Email-Detection-ONNX");
  expect(entry).toMatchObject({ recipe: "onnxruntime", labels: ["classification"], downloaded: false });
  expect((await post("/v1/pull", { model_name: "Phishing-Email-Detection-ONNX" })).status).toBe(200);
  const want = expected("distilbert");
  for (const [i, path] of ["/v1/classify", "/api/v1/classify", "/v0/classify", "/api/v0/classify"].entries()) {
    const text = Object.keys(want)[i]!;
    const res = await post(path, { model: "Phishing-Email-Detection-ONNX", input: text });
    expect(res.status).toBe(200);
    const body = await res.json();
    expectMatches(classifySpec.response, body);
    expect(body).toMatchObject({ object: "classification", model: "Phishing-Email-Detection-ONNX" });
    expectScores(body.labels, want[text]!);
    expect(Object.values(body.labels as Record<string, number>).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
  }
  expect(await loaded()).toEqual(["Phishing-Email-Detection-ONNX"]);
  // With a classifier loaded, `model` may be left out: the loaded one answers and is named.
  const implicit = await (await post("/v1/classify", { text: "hello world" })).json();
  expect(implicit.model).toBe("Phishing-Email-Detection-ONNX");
  expectScores(implicit.labels, want["hello world"]!);
});

test("a registered classifier: `text` as the alias, top_k keeps the best k in order", async () => {
  const pulled = await post("/v1/pull", { model_name: "user.Sentiment", checkpoint: "test-org/sentiment-ONNX", recipe: "onnxruntime", labels: ["classifier"] });
  expect(pulled.status).toBe(200);
  const listed = (await (await fetch(`${server.url}/v1/models/Sentiment`)).json()).labels;
  expect(listed).toEqual(["classification", "custom"]);
  const want = expected("sentiment");
  for (const [text, scores] of Object.entries(want)) {
    const body = await (await post("/v1/classify", { model: "Sentiment", text })).json();
    expect(body.model).toBe("Sentiment");
    expectScores(body.labels, scores);
  }
  const text = "I love this movie, it is great!";
  const ranked = Object.entries(want[text]!).sort((a, b) => b[1] - a[1]).map(([l]) => l);
  for (const k of [1, 2, 5]) {
    const body = await (await post("/v1/classify", { model: "Sentiment", input: text, top_k: k })).json();
    expect(Object.keys(body.labels)).toEqual(ranked.slice(0, k));
  }
});

test("a router's classifier condition routes on the classifier's label scores", async () => {
  const mood = { id: "mood", type: "classifier", model: "Sentiment", labels: ["NEUTRAL", "POSITIVE"] };
  const register = (name: string, match: Record<string, unknown>, classifier: Record<string, unknown> = mood) =>
    post("/v1/pull", {
      model_name: name,
      recipe: "collection.router",
      version: "1",
      components: ["extra.alpha", "extra.beta", "Sentiment"],
      routing: { candidates: ["extra.alpha", "extra.beta"], default_model: "extra.alpha", classifiers: [classifier], rules: [{ id: "calm", match, route_to: "extra.beta" }] },
    });
  const text = "I love this movie, it is great!";
  const neutral = expected("sentiment")[text]!.NEUTRAL!;
  expect((await register("user.Calm", { classifier: "mood", label: "NEUTRAL", min_score: neutral - 0.01 })).status).toBe(200);
  expect((await register("user.Picky", { classifier: "mood", label: "NEUTRAL", min_score: Math.min(1, neutral + 0.001) })).status).toBe(200);
  const chat = (model: string) => post("/v1/chat/completions", { model, route_trace: true, messages: [{ role: "user", content: text }] });
  const calm = await chat("Calm");
  expect(calm.headers.get("x-lemonade-route")).toBe("calm");
  const trace = (await calm.json()).x_lemonade_route;
  expect(trace.route_to).toBe("extra.beta");
  const picky = await chat("Picky");
  expect(picky.headers.get("x-lemonade-route")).toBe("default");
  expect((await picky.json()).x_lemonade_route.route_to).toBe("extra.alpha");
  // A classifier condition needs a classification model, and labels the policy lists.
  const notClassifier = await register("user.Wrong", { classifier: "mood", label: "NEUTRAL" }, { ...mood, model: "extra.alpha" });
  expect(notClassifier.status).toBe(400);
  expect((await notClassifier.json()).message).toContain("'extra.alpha' is not a fixed-label classification model");
  const dangling = await register("user.Dangling", { classifier: "mood", label: "ANGRY" });
  expect((await dangling.json()).message).toContain("'ANGRY' is not one of classifier 'mood''s labels");
});

test("a huge input is cut to the token budget: it scores as its first tokens do", async () => {
  // The sentiment model's budget is 64 tokens: 62 of text between [CLS] and [SEP].
  const huge = "hello world ".repeat(200_000);
  const started = performance.now();
  const long = await (await post("/v1/classify", { model: "Sentiment", input: huge })).json();
  expect(performance.now() - started).toBeLessThan(5_000);
  const prefix = await (await post("/v1/classify", { model: "Sentiment", input: "hello world ".repeat(31) })).json();
  const shorter = await (await post("/v1/classify", { model: "Sentiment", input: "hello world ".repeat(30) })).json();
  for (const [label, score] of Object.entries(prefix.labels as Record<string, number>)) expect(long.labels[label]).toBeCloseTo(score, 6);
  expect(Object.entries(shorter.labels as Record<string, number>).some(([l, v]) => Math.abs(v - long.labels[l]) > 1e-6)).toBe(true);
});

test("a RoBERTa classifier: byte-level BPE between <s> and </s>, its budget two short of its positions", async () => {
  await post("/v1/pull", { model_name: "user.Roberta", checkpoint: "test-org/roberta-ONNX", recipe: "onnxruntime" });
  // The last reference text is longer than the 64-token budget (66 positions less RoBERTa's 2).
  for (const [text, scores] of Object.entries(expected("roberta"))) {
    const body = await (await post("/v1/classify", { model: "Roberta", input: text })).json();
    expectScores(body.labels, scores);
  }
});

test("a crashed classifier engine is started again for the next request; the server stays up", async () => {
  const before = await (await post("/v1/classify", { model: "Sentiment", input: "hello world" })).json();
  const pid = (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded.find((m: any) => m.model_name === "Sentiment").pid;
  process.kill(pid, "SIGKILL");
  await Bun.sleep(100);
  const after = await post("/v1/classify", { model: "Sentiment", input: "hello world" });
  expect(after.status).toBe(200);
  expect((await after.json()).labels).toEqual(before.labels);
  const now = (await (await fetch(`${server.url}/v1/health`)).json()).all_models_loaded.find((m: any) => m.model_name === "Sentiment").pid;
  expect(now).not.toBe(pid);
});

test("a multi-label model (problem_type) scores each label by sigmoid", async () => {
  await post("/v1/pull", { model_name: "user.Multi", checkpoint: "test-org/multi-label-ONNX", recipe: "onnxruntime" });
  const want = expected("multiLabel");
  const text = "John Smith works in Paris and he was very unhappy";
  const body = await (await post("/v1/classify", { model: "Multi", input: text })).json();
  expectScores(body.labels, want[text]!);
  // Independent sigmoids: these do not sum to 1.
  expect(Math.abs(Object.values(body.labels as Record<string, number>).reduce((a, b) => a + b, 0) - 1)).toBeGreaterThan(0.05);
});

test("a token classifier answers entity types scored by their best span", async () => {
  await post("/v1/pull", { model_name: "user.Names", checkpoint: "test-org/names-ONNX", recipe: "onnxruntime" });
  for (const [text, scores] of Object.entries(expected("names"))) {
    const body = await (await post("/v1/classify", { model: "Names", input: text })).json();
    expectScores(body.labels, scores);
  }
});

test("manifest.json overrides config.json's labels, normalisation and token budget", async () => {
  await post("/v1/pull", { model_name: "user.Manifest", checkpoint: "test-org/manifest-ONNX", recipe: "onnxruntime" });
  // The reference truncates to the manifest's 8 tokens; this text is longer.
  const text = "John Smith works in Paris and he was very unhappy";
  const body = await (await post("/v1/classify", { model: "Manifest", input: text })).json();
  expect(Object.keys(body.labels).sort()).toEqual(["PHISHING", "SAFE", "SPAM"]);
  expectScores(body.labels, expected("manifest")[text]!);
});

test("an unsupported architecture (XLNet) is refused at load, and nothing stays loaded", async () => {
  await post("/v1/pull", { model_name: "user.XLNet", checkpoint: "test-org/xlnet-ONNX", recipe: "onnxruntime" });
  const before = await loaded();
  for (const res of [await post("/v1/classify", { model: "XLNet", input: "hello" }), await post("/v1/load", { model_name: "XLNet" })]) {
    expect(res.status).toBe(500);
    // Both answer an error object: OpenAI's (/v1/classify), Lemonade's model error (/v1/load).
    const err = (await res.json()).error;
    expect(err.code).toBe("model_load_error");
    expect(err.message).toContain('model_type "xlnet"');
    expect(err.message).toContain("not a supported encoder family");
  }
  expect(await loaded()).toEqual(before);
});

test("a graph whose output does not fit the declared labels fails its load, not a request", async () => {
  await post("/v1/pull", { model_name: "user.Mislabelled", checkpoint: "test-org/mislabelled-ONNX", recipe: "onnxruntime" });
  const res = await post("/v1/classify", { model: "Mislabelled", input: "hello" });
  expect(res.status).toBe(500);
  const err = (await res.json()).error;
  expect(err.code).toBe("model_load_error");
  expect(err.message).toContain("model.onnx answers float32 [1, 3], but a sequence classifier with 2 labels answers float32 [1, 2]");
  expect(await loaded()).not.toContain("Mislabelled");
});

test("a download that stopped after config.json does not count as downloaded", async () => {
  const sha = "9".repeat(40);
  const base = join(server.cacheDir, "hf", "models--test-org--partial-ONNX");
  mkdirSync(join(base, "snapshots", sha), { recursive: true });
  mkdirSync(join(base, "refs"));
  writeFileSync(join(base, "refs", "main"), sha);
  writeFileSync(join(base, "snapshots", sha, "config.json"), readFileSync(join(classifierDir("sentiment"), "config.json")));
  await post("/v1/models/register", { model_name: "user.Partial", checkpoint: "test-org/partial-ONNX", recipe: "onnxruntime" });
  expect((await (await fetch(`${server.url}/v1/models/Partial`)).json()).downloaded).toBe(false);
  writeFileSync(join(base, "snapshots", sha, "model.onnx"), readFileSync(join(classifierDir("sentiment"), "model.onnx")));
  writeFileSync(join(base, "snapshots", sha, "tokenizer.json"), readFileSync(join(classifierDir("sentiment"), "tokenizer.json")));
  expect((await (await fetch(`${server.url}/v1/models/Partial`)).json()).downloaded).toBe(true);
});

test("labels: a llama.cpp model cannot be a classifier", async () => {
  const res = await post("/v1/pull", { model_name: "user.Clf", recipe: "llamacpp", checkpoint: "example/model:Q4_K_M", labels: ["classification"] });
  expect(res.status).toBe(400);
  expect((await res.json()).message).toBe(
    "Model 'user.Clf': recipe 'llamacpp' cannot serve 'classification'. It serves 'chat', 'embeddings', 'reranking'. Omit the label to deploy as 'chat'.",
  );
});
