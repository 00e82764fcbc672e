// Real images for the FAKE image engines: a solid PNG (or a grey baseline JPEG) of the size asked
// for, carrying, as sd.cpp does, an A1111-style `parameters` text ("prompt\nSteps: 20, CFG
// scale: 7, Seed: 42, Size: 512x512, ..."), and beside it the request the engine received as
// JSON (keyword `fake-request`), so a test can decode the image and read back what reached it.
import { deflateSync } from "node:zlib";
import { crc32 } from "../../lib/images.ts";

function chunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "ascii");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

const text = (keyword: string, value: string) => chunk("tEXt", Buffer.from(`${keyword}\0${value}`, "latin1"));

/** A width x height RGB PNG of one colour, carrying `record` (JSON) and the `parameters` text. */
export function png(width: number, height: number, rgb: [number, number, number], record: unknown, parameters?: string): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  const row = Buffer.alloc(1 + width * 3);
  for (let x = 0; x < width; x++) row.set(rgb, 1 + x * 3);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    ...(parameters === undefined ? [] : [text("parameters", parameters)]),
    text("fake-request", JSON.stringify(record)),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", new Uint8Array()),
  ]);
}

const segment = (marker: number, data: Uint8Array) => {
  const head = Buffer.from([0xff, marker, 0, 0]);
  head.writeUInt16BE(data.length + 2, 2);
  return Buffer.concat([head, data]);
};

/** A width x height mid-grey baseline JPEG at `quality` (its one quantisation value follows it),
 * with the `parameters` text and `record` in COM segments. Every 8x8 block is DC 0, then end of
 * block, each a one-bit Huffman code. */
export function jpeg(width: number, height: number, quality: number, record: unknown, parameters = ""): Buffer {
  const sof = Buffer.from([8, 0, 0, 0, 0, 1, 1, 0x11, 0]);
  sof.writeUInt16BE(height, 1);
  sof.writeUInt16BE(width, 3);
  const q = Math.max(1, Math.min(255, Math.round((101 - quality) * 2.5)));
  const huffman = (tableClass: number) => Buffer.from([tableClass << 4, 1, ...new Array(15).fill(0), 0]);
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const scan = Buffer.alloc(Math.ceil((blocks * 2) / 8));
  // The bits after the last block are padded with ones, as the standard asks.
  const used = blocks * 2;
  if (used % 8) scan[scan.length - 1] = 0xff >> used % 8;
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    segment(0xfe, Buffer.from(`parameters\0${parameters}`, "latin1")),
    segment(0xfe, Buffer.from(`fake-request\0${JSON.stringify(record)}`, "latin1")),
    segment(0xdb, Buffer.from([0, ...new Array(64).fill(q)])),
    segment(0xc0, sof),
    segment(0xc4, huffman(0)),
    segment(0xc4, huffman(1)),
    segment(0xda, Buffer.from([1, 1, 0x00, 0, 63, 0])),
    scan,
    Buffer.from([0xff, 0xd9]),
  ]);
}

/** Width and height from a PNG's IHDR. */
export function pngSize(bytes: Uint8Array): { width: number; height: number } {
  const b = Buffer.from(bytes);
  if (b.readUInt32BE(0) !== 0x89504e47) throw new Error("not a PNG");
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

/** A PNG's `tEXt` value for `keyword`. */
export function pngText(bytes: Uint8Array, keyword: string): string | undefined {
  const b = Buffer.from(bytes);
  for (let at = 8; at + 8 <= b.length; ) {
    const len = b.readUInt32BE(at);
    if (b.toString("ascii", at + 4, at + 8) === "tEXt") {
      const value = b.toString("latin1", at + 8, at + 8 + len);
      if (value.startsWith(`${keyword}\0`)) return value.slice(keyword.length + 1);
    }
    at += 12 + len;
  }
  return undefined;
}

/** The request the FAKE engine recorded in a PNG it made. */
export function pngParameters(bytes: Uint8Array): unknown {
  const record = pngText(bytes, "fake-request");
  return record === undefined ? undefined : JSON.parse(record);
}
