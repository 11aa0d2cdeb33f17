/**
 * The user's groups from Microsoft Graph, with the access token of the login's code exchange
 * (delegated `User.Read` and `GroupMember.Read.All`), by Graph's documented calls:
 *
 * - `POST /v1.0/me/getMemberObjects` `{ securityEnabledOnly }`: the ids of the groups (and
 *   directory roles, administrative units) the user is a member of, transitively; further pages
 *   by GET on `@odata.nextLink` (Graph's paging), never off Graph's origin;
 * - `POST /v1.0/directoryObjects/getByIds` `{ ids, types: ['group'] }`: those ids' group objects
 *   (display name, securityEnabled), at most 1,000 ids a request.
 *
 * Bounded: MAX_GRAPH_GROUPS ids, MAX_GRAPH_PAGES pages, GRAPH_TIME_BUDGET_MS for all of it. A
 * throttling answer (429, or 503) with `Retry-After` is waited out when the wait fits in what is
 * left of the budget, at most MAX_THROTTLE_WAITS times; otherwise, and on any other failure, a
 * GraphFailed with the reason: the caller refuses the login rather than make it without groups.
 * The ids in the token's overage pointer (`_claim_sources`) are never followed: svc asks its own
 * configured Graph, so a token cannot send the access token elsewhere.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { readJson, send, type Upstream } from '../oauth2/http.js';

export const MAX_GRAPH_GROUPS = 5_000;
export const MAX_GRAPH_PAGES = 50;
export const GRAPH_TIME_BUDGET_MS = 20_000;
export const MAX_THROTTLE_WAITS = 3;
/** Graph's limit of ids in one getByIds request. */
export const GET_BY_IDS_CHUNK = 1_000;

/** Graph did not give the groups (the reason names the call and the status; never the token). */
export class GraphFailed extends Error {
  override readonly name = 'GraphFailed';
}

export interface GraphGroup {
  readonly id: string;
  readonly displayName: string | undefined;
  readonly securityEnabled: boolean;
}

export interface GraphContext {
  readonly up: Upstream;
  /** graphURL: the origin of every request and of every page followed. */
  readonly graphURL: string;
  readonly accessToken: string;
  readonly signal: AbortSignal;
  readonly now: () => Date;
}

/** One Graph request, throttling waited out within the budget; the JSON body of a 200. */
async function call(g: GraphContext, what: string, url: string, body: unknown, deadline: number): Promise<unknown> {
  if (new URL(url).origin !== g.graphURL) throw new GraphFailed(`${what}: the next page is not on ${g.graphURL}`);
  for (let waits = 0; ; waits++) {
    const init: RequestInit = body === undefined
      ? { headers: { accept: 'application/json', authorization: `Bearer ${g.accessToken}` } }
      : { method: 'POST', headers: { accept: 'application/json', 'content-type': 'application/json', authorization: `Bearer ${g.accessToken}` }, body: JSON.stringify(body) };
    const res = await send(g.up, what, url, init, AbortSignal.any([g.signal, AbortSignal.timeout(Math.max(1, deadline - g.now().getTime()))]));
    if (res.status === 200) return readJson(g.up, what, res, g.signal);
    await res.body?.cancel();
    if (res.status !== 429 && res.status !== 503) {
      const hint = res.status === 401 || res.status === 403 ? ' (has GroupMember.Read.All been granted admin consent?)' : '';
      throw new GraphFailed(`${what} answered HTTP ${res.status}${hint}`);
    }
    const waitMs = retryAfterMs(res.headers.get('retry-after'), g.now());
    const left = deadline - g.now().getTime();
    if (waitMs === undefined || waits === MAX_THROTTLE_WAITS || waitMs > left) {
      throw new GraphFailed(`${what}: throttled (HTTP ${res.status}, Retry-After ${res.headers.get('retry-after') ?? 'absent'}) past the bound of ${MAX_THROTTLE_WAITS} waits within ${GRAPH_TIME_BUDGET_MS / 1000} s`);
    }
    g.up.log.info({ waitMs }, `microsoft: ${what}: throttled by Graph; waiting as Retry-After says`);
    await sleep(waitMs, undefined, { signal: g.signal });
  }
}

/** Retry-After as delta-seconds or an HTTP date (RFC 9110 §10.2.3), in ms; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now: Date): number | undefined {
  if (header === null) return undefined;
  if (/^\d{1,6}$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

function valueOf(what: string, body: unknown): { value: unknown[]; next: string | undefined } {
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['value'] : undefined;
  if (!Array.isArray(value)) throw new GraphFailed(`${what}: the answer has no value list`);
  const next = (body as Record<string, unknown>)['@odata.nextLink'];
  return { value, next: typeof next === 'string' ? next : undefined };
}

/** The ids of every group the user is a member of (every page), within the bounds. */
export async function memberObjectIds(g: GraphContext, securityEnabledOnly: boolean, deadline: number): Promise<string[]> {
  const what = 'POST /v1.0/me/getMemberObjects';
  const ids: string[] = [];
  let page = await call(g, what, `${g.graphURL}/v1.0/me/getMemberObjects`, { securityEnabledOnly }, deadline);
  for (let pages = 1; ; pages++) {
    const { value, next } = valueOf(what, page);
    for (const id of value) {
      if (typeof id !== 'string' || id === '') throw new GraphFailed(`${what}: the answer holds something other than ids`);
      ids.push(id);
    }
    if (ids.length > MAX_GRAPH_GROUPS) throw new GraphFailed(`${what}: more than ${MAX_GRAPH_GROUPS} groups; refusing a partial list`);
    if (next === undefined) return ids;
    if (pages === MAX_GRAPH_PAGES) throw new GraphFailed(`${what}: more than ${MAX_GRAPH_PAGES} pages; refusing a partial list`);
    page = await call(g, `${what} (page ${pages + 1})`, next, undefined, deadline);
  }
}

/** The group objects of `ids` (ids of other kinds of object are left out by Graph). */
export async function groupsByIds(g: GraphContext, ids: readonly string[], deadline: number): Promise<GraphGroup[]> {
  const what = 'POST /v1.0/directoryObjects/getByIds';
  const groups: GraphGroup[] = [];
  for (let at = 0; at < ids.length; at += GET_BY_IDS_CHUNK) {
    const body = await call(g, what, `${g.graphURL}/v1.0/directoryObjects/getByIds`, { ids: ids.slice(at, at + GET_BY_IDS_CHUNK), types: ['group'] }, deadline);
    for (const item of valueOf(what, body).value) {
      const o = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
      if (typeof o['id'] !== 'string' || o['id'] === '') throw new GraphFailed(`${what}: an object without an id`);
      // getByIds with types ['group'] answers groups only; anything else is not taken as one.
      if (o['@odata.type'] !== undefined && o['@odata.type'] !== '#microsoft.graph.group') continue;
      const displayName = typeof o['displayName'] === 'string' && o['displayName'] !== '' ? o['displayName'] : undefined;
      groups.push({ id: o['id'], displayName, securityEnabled: o['securityEnabled'] === true });
    }
  }
  return groups;
}
