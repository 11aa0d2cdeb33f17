/**
 * Which provider sessions an upstream login made, for the upstream's back-channel logout: when
 * an `oidc` connector's provider ends its session `sid` (or every session of `sub`), the provider
 * sessions it logged in end too (../upstream-logout.ts). Written when a login through the
 * connector resumes at the provider (../provider.ts), read when a verified logout token arrives.
 *
 * Layout: hash `idp:upstream-sid:<sha256 of issuer, sid>` and hash
 * `idp:upstream-sub:<sha256 of issuer, sub>`, each provider session uid -> its account (the
 * provider's `sub`: a session is ended only for that account). The upstream's text is digested
 * with its issuer, so it cannot shape a key and two upstreams never share one. Each hash lives
 * as long as a provider session can (extended at each link) and holds at most
 * MAX_LINKED_SESSIONS members: one upstream user fills only their own, and when it is full the
 * entries of sessions that have ended are dropped first; if it is still full the login is refused
 * (never a session that an upstream logout could not reach).
 */
import { createHash } from 'node:crypto';
import type { UpstreamSession } from '../../../connectors/connector.js';
import type { StateBackend } from '../../state/state.js';

/** Provider sessions one upstream session, or one upstream user, may hold at once. */
export const MAX_LINKED_SESSIONS = 50;

const digest = (issuer: string, kind: string, value: string): string => createHash('sha256').update(`${issuer}\n${kind}\n${value}`).digest('base64url');
const sidKey = (issuer: string, sid: string): string => `idp:upstream-sid:${digest(issuer, 'sid', sid)}`;
const subKey = (issuer: string, sub: string): string => `idp:upstream-sub:${digest(issuer, 'sub', sub)}`;

/** A provider session an upstream login made. */
export interface LinkedSession {
  readonly uid: string;
  readonly account: string;
}

/** The upstream user has MAX_LINKED_SESSIONS live provider sessions already. */
export class TooManyLinkedSessions extends Error {
  constructor() {
    super(`the upstream user has ${MAX_LINKED_SESSIONS} sessions at the identity provider already; log out of one first`);
    this.name = 'TooManyLinkedSessions';
  }
}

export interface UpstreamLinks {
  /** Records that provider session `uid` of `account` came from `upstream`; `isLive` prunes a full hash. */
  link(upstream: UpstreamSession, uid: string, account: string, ttlMs: number, isLive: (uid: string) => Promise<boolean>): Promise<void>;
  /** The provider sessions of the upstream's session `sid`. */
  ofSid(issuer: string, sid: string): Promise<readonly LinkedSession[]>;
  /** The provider sessions of the upstream user `sub`. */
  ofSub(issuer: string, sub: string): Promise<readonly LinkedSession[]>;
  /** Drops an ended provider session from both indexes of its upstream. */
  forget(issuer: string, linked: { readonly sid?: string; readonly sub?: string }, uid: string): Promise<void>;
}

export function createUpstreamLinks(state: Pick<StateBackend, 'hashSet' | 'hashGetAll' | 'hashDelete'>): UpstreamLinks {
  async function add(key: string, uid: string, account: string, ttlMs: number, isLive: (uid: string) => Promise<boolean>): Promise<void> {
    const options = { extendTtlMs: ttlMs, maxFields: MAX_LINKED_SESSIONS };
    if (await state.hashSet(key, uid, account, options)) return;
    const members = Object.keys(await state.hashGetAll(key));
    const ended = (await Promise.all(members.map(async (member) => ((await isLive(member)) ? undefined : member)))).filter((m) => m !== undefined);
    if (ended.length > 0) await state.hashDelete(key, ...ended);
    if (!(await state.hashSet(key, uid, account, options))) throw new TooManyLinkedSessions();
  }

  async function members(key: string): Promise<readonly LinkedSession[]> {
    return Object.entries(await state.hashGetAll(key)).map(([uid, account]) => ({ uid, account }));
  }

  return {
    async link(upstream, uid, account, ttlMs, isLive) {
      await add(subKey(upstream.issuer, upstream.sub), uid, account, ttlMs, isLive);
      if (upstream.sid !== undefined) await add(sidKey(upstream.issuer, upstream.sid), uid, account, ttlMs, isLive);
    },
    ofSid: (issuer, sid) => members(sidKey(issuer, sid)),
    ofSub: (issuer, sub) => members(subKey(issuer, sub)),
    async forget(issuer, linked, uid) {
      if (linked.sid !== undefined) await state.hashDelete(sidKey(issuer, linked.sid), uid);
      if (linked.sub !== undefined) await state.hashDelete(subKey(issuer, linked.sub), uid);
    },
  };
}
