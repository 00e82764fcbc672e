#!/usr/bin/python3
"""A tiny random-weight encoder classifier for the onnxruntime tests, laid out as
`optimum-cli export onnx` lays one out: model.onnx (a one-layer BERT written with the onnx
package's helper), a real tokenizer.json (BERT's WordPiece, or RoBERTa's byte-level BPE),
tokenizer_config.json and config.json with id2label. Run by scripts/make-test-models.ts.

Usage: /usr/bin/python3 classifier.py OUTDIR [--token] [--multi-label] [--manifest]
                                             [--arch bert|distilbert|roberta|xlnet] [--seed N]
  --token        a token-classification head (O, B-PER, I-PER, B-LOC, I-LOC), logits [batch, seq, 5]
  --multi-label  config.json declares problem_type multi_label_classification
  --manifest     also writes a manifest.json whose labels and normalisation override config.json's
  --arch         distilbert has no token_type_ids input; roberta neither, with <s> </s>, a
                 byte-level BPE and two positions past its budget; xlnet is a family the server refuses

Needs Debian's python3-onnx and python3-numpy.
"""
import argparse
import json
import math
import os
import re

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 16
HEADS = 2
HEAD_DIM = HIDDEN // HEADS
INTERMEDIATE = 32
MAX_POS = 64
TYPE_VOCAB = 2
LN_EPS = 1e-12
OPSET = 17

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [
    ".", ",", "!", "?", "'",
    "the", "a", "an", "is", "was", "are", "i", "you", "he", "she", "it", "we", "they",
    "this", "that", "and", "or", "not", "no", "to", "of", "in", "on", "for", "with",
    "hello", "world", "good", "bad", "great", "terrible", "movie", "love", "hate", "like",
    "very", "john", "smith", "paris", "play", "work", "happy", "sad",
    "##s", "##ed", "##ing", "##ly", "##er", "##est", "##y", "##n", "##ful",
]
VOCAB = SPECIAL + WORDS  # [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4


def tokenizer_json():
    vocab = {tok: i for i, tok in enumerate(VOCAB)}
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": vocab[t], "content": t, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": True}
            for t in SPECIAL
        ],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 1}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 1}},
            ],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [cls_id], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [sep_id], "tokens": ["[SEP]"]},
            },
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }


def tokenizer_config_json():
    return {
        "tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": MAX_POS,
        "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
        "mask_token": "[MASK]", "clean_up_tokenization_spaces": True,
    }


def config_json(token, multi_label, arch, labels, vocab_size):
    mt = arch
    prefix = {"bert": "Bert", "distilbert": "DistilBert", "roberta": "Roberta", "xlnet": "XLNet"}[arch]
    head = "ForTokenClassification" if token else "ForSequenceClassification"
    cfg = {
        "architectures": [prefix + head],
        "model_type": mt,
        "vocab_size": vocab_size,
        "hidden_size": HIDDEN,
        "num_hidden_layers": 1,
        "num_attention_heads": HEADS,
        "intermediate_size": INTERMEDIATE,
        "hidden_act": "gelu",
        # RoBERTa's positions start after its padding index: two more than its budget.
        "max_position_embeddings": MAX_POS + 2 if arch == "roberta" else MAX_POS,
        "type_vocab_size": 1 if arch == "roberta" else TYPE_VOCAB,
        "layer_norm_eps": LN_EPS,
        "pad_token_id": 1 if arch == "roberta" else 0,
        "id2label": {str(i): l for i, l in enumerate(labels)},
        "label2id": {l: i for i, l in enumerate(labels)},
    }
    if arch == "xlnet":
        cfg.update({"d_model": HIDDEN, "n_layer": 1, "n_head": HEADS, "d_inner": INTERMEDIATE})
    if multi_label:
        cfg["problem_type"] = "multi_label_classification"
    return cfg


def build_model(token, num_labels, seed, token_types=True, vocab_size=len(VOCAB)):
    rng = np.random.RandomState(seed)
    inits = []
    nodes = []

    def w(name, shape, std=0.2):
        inits.append(numpy_helper.from_array(rng.normal(0.0, std, size=shape).astype(np.float32), name))
        return name

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, outs, **attrs):
        nodes.append(helper.make_node(op, ins, outs, name=outs[0] + "_" + op, **attrs))
        return outs[0]

    def ln(x, prefix):
        g = const(prefix + ".weight", np.ones(HIDDEN, np.float32))
        b = const(prefix + ".bias", np.zeros(HIDDEN, np.float32))
        return node("LayerNormalization", [x, g, b], [prefix + ".out"], axis=-1, epsilon=LN_EPS)

    def dense(x, prefix, n_in, n_out, std=0.2):
        wt = w(prefix + ".weight", (n_in, n_out), std)
        bs = const(prefix + ".bias", np.zeros(n_out, np.float32))
        mm = node("MatMul", [x, wt], [prefix + ".mm"])
        return node("Add", [mm, bs], [prefix + ".out"])

    V = vocab_size
    # ---- embeddings
    we = w("embeddings.word_embeddings.weight", (V, HIDDEN), 0.5)
    pe = w("embeddings.position_embeddings.weight", (MAX_POS, HIDDEN), 0.5)
    node("Gather", [we, "input_ids"], ["emb.word"], axis=0)
    if token_types:
        te = w("embeddings.token_type_embeddings.weight", (TYPE_VOCAB, HIDDEN), 0.5)
        node("Gather", [te, "token_type_ids"], ["emb.type"], axis=0)
        node("Add", ["emb.word", "emb.type"], ["emb.wt"])
    else:
        node("Identity", ["emb.word"], ["emb.wt"])
    node("Shape", ["input_ids"], ["ids.shape"])
    const("c.i64.0", np.array(0, np.int64))
    const("c.i64.1", np.array(1, np.int64))
    node("Gather", ["ids.shape", "c.i64.1"], ["seq_len"], axis=0)  # scalar S
    node("Range", ["c.i64.0", "seq_len", "c.i64.1"], ["position_ids"])  # [S]
    node("Gather", [pe, "position_ids"], ["emb.pos"], axis=0)  # [S,H]
    node("Add", ["emb.wt", "emb.pos"], ["emb.sum"])
    x = ln("emb.sum", "embeddings.LayerNorm")

    # ---- extended attention mask: (1 - mask) * -10000 -> [B,1,1,S]
    node("Cast", ["attention_mask"], ["mask.f"], to=TensorProto.FLOAT)
    const("c.f.1", np.array(1.0, np.float32))
    const("c.f.neg", np.array(-10000.0, np.float32))
    node("Sub", ["c.f.1", "mask.f"], ["mask.inv"])
    node("Mul", ["mask.inv", "c.f.neg"], ["mask.add"])
    const("c.axes12", np.array([1, 2], np.int64))
    node("Unsqueeze", ["mask.add", "c.axes12"], ["mask.ext"])

    # ---- self-attention (1 layer, 2 heads)
    p = "encoder.layer.0.attention"
    const("c.shape.heads", np.array([0, 0, HEADS, HEAD_DIM], np.int64))
    const("c.shape.hidden", np.array([0, 0, HIDDEN], np.int64))
    q = dense(x, p + ".self.query", HIDDEN, HIDDEN)
    k = dense(x, p + ".self.key", HIDDEN, HIDDEN)
    v = dense(x, p + ".self.value", HIDDEN, HIDDEN)
    node("Reshape", [q, "c.shape.heads"], ["q.r"])
    node("Reshape", [k, "c.shape.heads"], ["k.r"])
    node("Reshape", [v, "c.shape.heads"], ["v.r"])
    node("Transpose", ["q.r"], ["q.t"], perm=[0, 2, 1, 3])  # [B,h,S,d]
    node("Transpose", ["k.r"], ["k.t"], perm=[0, 2, 3, 1])  # [B,h,d,S]
    node("Transpose", ["v.r"], ["v.t"], perm=[0, 2, 1, 3])  # [B,h,S,d]
    node("MatMul", ["q.t", "k.t"], ["scores.raw"])          # [B,h,S,S]
    const("c.f.scale", np.array(1.0 / np.sqrt(HEAD_DIM), np.float32))
    node("Mul", ["scores.raw", "c.f.scale"], ["scores.scaled"])
    node("Add", ["scores.scaled", "mask.ext"], ["scores"])
    node("Softmax", ["scores"], ["probs"], axis=-1)
    node("MatMul", ["probs", "v.t"], ["ctx"])               # [B,h,S,d]
    node("Transpose", ["ctx"], ["ctx.t"], perm=[0, 2, 1, 3])
    node("Reshape", ["ctx.t", "c.shape.hidden"], ["ctx.r"])  # [B,S,H]
    ao = dense("ctx.r", p + ".output.dense", HIDDEN, HIDDEN)
    node("Add", [ao, x], ["attn.res"])
    x = ln("attn.res", p + ".output.LayerNorm")

    # ---- FFN with exact GELU: 0.5 * x * (1 + erf(x / sqrt(2)))
    p = "encoder.layer.0"
    h = dense(x, p + ".intermediate.dense", HIDDEN, INTERMEDIATE)
    const("c.f.sqrt2", np.array(np.sqrt(2.0), np.float32))
    const("c.f.half", np.array(0.5, np.float32))
    node("Div", [h, "c.f.sqrt2"], ["gelu.div"])
    node("Erf", ["gelu.div"], ["gelu.erf"])
    node("Add", ["gelu.erf", "c.f.1"], ["gelu.add"])
    node("Mul", [h, "gelu.add"], ["gelu.mul"])
    node("Mul", ["gelu.mul", "c.f.half"], ["gelu.out"])
    o = dense("gelu.out", p + ".output.dense", INTERMEDIATE, HIDDEN)
    node("Add", [o, x], ["ffn.res"])
    seq_out = ln("ffn.res", p + ".output.LayerNorm")  # [B,S,H]

    # ---- heads
    if token:
        logits = dense(seq_out, "classifier", HIDDEN, num_labels, 1.0)  # [B,S,L]
        out_shape = ["batch", "sequence", num_labels]
    else:
        node("Gather", [seq_out, "c.i64.0"], ["cls"], axis=1)  # [B,H]
        pooled = dense("cls", "pooler.dense", HIDDEN, HIDDEN, 0.5)
        node("Tanh", [pooled], ["pooler.out"])
        logits = dense("pooler.out", "classifier", HIDDEN, num_labels, 1.0)  # [B,L]
        out_shape = ["batch", num_labels]
    node("Identity", [logits], ["logits"])

    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
              for n in ("input_ids", "attention_mask", "token_type_ids")[: 3 if token_types else 2]]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, out_shape)]
    graph = helper.make_graph(nodes, "tiny_bert", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, producer_name="lemonade-test-models",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


# ---- an independent reference: BERT's WordPiece and the forward pass in numpy, so the tests
# compare the server's scores with numbers that do not come from onnxruntime or the tokenizer
# library.
REFERENCE_TEXTS = [
    "hello world",
    "I love this movie, it is great!",
    "John Smith works in Paris and he was very unhappy",
    "we like paris and john smith, he was happy. they play in paris",
    "",
    # Longer than every model's budget: the reference truncates as the server must.
    " ".join(["the movie was very good and we like it"] * 12),
]


def wordpiece(text, max_length):
    vocab = {tok: i for i, tok in enumerate(VOCAB)}
    ids = []
    for word in re.findall(r"\w+|[^\w\s]", text.lower()):
        start, pieces = 0, []
        while start < len(word):
            end = len(word)
            while end > start and ("##" if start else "") + word[start:end] not in vocab:
                end -= 1
            if end == start:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(vocab[("##" if start else "") + word[start:end]])
            start = end
        ids.extend(pieces)
    ids = ids[: max_length - 2]
    return [vocab["[CLS]"]] + ids + [vocab["[SEP]"]]


def forward(model, ids, token, token_types):
    W = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    ids = np.array([ids])
    S = ids.shape[1]

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + LN_EPS) * W[p + ".weight"] + W[p + ".bias"]

    def dense(x, p):
        return x @ W[p + ".weight"] + W[p + ".bias"]

    x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][:S]
    if token_types:
        x = x + W["embeddings.token_type_embeddings.weight"][np.zeros_like(ids)]
    x = ln(x, "embeddings.LayerNorm")
    a = "encoder.layer.0.attention"
    split = lambda t: t.reshape(1, S, HEADS, HEAD_DIM).transpose(0, 2, 1, 3)
    q, k, v = (split(dense(x, f"{a}.self.{n}")) for n in ("query", "key", "value"))
    sc = q @ k.transpose(0, 1, 3, 2) / math.sqrt(HEAD_DIM)
    pr = np.exp(sc - sc.max(-1, keepdims=True))
    pr /= pr.sum(-1, keepdims=True)
    ctx = (pr @ v).transpose(0, 2, 1, 3).reshape(1, S, HIDDEN)
    x = ln(dense(ctx, f"{a}.output.dense") + x, f"{a}.output.LayerNorm")
    h = dense(x, "encoder.layer.0.intermediate.dense")
    h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    x = ln(dense(h, "encoder.layer.0.output.dense") + x, "encoder.layer.0.output.LayerNorm")
    if token:
        return dense(x, "classifier")[0]  # [S, L]
    return dense(np.tanh(dense(x[:, 0], "pooler.dense")), "classifier")[0]  # [L]


def normalise(logits, sigmoid):
    logits = np.asarray(logits, np.float64)
    if sigmoid:
        return 1 / (1 + np.exp(-logits))
    e = np.exp(logits - logits.max())
    return e / e.sum()


def spans(labels, probs):
    """Entity type -> best span mean, over tags grouped B-X / I-X (specials excluded)."""
    best = {l[2:]: 0.0 for l in labels if l != "O"}
    span = None
    for p in list(probs[1:-1]) + [None]:
        tag = None if p is None else labels[int(np.argmax(p))]
        if tag is None or tag == "O" or tag.startswith("B-") or (span and span[0] != tag[2:]):
            if span:
                best[span[0]] = max(best[span[0]], span[1] / span[2])
            span = None
        if tag and tag != "O":
            span = span or [tag[2:], 0.0, 0]
            span[1] += float(np.max(p))
            span[2] += 1
    return best


def reference(model, token, token_types, labels, sigmoid, max_length, encode=wordpiece):
    out = {}
    for text in REFERENCE_TEXTS:
        logits = forward(model, encode(text, max_length), token, token_types)
        if token:
            out[text] = spans(labels, [normalise(row, sigmoid) for row in logits])
        else:
            out[text] = {l: float(s) for l, s in zip(labels, normalise(logits, sigmoid))}
    return out


# ---- RoBERTa's tokenizer: GPT-2's byte-level BPE with a handful of merges learnt from the
# reference texts, and its own implementation below for the reference.
BPE_SPECIAL = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
# GPT-2's pre-tokenizer pattern, for ASCII text.
BPE_SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BYTE_CHARS = bytes_to_unicode()


def bpe_words(text):
    return ["".join(BYTE_CHARS[b] for b in w.encode("utf-8")) for w in BPE_SPLIT.findall(text)]


def bpe_apply(word, ranks):
    parts = list(word)
    while len(parts) > 1:
        pairs = [(ranks.get((parts[i], parts[i + 1]), 1 << 30), i) for i in range(len(parts) - 1)]
        rank, i = min(pairs)
        if rank == 1 << 30:
            break
        parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2:]
    return parts


def bpe_vocab(merge_count=60):
    """Byte symbols plus merges learnt (most frequent pair first) from the reference texts."""
    words = [list(w) for t in REFERENCE_TEXTS for w in bpe_words(t)]
    merges = []
    for _ in range(merge_count):
        counts = {}
        for w in words:
            for pair in zip(w, w[1:]):
                counts[pair] = counts.get(pair, 0) + 1
        if not counts:
            break
        best = max(sorted(counts), key=lambda p: counts[p])
        merges.append(best)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if (w[i], w[i + 1]) == best:
                    w[i:i + 2] = [w[i] + w[i + 1]]
                i += 1
    vocab = BPE_SPECIAL + [BYTE_CHARS[b] for b in range(256)] + ["".join(m) for m in merges]
    return vocab, merges


def bpe_tokenizer_json(vocab, merges):
    ids = {tok: i for i, tok in enumerate(vocab)}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": t, "single_word": False, "lstrip": t == "<mask>", "rstrip": False,
             "normalized": False, "special": True}
            for i, t in enumerate(BPE_SPECIAL)
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                           "trim_offsets": True, "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": ids, "merges": [" ".join(m) for m in merges]},
    }


def bpe_encode(text, vocab, merges, max_length):
    ids = {tok: i for i, tok in enumerate(vocab)}
    ranks = {m: i for i, m in enumerate(merges)}
    content = [ids[p] for w in bpe_words(text) for p in bpe_apply(w, ranks)][: max_length - 2]
    return [ids["<s>"]] + content + [ids["</s>"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--token", action="store_true", help="token classification head")
    ap.add_argument("--multi-label", action="store_true")
    ap.add_argument("--manifest", action="store_true")
    ap.add_argument("--arch", choices=["bert", "distilbert", "roberta", "xlnet"], default="bert")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"] if a.token else ["NEGATIVE", "NEUTRAL", "POSITIVE"]
    os.makedirs(a.outdir, exist_ok=True)
    roberta = a.arch == "roberta"
    token_types = a.arch not in ("distilbert", "roberta")
    if roberta:
        vocab, merges = bpe_vocab()
        tokenizer, encode = bpe_tokenizer_json(vocab, merges), lambda t, n: bpe_encode(t, vocab, merges, n)
        # No model_max_length: the budget is the positions less RoBERTa's offset of two.
        tokenizer_config = {"tokenizer_class": "RobertaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
                            "pad_token": "<pad>", "unk_token": "<unk>", "mask_token": "<mask>"}
    else:
        vocab, tokenizer, encode, tokenizer_config = VOCAB, tokenizer_json(), wordpiece, tokenizer_config_json()
    model = build_model(a.token, len(labels), a.seed, token_types=token_types, vocab_size=len(vocab))
    onnx.save(model, os.path.join(a.outdir, "model.onnx"))
    files = {
        "tokenizer.json": tokenizer,
        "tokenizer_config.json": tokenizer_config,
        "config.json": config_json(a.token, a.multi_label, a.arch, labels, len(vocab)),
    }
    sigmoid, max_length = a.multi_label, MAX_POS
    if a.manifest:
        files["manifest.json"] = {"id2label": {"0": "SAFE", "1": "SPAM", "2": "PHISHING"},
                                  "problem_type": "multi_label_classification", "max_length": 8}
        labels, sigmoid, max_length = ["SAFE", "SPAM", "PHISHING"], True, 8
    if a.arch != "xlnet":
        files["expected-scores.json"] = reference(model, a.token, token_types, labels, sigmoid, max_length, encode)
    for fn, obj in files.items():
        with open(os.path.join(a.outdir, fn), "w") as f:
            json.dump(obj, f, indent=2, ensure_ascii=False)
            f.write("\n")
    print("wrote", a.outdir, "vocab", len(vocab), "nodes", len(model.graph.node))


if __name__ == "__main__":
    main()
