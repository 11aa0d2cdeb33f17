/** The request id: the client's X-Request-Id when sane (so a trace can span services), else a fresh UUID. */
import { randomUUID } from 'node:crypto';

const SANE_ID = /^[A-Za-z0-9._-]{1,64}$/;

export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && SANE_ID.test(header) ? header : randomUUID();
}
