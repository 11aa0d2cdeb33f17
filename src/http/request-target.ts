/**
 * The path and query string of a request exactly as Koa's ctx.path and ctx.querystring read
 * them (parseurl), for code that runs before Koa. parseurl builds a legacy Url object per
 * request; the common origin-form target (`/path?query`, no whitespace or `#`) is split here
 * with parseurl's own rule instead, and anything else goes to parseurl itself, so both always
 * agree (test/http/request-target.test.ts compares them on generated targets).
 *
 * undefined for a target Node's url.parse refuses (`GET http://[/x`): Koa would throw on ctx.path,
 * and outside Koa an uncaught throw takes the whole process down, so callers answer 400 first.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import parseurl from 'parseurl';
import type { Logger } from 'pino';
import { InvalidRequest } from '../errors.js';
import { errorReply, sendErrorReply } from './errors.js';
import { requestIdOf } from './entry.js';

export const BAD_TARGET = 'the request target is not a valid URL';

export interface RequestTarget {
  readonly path: string;
  /** Without the `?`; '' when there is none. */
  readonly query: string;
}

export function requestTarget(req: Pick<IncomingMessage, 'url'>): RequestTarget | undefined {
  const url = req.url ?? '';
  if (url.charCodeAt(0) !== 0x2f /* / */) return viaParseurl(req);
  let question = -1;
  for (let i = 1; i < url.length; i++) {
    switch (url.charCodeAt(i)) {
      case 0x3f /* ? */:
        if (question === -1) question = i;
        break;
      // parseurl leaves these to Node's url.parse, and so do we.
      case 0x09:
      case 0x0a:
      case 0x0c:
      case 0x0d:
      case 0x20:
      case 0x23:
      case 0xa0:
      case 0xfeff:
        return viaParseurl(req);
    }
  }
  return question === -1 ? { path: url, query: '' } : { path: url.slice(0, question), query: url.slice(question + 1) };
}

function viaParseurl(req: Pick<IncomingMessage, 'url'>): RequestTarget | undefined {
  let parsed;
  try {
    parsed = parseurl(req as IncomingMessage);
  } catch {
    return undefined;
  }
  return { path: parsed?.pathname ?? '', query: typeof parsed?.query === 'string' ? parsed.query : '' };
}

/** The 400 for a target requestTarget() refuses, written on the raw response. */
export function refuseTarget(req: IncomingMessage, res: ServerResponse, log: Logger): void {
  const requestId = requestIdOf(req);
  sendErrorReply(res, errorReply(new InvalidRequest(BAD_TARGET), requestId, log, ''), requestId, req.method);
}
