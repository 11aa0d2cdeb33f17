/**
 * A stand-in OTLP trace receiver. It follows the OTLP specification's OTLP/HTTP transport
 * (opentelemetry-proto, opentelemetry/proto/collector/trace/v1/trace_service.proto): POST
 * /v1/traces with an ExportTraceServiceRequest, as binary protobuf (application/x-protobuf) or
 * as its JSON mapping (application/json, ids as hex), answered 200 with an empty
 * ExportTraceServiceResponse in the same encoding. It keeps every span it is sent, flattened,
 * and hands each one to the suite's secret check (audit-capture.ts, captureSpan).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { captureSpan } from '../audit-capture.js';

export type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** The proto's SpanKind: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly resource: Readonly<Record<string, AttributeValue>>;
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const;

export interface OtlpReceiver {
  /** The value of OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  readonly endpoint: string;
  readonly spans: readonly ReceivedSpan[];
  /** Each request's Content-Type, in order. */
  readonly contentTypes: readonly string[];
  /** Resolves once `found` holds for the spans received, within `ms`; else throws naming what was seen. */
  waitFor(found: (spans: readonly ReceivedSpan[]) => boolean, what: string, ms?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const type = req.headers['content-type'] ?? '';
      contentTypes.push(type);
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      try {
        const received = type.startsWith('application/json') ? fromJson(JSON.parse(body.toString('utf8')) as JsonRequest) : fromProtobuf(body);
        for (const span of received) captureSpan(JSON.stringify(span));
        spans.push(...received);
      } catch (err: unknown) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(err));
        return;
      }
      if (type.startsWith('application/json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    async waitFor(found, what, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (!found(spans)) {
        if (Date.now() > deadline) throw new Error(`the receiver did not get ${what} within ${ms} ms; it has: ${spans.map((s) => s.name).join(', ')}`);
        await sleep(50);
      }
    },
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

// ---- JSON mapping ----

interface JsonAnyValue { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number }
interface JsonKeyValue { key: string; value: JsonAnyValue }
interface JsonSpan { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: JsonKeyValue[] }
interface JsonRequest { resourceSpans?: { resource?: { attributes?: JsonKeyValue[] }; scopeSpans?: { spans?: JsonSpan[] }[] }[] }

function jsonAttributes(list: readonly JsonKeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) {
    const v = value.stringValue ?? value.boolValue ?? value.doubleValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function fromJson(request: JsonRequest): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const resource = jsonAttributes(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) => (ss.spans ?? []).map((s) => ({
      traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name, kind: s.kind, attributes: jsonAttributes(s.attributes), resource,
    })));
  });
}

// ---- binary protobuf: just the fields read above ----

type Field = { readonly no: number; readonly varint?: bigint; readonly bytes?: Buffer; readonly fixed64?: Buffer };

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = buf[at++];
      if (byte === undefined) throw new Error('truncated varint');
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
    }
  };
  while (at < buf.length) {
    const tag = Number(varint());
    const no = tag >>> 3;
    switch (tag & 7) {
      case 0: out.push({ no, varint: varint() }); break;
      case 1: out.push({ no, fixed64: buf.subarray(at, at + 8) }); at += 8; break;
      case 2: {
        const length = Number(varint());
        out.push({ no, bytes: buf.subarray(at, at + length) });
        at += length;
        break;
      }
      case 5: at += 4; break;
      default: throw new Error(`wire type ${tag & 7} not expected`);
    }
  }
  return out;
}

const messages = (buf: Buffer, no: number): Buffer[] => fields(buf).filter((f) => f.no === no && f.bytes !== undefined).map((f) => f.bytes as Buffer);
const first = (buf: Buffer, no: number): Field | undefined => fields(buf).find((f) => f.no === no);

function protoAttributes(buf: Buffer, no: number): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of messages(buf, no)) {
    const key = first(kv, 1)?.bytes?.toString('utf8') ?? '';
    const value = first(kv, 2)?.bytes;
    if (value === undefined) continue;
    const v = first(value, 1) ?? first(value, 2) ?? first(value, 3) ?? first(value, 4);
    if (v === undefined) continue;
    if (v.no === 1) out[key] = (v.bytes as Buffer).toString('utf8');
    else if (v.no === 2) out[key] = v.varint === 1n;
    else if (v.no === 3) out[key] = Number(BigInt.asIntN(64, v.varint as bigint));
    else out[key] = (v.fixed64 as Buffer).readDoubleLE(0);
  }
  return out;
}

/** The spans of an ExportTraceServiceRequest in binary protobuf, flattened. */
export function fromProtobuf(body: Buffer): ReceivedSpan[] {
  return messages(body, 1).flatMap((rs) => {
    const resourceMessage = first(rs, 1)?.bytes;
    const resource = resourceMessage === undefined ? {} : protoAttributes(resourceMessage, 1);
    return messages(rs, 2).flatMap((ss) => messages(ss, 2).map((s) => ({
      traceId: first(s, 1)?.bytes?.toString('hex') ?? '',
      spanId: first(s, 2)?.bytes?.toString('hex') ?? '',
      parentSpanId: first(s, 4)?.bytes?.toString('hex') ?? '',
      name: first(s, 5)?.bytes?.toString('utf8') ?? '',
      kind: Number(first(s, 6)?.varint ?? 0n),
      attributes: protoAttributes(s, 9),
      resource,
    })));
  });
}
