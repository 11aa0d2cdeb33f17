/**
 * A user's Google Workspace groups from the Admin SDK Directory API: `GET
 * admin/directory/v1/groups?userKey=<email>` (the groups the key is a direct member of), every
 * page through `pageToken`, as the administrator the domain of the email maps to. With
 * `transitive`, each group found is asked for in turn (groups of groups), each key once, so a
 * cycle ends. A group is named by its email address, as Dex names it.
 *
 * Bounded: at most MAX_GROUPS groups and MAX_DIRECTORY_REQUESTS requests per login, within the
 * login's deadline. Past a bound, or on any failure, the login is refused rather than made with
 * part of the groups: a rule that refuses members of a group must never miss that group.
 */
import { UpstreamMisconfigured, UpstreamUnavailable } from '../errors.js';
import { readJson, send, type Upstream } from '../oauth2/http.js';
import { GROUPS_UNAVAILABLE, type DirectoryTokens } from './access-token.js';
import { ANY_DOMAIN } from './config.js';

export const MAX_GROUPS = 1000;
export const MAX_DIRECTORY_REQUESTS = 100;
/** The API's own maximum page size. */
const PAGE_SIZE = 200;

export interface Directory {
  readonly up: Upstream;
  readonly tokens: DirectoryTokens;
  /** The API's base URL (https://admin.googleapis.com). */
  readonly url: string;
  /** Domain (lower case) or `*` -> the administrator to act as. */
  readonly admins: ReadonlyMap<string, string>;
}

interface Page {
  readonly groups: readonly string[];
  readonly next?: string;
}

/** The administrator for the domain of `email`, or `*`'s; undefined when neither is configured. */
export function adminFor(admins: ReadonlyMap<string, string>, email: string): string | undefined {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return admins.get(domain) ?? admins.get(ANY_DOMAIN);
}

/** The groups of `email` (and with `transitive` their groups, up); refuses the login on any failure. */
export async function groupsOf(dir: Directory, email: string, transitive: boolean, signal: AbortSignal): Promise<string[]> {
  const admin = adminFor(dir.admins, email);
  if (admin === undefined) {
    throw new UpstreamMisconfigured(GROUPS_UNAVAILABLE, { reason: `domainToAdminEmail names no administrator for the domain of ${email}, nor *` });
  }
  const found = new Map<string, string>();
  const asked = new Set([email.toLowerCase()]);
  const queue = [email];
  let requests = 0;
  for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
    let pageToken: string | undefined;
    do {
      if (++requests > MAX_DIRECTORY_REQUESTS) throw tooMany(`more than ${MAX_DIRECTORY_REQUESTS} Directory API requests`);
      const page: Page = await fetchPage(dir, admin, key, pageToken, signal);
      for (const group of page.groups) {
        const lower = group.toLowerCase();
        if (found.has(lower)) continue;
        found.set(lower, group);
        if (found.size > MAX_GROUPS) throw tooMany(`more than ${MAX_GROUPS} groups`);
        if (transitive && !asked.has(lower)) {
          asked.add(lower);
          queue.push(group);
        }
      }
      pageToken = page.next;
    } while (pageToken !== undefined);
  }
  return [...found.values()];
}

function tooMany(what: string): UpstreamMisconfigured {
  return new UpstreamMisconfigured(GROUPS_UNAVAILABLE, { reason: `the Directory API gave ${what} for one login; refusing a partial list` });
}

/** One page of groups of `key`; a refused token is dropped and a new one tried once. */
async function fetchPage(dir: Directory, admin: string, key: string, pageToken: string | undefined, signal: AbortSignal): Promise<Page> {
  const url = new URL('admin/directory/v1/groups', `${dir.url.replace(/\/+$/, '')}/`);
  url.searchParams.set('userKey', key);
  url.searchParams.set('maxResults', String(PAGE_SIZE));
  if (pageToken !== undefined) url.searchParams.set('pageToken', pageToken);
  const what = 'GET admin/directory/v1/groups';
  for (let attempt = 0; ; attempt++) {
    const token = await dir.tokens.token(admin, signal);
    let res: Response;
    let body: unknown;
    try {
      res = await send(dir.up, what, url.href, { headers: { accept: 'application/json', authorization: `Bearer ${token}` } }, signal);
      body = await readJson(dir.up, what, res, signal);
    } catch (err: unknown) {
      throw new UpstreamUnavailable(GROUPS_UNAVAILABLE, { cause: err, reason: `${what} failed` });
    }
    if (res.status === 401 && attempt === 0) {
      dir.tokens.forget(admin);
      continue;
    }
    if (res.status !== 200) throw new UpstreamUnavailable(GROUPS_UNAVAILABLE, { reason: `${what} for ${key} acting as ${admin} answered HTTP ${res.status}${apiMessage(body)}` });
    return readPage(body, what);
  }
}

/** Google's error answer's message (`{"error":{"code":403,"message":"Not Authorized to access this resource/api"}}`). */
function apiMessage(body: unknown): string {
  const error = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  const message = typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : undefined;
  return typeof message === 'string' ? `: ${message.slice(0, 200)}` : '';
}

/** `{ kind: "admin#directory#groups", groups?: [{ email, ... }], nextPageToken? }`; no `groups` means none. */
function readPage(body: unknown, what: string): Page {
  const malformed = (): never => {
    throw new UpstreamMisconfigured(GROUPS_UNAVAILABLE, { reason: `${what} answered something other than a list of groups` });
  };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return malformed();
  const { groups, nextPageToken } = body as { groups?: unknown; nextPageToken?: unknown };
  if (groups !== undefined && !Array.isArray(groups)) return malformed();
  const emails = (groups ?? []).map((group: unknown) => {
    const address = typeof group === 'object' && group !== null ? (group as { email?: unknown }).email : undefined;
    return typeof address === 'string' && address !== '' ? address : malformed();
  });
  if (nextPageToken !== undefined && typeof nextPageToken !== 'string') return malformed();
  return nextPageToken === undefined || nextPageToken === '' ? { groups: emails } : { groups: emails, next: nextPageToken };
}
