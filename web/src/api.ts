/**
 * The pages' only way to the server: same-origin fetch of the JSON API with the svc.token
 * cookie. Browsers send `Origin` on every fetch that may change something, and svc accepts the
 * cookie on such a request only from its own origin (src/http/same-origin.ts), which is what
 * protects these calls from cross-site request forgery; `credentials: 'same-origin'` and no
 * token in script reach keep it that way (the cookie is HttpOnly).
 */
import { safeReturnUrl } from './return-url.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Seconds from Retry-After, when the server sent one. */
    readonly retryAfter: number | undefined,
    /** The whole answer (a second step's challenge and factors). */
    readonly body: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.headers = { accept: 'application/json', 'content-type': 'application/json' };
    init.body = JSON.stringify(body);
  }
  let res: Response;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, 'network', 'svc cannot be reached. Check your connection and try again.', undefined);
  }
  const text = await res.text();
  const json = text === '' ? {} : (safeParse(text) as Record<string, unknown>);
  if (res.ok) return json as T;
  const retry = Number(res.headers.get('retry-after'));
  const message = typeof json['message'] === 'string' ? json['message'] : `the server answered ${res.status}`;
  throw new ApiError(res.status, typeof json['error'] === 'string' ? json['error'] : 'unknown', message, Number.isFinite(retry) && retry > 0 ? retry : undefined, json);
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

/** `raw` when it is a place on this site (a path, or a URL of this origin); else `/`: the server's own rule. */
export function sameSiteReturnUrl(raw: string | null): string {
  return safeReturnUrl(raw ?? undefined, location.origin);
}

/** A moment in seconds since the epoch, as the reader's locale writes date and time. */
export function formatTime(seconds: number): string {
  // With the zone: a time without one is read in the reader's zone, rightly or not.
  return new Date(seconds * 1000).toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
}

export function byId<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page has no #${id}`);
  return found as T;
}

export function showMessage(element: HTMLElement, text: string, kind: 'error' | 'ok'): void {
  element.textContent = text;
  element.classList.toggle('error', kind === 'error');
  element.classList.toggle('ok', kind === 'ok');
  element.hidden = false;
}
