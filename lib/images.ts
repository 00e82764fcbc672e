// What an uploaded image is, read before an engine sees it: PNG, JPEG or WebP by its magic, then
// its structure read to the end (PNG: every chunk's CRC, the IDAT stream inflated to exactly the
// rows IHDR promises; JPEG: the marker segments, a frame header, a scan and the end marker;
// WebP: the RIFF container and its VP8/VP8L/VP8X header). A file that fails is what stb_image,
// which sd.cpp decodes with, refuses or decodes to garbage (a truncated PNG, text named .png).
// `sniffImage` reads only the magic, of PNG, JPEG, BMP and GIF: the inputs trellis-server takes.

export type ImageFormat = "png" | "jpeg" | "webp";

export interface ImageInfo {
  format: ImageFormat;
  width: number;
  height: number;
}

/** The image's format and size, or why it is not a readable PNG, JPEG or WebP. */
export function readImage(bytes: Uint8Array): ImageInfo | { error: string } {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47 && b.readUInt32BE(4) === 0x0d0a1a0a) return readPng(b);
    if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return readJpeg(b);
    if (b.length >= 12 && b.toString("latin1", 0, 4) === "RIFF" && b.toString("latin1", 8, 12) === "WEBP") return readWebp(b);
  } catch (err) {
    return { error: (err as Error).message };
  }
  return { error: "not a PNG, JPEG or WebP image" };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const x of bytes) c = CRC_TABLE[(c ^ x) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** Channels per PNG colour type. */
const PNG_CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

function readPng(b: Buffer): ImageInfo {
  let width = 0;
  let height = 0;
  let bits = 0;
  let channels = 0;
  let interlaced = false;
  const idat: Buffer[] = [];
  for (let at = 8; ; ) {
    if (at + 12 > b.length) throw new Error("the PNG is truncated (no IEND chunk)");
    const len = b.readUInt32BE(at);
    const type = b.toString("latin1", at + 4, at + 8);
    if (at + 12 + len > b.length) throw new Error(`the PNG is truncated (its ${type} chunk is cut short)`);
    if (crc32(b.subarray(at + 4, at + 8 + len)) !== b.readUInt32BE(at + 8 + len)) throw new Error(`the PNG is damaged (its ${type} chunk fails its CRC)`);
    const data = b.subarray(at + 8, at + 8 + len);
    if (at === 8) {
      if (type !== "IHDR" || len !== 13) throw new Error("the PNG has no IHDR chunk first");
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      bits = data[8]!;
      channels = PNG_CHANNELS[data[9]!] ?? 0;
      interlaced = data[12] === 1;
      if (!width || !height || !channels || ![1, 2, 4, 8, 16].includes(bits)) throw new Error("the PNG's IHDR is invalid");
    }
    if (type === "IDAT") idat.push(data);
    if (type === "IEND") break;
    at += 12 + len;
  }
  if (!idat.length) throw new Error("the PNG has no image data");
  let raw: Uint8Array;
  try {
    // Bun's own inflate: node:zlib would cost the idle server megabytes of RSS (bench memory).
    // windowBits 15: the zlib-wrapped stream a PNG stores.
    raw = Bun.inflateSync(Buffer.concat(idat), { windowBits: 15 });
  } catch {
    throw new Error("the PNG's image data does not inflate");
  }
  // A non-interlaced image is one filter byte and the packed pixels per row.
  const expected = height * (1 + Math.ceil((width * channels * bits) / 8));
  if (!interlaced && raw.length < expected) throw new Error("the PNG's image data is shorter than its size");
  return { format: "png", width, height };
}

function readJpeg(b: Buffer): ImageInfo {
  let width = 0;
  let height = 0;
  let at = 2;
  for (;;) {
    if (at + 4 > b.length) throw new Error("the JPEG is truncated (no scan)");
    if (b[at] !== 0xff) throw new Error("the JPEG's segments are damaged");
    const marker = b[at + 1]!;
    if (marker === 0xff) {
      at++;
      continue;
    }
    const len = b.readUInt16BE(at + 2);
    if (len < 2 || at + 2 + len > b.length) throw new Error("the JPEG is truncated (a segment is cut short)");
    // SOF0-SOF15, except DHT (C4), JPG (C8) and DAC (CC), carry the frame's size.
    if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
      height = b.readUInt16BE(at + 5);
      width = b.readUInt16BE(at + 7);
    }
    if (marker === 0xda) {
      if (!width || !height) throw new Error("the JPEG has no frame header before its scan");
      at += 2 + len;
      break;
    }
    at += 2 + len;
  }
  // The entropy-coded data runs to the end marker (FFD9); FF00 and restart markers sit inside it.
  for (let i = at; i + 1 < b.length; i++) {
    if (b[i] === 0xff && b[i + 1] === 0xd9) return { format: "jpeg", width, height };
  }
  throw new Error("the JPEG is truncated (no end marker)");
}

function readWebp(b: Buffer): ImageInfo {
  if (b.readUInt32LE(4) + 8 > b.length) throw new Error("the WebP is truncated");
  const type = b.toString("latin1", 12, 16);
  const len = b.readUInt32LE(16);
  const data = b.subarray(20, 20 + len);
  if (data.length < len || len < 10) throw new Error("the WebP is truncated");
  if (type === "VP8 " && data[3] === 0x9d && data[4] === 0x01 && data[5] === 0x2a) {
    return { format: "webp", width: data.readUInt16LE(6) & 0x3fff, height: data.readUInt16LE(8) & 0x3fff };
  }
  if (type === "VP8L" && data[0] === 0x2f) {
    const v = data.readUInt32LE(1);
    return { format: "webp", width: (v & 0x3fff) + 1, height: ((v >>> 14) & 0x3fff) + 1 };
  }
  if (type === "VP8X") return { format: "webp", width: data.readUIntLE(4, 3) + 1, height: data.readUIntLE(7, 3) + 1 };
  throw new Error("the WebP has no VP8, VP8L or VP8X header");
}

/** What a sniffed image is: its usual file extension and its MIME type. */
export interface SniffedImage {
  extension: string;
  mime: string;
}

/** PNG, JPEG, BMP or GIF by their first bytes: what trellis-server decodes. */
export function sniffImage(bytes: Uint8Array): SniffedImage | null {
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return { extension: "png", mime: "image/png" };
  if (starts(0xff, 0xd8, 0xff)) return { extension: "jpg", mime: "image/jpeg" };
  if (starts(0x42, 0x4d)) return { extension: "bmp", mime: "image/bmp" };
  if (starts(0x47, 0x49, 0x46, 0x38) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) return { extension: "gif", mime: "image/gif" };
  return null;
}
