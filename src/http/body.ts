/** Small JSON body reading for API routes (the proxy streams bodies and never uses this). */
import type { IncomingHttpHeaders } from 'node:http';
import type Koa from 'koa';
import { InvalidRequest } from '../errors.js';

const MAX_JSON_BYTES = 64 * 1024;

export type JsonObject = Readonly<Record<string, unknown>>;

export async function readJson(ctx: Koa.Context): Promise<JsonObject> {
  if (declaresBody(ctx.req.headers) && !ctx.is('application/json')) {
    throw new InvalidRequest('the body must be JSON (Content-Type: application/json)');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_JSON_BYTES) throw new InvalidRequest(`the body is larger than ${MAX_JSON_BYTES} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidRequest('the body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidRequest('the body must be a JSON object');
  return value as JsonObject;
}

/**
 * Whether a request announces a body: a Content-Length other than 0, or any Transfer-Encoding
 * (a chunked body has no length to look at, so the length alone would let any Content-Type
 * through). Also what the extension proxy and the upgrade handler ask.
 */
export function declaresBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length'];
  return (length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined;
}

export function requireString(body: JsonObject, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '') throw new InvalidRequest(`field '${field}' is required and must be a non-empty string`);
  return value;
}

export function optionalString(body: JsonObject, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new InvalidRequest(`field '${field}' must be a string`);
  return value;
}
