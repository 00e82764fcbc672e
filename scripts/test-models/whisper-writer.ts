// Writes a tiny whisper.cpp model (its legacy ggml format: hparams, mel filters, vocabulary,
// then named tensors) with random weights and the GPT-2 byte-level vocabulary whisper uses.
import { writeFileSync, renameSync } from "node:fs";

const GGML_MAGIC = 0x67676d6c;

export interface WhisperDims {
  nVocab: number;
  audioCtx: number;
  state: number;
  heads: number;
  layers: number;
  textCtx: number;
  mels: number;
}

class Out {
  private parts: Buffer[] = [];
  i32(...vs: number[]) {
    const b = Buffer.alloc(4 * vs.length);
    vs.forEach((v, i) => b.writeInt32LE(v, 4 * i));
    this.parts.push(b);
  }
  bytes(b: Uint8Array) {
    this.parts.push(Buffer.from(b));
  }
  f32(data: Float32Array) {
    this.parts.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }
  f16(data: Float32Array) {
    const b = Buffer.alloc(data.length * 2);
    const view = new DataView(new ArrayBuffer(4));
    for (let i = 0; i < data.length; i++) {
      view.setFloat32(0, data[i]!);
      const x = view.getUint32(0);
      const exp = ((x >>> 23) & 0xff) - 127 + 15;
      const half = exp <= 0 ? (x >>> 16) & 0x8000 : ((x >>> 16) & 0x8000) | (Math.min(exp, 30) << 10) | ((x >>> 13) & 0x3ff);
      b.writeUInt16LE(half, i * 2);
    }
    this.parts.push(b);
  }
  write(path: string) {
    writeFileSync(`${path}.partial`, Buffer.concat(this.parts));
    renameSync(`${path}.partial`, path);
  }
}

export function writeWhisperModel(path: string, dims: WhisperDims, vocab: Uint8Array[], next: () => number): void {
  const o = new Out();
  const { nVocab, audioCtx, state, heads, layers, textCtx, mels } = dims;
  o.i32(GGML_MAGIC, nVocab, audioCtx, state, heads, layers, textCtx, state, heads, layers, mels, 1 /* ftype F16 */);
  // Mel filters: triangular-ish positive weights, so the spectrogram is finite and varies with sound.
  const nFft = 201;
  const filters = new Float32Array(mels * nFft);
  for (let m = 0; m < mels; m++) for (let f = 0; f < nFft; f++) filters[m * nFft + f] = Math.max(0, 1 - Math.abs(f - m * 2.5) / 3) * 0.05;
  o.i32(mels, nFft);
  o.f32(filters);
  o.i32(vocab.length);
  for (const t of vocab) {
    o.i32(t.length);
    o.bytes(t);
  }
  const rand = (n: number, scale: number) => Float32Array.from({ length: n }, () => (next() * 2 - 1) * scale);
  const tensor = (name: string, ne: number[], f16: boolean, data: Float32Array) => {
    const nameBytes = new TextEncoder().encode(name);
    o.i32(ne.length, nameBytes.length, f16 ? 1 : 0, ...ne);
    o.bytes(nameBytes);
    if (f16) o.f16(data);
    else o.f32(data);
  };
  const n = (ne: number[]) => ne.reduce((a, b) => a * b, 1);
  const weight = (name: string, ne: number[]) => tensor(name, ne, true, rand(n(ne), 0.1));
  const vec = (name: string, ne: number[], value: number) => tensor(name, ne, false, new Float32Array(n(ne)).fill(value));
  const block = (prefix: string, cross: boolean) => {
    for (const part of cross ? ["attn", "cross_attn"] : ["attn"]) {
      vec(`${prefix}.${part}_ln.weight`, [state], 1);
      vec(`${prefix}.${part}_ln.bias`, [state], 0);
      weight(`${prefix}.${part}.query.weight`, [state, state]);
      vec(`${prefix}.${part}.query.bias`, [state], 0);
      weight(`${prefix}.${part}.key.weight`, [state, state]);
      weight(`${prefix}.${part}.value.weight`, [state, state]);
      vec(`${prefix}.${part}.value.bias`, [state], 0);
      weight(`${prefix}.${part}.out.weight`, [state, state]);
      vec(`${prefix}.${part}.out.bias`, [state], 0);
    }
    vec(`${prefix}.mlp_ln.weight`, [state], 1);
    vec(`${prefix}.mlp_ln.bias`, [state], 0);
    weight(`${prefix}.mlp.0.weight`, [state, 4 * state]);
    vec(`${prefix}.mlp.0.bias`, [4 * state], 0);
    weight(`${prefix}.mlp.2.weight`, [4 * state, state]);
    vec(`${prefix}.mlp.2.bias`, [state], 0);
  };
  tensor("encoder.positional_embedding", [state, audioCtx], false, rand(state * audioCtx, 0.1));
  weight("encoder.conv1.weight", [3, mels, state]);
  vec("encoder.conv1.bias", [1, state], 0);
  weight("encoder.conv2.weight", [3, state, state]);
  vec("encoder.conv2.bias", [1, state], 0);
  for (let i = 0; i < layers; i++) block(`encoder.blocks.${i}`, false);
  vec("encoder.ln_post.weight", [state], 1);
  vec("encoder.ln_post.bias", [state], 0);
  tensor("decoder.positional_embedding", [state, textCtx], false, rand(state * textCtx, 0.1));
  weight("decoder.token_embedding.weight", [state, nVocab]);
  for (let i = 0; i < layers; i++) block(`decoder.blocks.${i}`, true);
  vec("decoder.ln.weight", [state], 1);
  vec("decoder.ln.bias", [state], 0);
  o.write(path);
}
