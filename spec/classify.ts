// Text classification with an encoder classifier (lemonade.md).
import { Type as T, type Static } from "@sinclair/typebox";
import { endpoint } from "./endpoint.ts";
import { LOADING_ERRORS } from "./errors.ts";

export const classify = endpoint({
  id: "lemonade.classify",
  method: "POST",
  path: "/classify",
  mount: "versioned",
  page: "lemonade",
  errorStyle: "openai",
  access: "api",
  summary: "Classify input text with an encoder classifier (label scores)",
  availability: "fully_available",
  description:
    "Runs an encoder text classifier (an `onnxruntime` model) on the input and returns per-label scores in `[0, 1]`, highest first, downloading and loading the model when needed. A servable model is a directory (or Hugging Face repository) holding `model.onnx`, `tokenizer.json` and `config.json`, as `optimum-cli export onnx` writes it. `config.json` declares the architecture, checked at load against the supported single-sequence encoder families (BERT, DistilBERT, RoBERTa, XLM-RoBERTa, DeBERTa v1/v2, ELECTRA, ALBERT, CamemBERT); another family, such as XLNet, is refused at load rather than served with wrong scores. Labels come from `config.json`'s `id2label`; scores are a softmax unless `problem_type` is `multi_label_classification` (a sigmoid per label). A token-classification model's tags are grouped into spans (`B-X` starts one, `I-X` continues it) and each entity type scores as its best span's mean token score (0 when the input has none). Inputs longer than the model's token budget (`tokenizer_config.json` `model_max_length`, else `max_position_embeddings`) are truncated. An optional `manifest.json` beside them overrides the output contract: `id2label` (or a `labels` list), `problem_type` (or `multi_label`), `max_length`, and `task` (`sequence` or `token`).",
  body: T.Object(
    {
      model: T.Optional(
        T.String({ description: "Classifier model id (an `onnxruntime` model). Optional when a classification model is loaded: that model (the most recently used, when several are) answers and is echoed in the response." }),
      ),
      input: T.Optional(T.String({ description: "Text to classify (required). `text` is accepted as an alias." })),
      text: T.Optional(T.String({ description: "Alias of `input`." })),
      top_k: T.Optional(T.Integer({ minimum: 1, description: "Return only the highest-scoring `k` labels." })),
    },
    { additionalProperties: true },
  ),
  response: T.Object({
    object: T.Literal("classification", { description: 'Always `"classification"`' }),
    model: T.String({ description: "The model that classified the input" }),
    labels: T.Record(T.String(), T.Number(), { description: "Label name -> score in `[0, 1]`, highest first" }),
  }),
  errors: [
    { status: 400, code: "invalid_json", when: "The body is not a JSON object" },
    { status: 400, code: "missing_argument", when: "Neither `input` nor `text` is given, or `model` is omitted while no classification model is loaded" },
    { status: 400, code: "invalid_argument", when: "A field is not a string, `top_k` is not a positive integer, or `model` is not an `onnxruntime` classifier; checked before any load" },
    ...LOADING_ERRORS,
  ],
  example: {
    body: { model: "Phishing-Email-Detection-ONNX", input: "Please verify your account at http://secure-login.example now." },
    response: '{"object": "classification", "model": "Phishing-Email-Detection-ONNX", "labels": {"LABEL_1": 0.982, "LABEL_0": 0.011, "LABEL_2": 0.005, "LABEL_3": 0.002}}',
  },
});

export type ClassifyRequest = Static<typeof classify.body>;
export type ClassifyResponse = Static<typeof classify.response>;
