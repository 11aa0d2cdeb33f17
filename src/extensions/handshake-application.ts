/**
 * The application a WebSocket handshake names. Browsers cannot set headers on `new WebSocket()`,
 * so a handshake may name it in the query instead: `?svc-application-name=<namespace>/<name>`,
 * the header's name as a query parameter. The parameter is taken out of the query the backend
 * receives (svc tells the backend the application in its own `Svc-Application-Name` header, as
 * for HTTP), and the rest of the query is passed on byte for byte.
 *
 * Only handshakes read it: a cookie-authenticated handshake must come from svc's own origin
 * (websocket.ts), while a plain GET carrying the cookie may come from a link on a sibling
 * subdomain (SameSite=Lax), which must not reach per-project extensions by naming an application
 * in the URL.
 */
import { InvalidRequest } from '../errors.js';
import { printable } from '../lib/printable.js';
import { APPLICATION_HEADER } from './access.js';

export const APPLICATION_PARAMETER = APPLICATION_HEADER;

export interface HandshakeApplication {
  /**
   * The application named by the header or the parameter ('' when neither names one), or why
   * they could not be read: access.ts raises that at the application step, after the 404 and
   * 401 checks, as it does for a malformed header.
   */
  readonly application: string | InvalidRequest;
  /** The query for the backend, without the parameter. */
  readonly query: string;
}

/** Header and query of a handshake → the application (or a 400 to raise) and the query to forward. */
export function handshakeApplication(header: string, query: string): HandshakeApplication {
  if (query === '') return { application: header, query };
  const kept: string[] = [];
  const named: (string | undefined)[] = [];
  for (const pair of query.split('&')) {
    const equals = pair.indexOf('=');
    const key = formDecoded(equals === -1 ? pair : pair.slice(0, equals));
    if (key !== APPLICATION_PARAMETER) kept.push(pair);
    else named.push(equals === -1 ? '' : formDecoded(pair.slice(equals + 1)));
  }
  return { application: chosen(header, named), query: named.length === 0 ? query : kept.join('&') };
}

function chosen(header: string, named: readonly (string | undefined)[]): string | InvalidRequest {
  if (named.length === 0 || (named.length === 1 && named[0] === '')) return header; // `?svc-application-name=` names nothing
  if (named.length > 1) return new InvalidRequest(`the query names the application ${named.length} times (${APPLICATION_PARAMETER}); name it once`);
  const fromQuery = named[0];
  if (fromQuery === undefined) return new InvalidRequest(`the ${APPLICATION_PARAMETER} query parameter has malformed percent-encoding`);
  if (header !== '' && header !== fromQuery) {
    return new InvalidRequest(`the Svc-Application-Name header ('${printable(header)}') and the ${APPLICATION_PARAMETER} query parameter ('${printable(fromQuery)}') name different applications`);
  }
  return fromQuery;
}

/** application/x-www-form-urlencoded decoding, as URLSearchParams reads a query; undefined when malformed. */
function formDecoded(text: string): string | undefined {
  const spaced = text.includes('+') ? text.replace(/\+/g, ' ') : text;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return undefined;
  }
}
