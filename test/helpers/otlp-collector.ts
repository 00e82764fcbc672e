// A loopback OTLP/HTTP trace collector for the telemetry tests: it takes POST /v1/traces as JSON
// or protobuf (decoded here, by the OTLP trace proto's field numbers), answers each with the next
// status a test queued (200 when none), and keeps every request with the spans it carried.

/** One received span, the same whichever encoding carried it. */
export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  status: { code: number; message: string };
  attributes: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
}

export interface CollectedRequest {
  contentType: string;
  headers: Headers;
  /** The status the collector answered. */
  answered: number;
  spans: CollectedSpan[];
}

export interface Collector {
  url: string;
  requests: CollectedRequest[];
  /** Spans of the requests answered 2xx, in arrival order. */
  spans(): CollectedSpan[];
  /** Statuses to answer the next requests with, in order. */
  respond(...statuses: number[]): void;
  stop(): void;
}

export function startCollector(): Collector {
  const requests: CollectedRequest[] = [];
  const queued: number[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const bytes = new Uint8Array(await req.arrayBuffer());
      const contentType = req.headers.get("content-type") ?? "";
      const spans = contentType.includes("json") ? fromJson(JSON.parse(new TextDecoder().decode(bytes))) : fromProtobuf(bytes);
      const answered = queued.shift() ?? 200;
      requests.push({ contentType, headers: req.headers, answered, spans });
      return new Response(answered < 300 ? "{}" : `{"error": "status ${answered}"}`, { status: answered, headers: { "content-type": "application/json" } });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/v1/traces`,
    requests,
    spans: () => requests.filter((r) => r.answered < 300).flatMap((r) => r.spans),
    respond: (...statuses) => queued.push(...statuses),
    stop: () => server.stop(true),
  };
}

type Attr = Record<string, string | number | boolean>;

function jsonValue(v: any): string | number | boolean {
  if ("stringValue" in v) return v.stringValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("boolValue" in v) return v.boolValue;
  if ("doubleValue" in v) return v.doubleValue;
  return JSON.stringify(v);
}

const jsonAttrs = (list: any[] | undefined): Attr => Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));

function fromJson(body: any): CollectedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs: any) =>
    (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map((s: any) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? "",
        name: s.name,
        kind: s.kind,
        status: { code: s.status?.code ?? 0, message: s.status?.message ?? "" },
        attributes: jsonAttrs(s.attributes),
        resource: jsonAttrs(rs.resource?.attributes),
      })),
    ),
  );
}

/** A protobuf message's fields by number: varints as bigint, fixed64 as its 8 bytes, fixed32 as
 * a number, length-delimited fields as their bytes. */
function fields(buf: Uint8Array): Map<number, (bigint | Uint8Array | number)[]> {
  const out = new Map<number, (bigint | Uint8Array | number)[]>();
  let pos = 0;
  const varint = () => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const field = key >> 3;
    let value: bigint | Uint8Array | number;
    switch (key & 7) {
      case 0:
        value = varint();
        break;
      case 1:
        value = buf.subarray(pos, pos + 8);
        pos += 8;
        break;
      case 2: {
        const len = Number(varint());
        value = buf.subarray(pos, pos + len);
        pos += len;
        break;
      }
      case 5:
        value = new DataView(buf.buffer, buf.byteOffset + pos, 4).getUint32(0, true);
        pos += 4;
        break;
      default:
        throw new Error(`unexpected wire type ${key & 7}`);
    }
    out.set(field, [...(out.get(field) ?? []), value]);
  }
  return out;
}

const bytesOf = (m: Map<number, unknown[]>, n: number) => (m.get(n) ?? []) as Uint8Array[];
const str = (b: Uint8Array | undefined) => (b ? new TextDecoder().decode(b) : "");
const hex = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString("hex") : "");

function protoValue(any: Map<number, unknown[]>): string | number | boolean {
  if (any.has(1)) return str(bytesOf(any, 1)[0]);
  if (any.has(2)) return (any.get(2)![0] as bigint) !== 0n;
  if (any.has(3)) return Number(BigInt.asIntN(64, any.get(3)![0] as bigint));
  if (any.has(4)) return new DataView((any.get(4)![0] as Uint8Array).slice().buffer).getFloat64(0, true);
  return "";
}

const protoAttrs = (list: Uint8Array[]): Attr =>
  Object.fromEntries(
    list.map((kv) => {
      const f = fields(kv);
      return [str(bytesOf(f, 1)[0]), protoValue(fields(bytesOf(f, 2)[0] ?? new Uint8Array()))];
    }),
  );

/** ExportTraceServiceRequest: resource_spans = 1; ResourceSpans: resource = 1, scope_spans = 2;
 * ScopeSpans: spans = 2; Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6,
 * attributes 9, status 15 (message 2, code 3). */
function fromProtobuf(buf: Uint8Array): CollectedSpan[] {
  return bytesOf(fields(buf), 1).flatMap((rsBytes) => {
    const rs = fields(rsBytes);
    const resource = protoAttrs(bytesOf(fields(bytesOf(rs, 1)[0] ?? new Uint8Array()), 1));
    return bytesOf(rs, 2).flatMap((ssBytes) =>
      bytesOf(fields(ssBytes), 2).map((spanBytes) => {
        const s = fields(spanBytes);
        const status = fields(bytesOf(s, 15)[0] ?? new Uint8Array());
        return {
          traceId: hex(bytesOf(s, 1)[0]),
          spanId: hex(bytesOf(s, 2)[0]),
          parentSpanId: hex(bytesOf(s, 4)[0]),
          name: str(bytesOf(s, 5)[0]),
          kind: Number((s.get(6)?.[0] as bigint | undefined) ?? 0n),
          status: { code: Number((status.get(3)?.[0] as bigint | undefined) ?? 0n), message: str(bytesOf(status, 2)[0]) },
          attributes: protoAttrs(bytesOf(s, 9)),
          resource,
        };
      }),
    );
  });
}
