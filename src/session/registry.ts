/**
 * The session registry: every login's session (session-record.ts), kept in the state backend so
 * that every replica lists and ends the same ones. A session ends by revoking every token id it
 * holds (revocation.ts: refused at once on every replica), then its record goes; listeners
 * (the SSO refresh token, the bundled provider's own session) are told after.
 *
 * Layout, per account: hash `sessions:<account>` (token id -> record), hash
 * `sessions-used:<account>` (token id -> the minute it was last used, written at most once a
 * minute by usage.ts), and per upstream session hash `sessions-sid:<digest>` (token id ->
 * account) for back-channel logout. Each hash lives as long as its longest-lived member
 * (hashSet's extendTtlMs); an expired or revoked member is dropped when the account is listed.
 * Bounded per account: past `maxPerAccount` (default 50) the oldest sessions are ended, so a
 * script that logs in in a loop cannot grow the store, and its older tokens stop working.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { AuditEvent, AuditSource, AuditTrail, AuditUser } from '../audit/trail.js';
import { NotFound } from '../errors.js';
import type { StateBackend } from '../state/state.js';
import type { Revocation } from './revocation.js';
import { parseRecord, serializeRecord, tokensOf, type SessionRecord } from './session-record.js';

export const DEFAULT_SESSIONS_PER_ACCOUNT = 50;
export const SESSIONS_PER_ACCOUNT_ENV = 'SVC_SESSIONS_PER_ACCOUNT';
/** Earlier token ids a renewed session keeps, to revoke with it (each lives minutes at most). */
const EARLIER_KEPT = 3;

const recordsKey = (account: string): string => `sessions:${account}`;
const usedKey = (account: string): string => `sessions-used:${account}`;
/** The upstream sid is the provider's text: digested, with its issuer, so it cannot shape the key. */
export const sidKey = (issuer: string, sid: string): string => `sessions-sid:${createHash('sha256').update(`${issuer}\n${sid}`).digest('base64url')}`;

/** Why a session ended, for the audit trail's `svc.via`. */
export type EndVia = 'logout' | 'list' | 'backchannel' | 'bound' | 'provider';

export interface EndContext {
  readonly via: EndVia;
  /** Who ended it, when not the session's own user (an admin); the audit event names them. */
  readonly by?: AuditUser;
  readonly source?: AuditSource;
}

export interface ListedSession {
  readonly record: SessionRecord;
  /** Milliseconds since the epoch, to the minute; undefined when not used since its login. */
  readonly lastUsedMs: number | undefined;
}

export type NewSession = Omit<SessionRecord, 'createdAt' | 'earlier'>;

export interface SessionRegistry {
  /** Records a login's session; ends the account's oldest past the bound. */
  record(session: NewSession): Promise<void>;
  /** Records a session first seen in use (a token from before the registry, the CLI's SSO token), unless known. */
  recordIfAbsent(session: NewSession): Promise<void>;
  /** The account's live sessions, newest first. */
  list(account: string): Promise<readonly ListedSession[]>;
  /** Ends one of the account's sessions by its token id (NotFound when it has none of that id). */
  end(account: string, id: string, context: EndContext): Promise<SessionRecord>;
  /**
   * Logout: ends the session of this token; a token the registry does not hold (from before it,
   * or not recorded while the backend was down) is revoked all the same.
   */
  logout(account: string, id: string, exp: number | undefined, context: EndContext): Promise<void>;
  /** Ends every session of the account but `keepId`; how many ended. */
  endOthers(account: string, keepId: string | undefined, context: EndContext): Promise<number>;
  /** Ends every session of the account that `issuer` gave (back-channel logout by `sub`); how many ended. */
  endFromIssuer(account: string, issuer: string, context: EndContext): Promise<number>;
  /** Ends every session of the upstream session `sid` at `issuer`; how many ended. */
  endBySid(issuer: string, sid: string, context: EndContext): Promise<number>;
  /** An SSO session renewed: the record follows the new token, the old id is kept to revoke with it. */
  renewed(account: string, oldId: string, next: { readonly id: string; readonly exp: number }): Promise<void>;
  /** Writes the minute a session was last used (usage.ts calls it at most once a minute per session). */
  touch(account: string, id: string, minuteMs: number, expiresAt: number): Promise<void>;
  /** Called after each session ends (its tokens revoked, its record gone). */
  onEnded(listener: (record: SessionRecord, context: EndContext) => Promise<void> | void): () => void;
}

export interface SessionRegistryDeps {
  readonly state: StateBackend;
  readonly revocation: Pick<Revocation, 'revoke' | 'revokedNow'>;
  readonly audit: AuditTrail;
  readonly log: Pick<Logger, 'info' | 'warn'>;
  readonly now: () => number;
  readonly maxPerAccount?: number;
}

export function createSessionRegistry(deps: SessionRegistryDeps): SessionRegistry {
  const { state, now } = deps;
  const max = deps.maxPerAccount ?? DEFAULT_SESSIONS_PER_ACCOUNT;
  const listeners = new Set<(record: SessionRecord, context: EndContext) => Promise<void> | void>();

  const lifeMs = (expiresAt: number): number => Math.max(1, Math.ceil(expiresAt * 1000 - now()));

  async function write(record: SessionRecord): Promise<void> {
    const extendTtlMs = lifeMs(record.expiresAt);
    await state.hashSet(recordsKey(record.account), record.id, serializeRecord(record), { extendTtlMs });
    if (record.sid !== undefined) await state.hashSet(sidKey(record.issuer, record.sid), record.id, record.account, { extendTtlMs });
  }

  async function records(account: string): Promise<SessionRecord[]> {
    const all = await state.hashGetAll(recordsKey(account));
    const live: SessionRecord[] = [];
    const gone: string[] = [];
    const t = now();
    for (const [id, text] of Object.entries(all)) {
      const record = parseRecord(text);
      if (record === undefined || record.id !== id || record.expiresAt * 1000 <= t || deps.revocation.revokedNow(id) === true) gone.push(id);
      else live.push(record);
    }
    if (gone.length > 0) await forget(account, gone);
    return live.sort((a, b) => b.createdAt - a.createdAt);
  }

  async function forget(account: string, ids: readonly string[]): Promise<void> {
    await state.hashDelete(recordsKey(account), ...ids);
    await state.hashDelete(usedKey(account), ...ids);
  }

  async function endRecord(record: SessionRecord, context: EndContext): Promise<void> {
    // Revoked first: when that cannot be shared (Unavailable), the record stays and the caller hears why.
    for (const token of tokensOf(record)) await deps.revocation.revoke(token.id, token.exp);
    await forget(record.account, [record.id]);
    if (record.sid !== undefined) await state.hashDelete(sidKey(record.issuer, record.sid), record.id);
    deps.audit.record(endedEvent(record, context));
    deps.log.info({ account: record.account, sessionId: record.id, via: context.via }, 'session ended');
    for (const listener of listeners) {
      try {
        await listener(record, context);
      } catch (err: unknown) {
        deps.log.warn({ err, sessionId: record.id }, 'session ended; a follow-up step failed');
      }
    }
  }

  async function bound(account: string): Promise<void> {
    const live = await records(account);
    for (const oldest of live.slice(max)) await endRecord(oldest, { via: 'bound' });
  }

  async function record(session: NewSession): Promise<void> {
    await write({ ...session, createdAt: now() });
    await bound(session.account);
  }

  return {
    record,
    async recordIfAbsent(session) {
      if ((await state.hashGet(recordsKey(session.account), session.id)) !== null) return;
      await record(session);
    },
    async list(account) {
      const live = await records(account);
      const used = await state.hashGetAll(usedKey(account));
      return live.map((r) => {
        const ms = Number(used[r.id]);
        return { record: r, lastUsedMs: Number.isFinite(ms) && ms > 0 ? ms : undefined };
      });
    },
    async end(account, id, context) {
      const text = await state.hashGet(recordsKey(account), id);
      const found = text === null ? undefined : parseRecord(text);
      if (found === undefined) throw new NotFound(`no session '${id.slice(0, 80)}' of '${account.slice(0, 80)}'`);
      await endRecord(found, context);
      return found;
    },
    async logout(account, id, exp, context) {
      const text = await state.hashGet(recordsKey(account), id).catch(() => null);
      const found = text === null ? undefined : parseRecord(text);
      if (found !== undefined && found.id === id) return endRecord(found, context);
      await deps.revocation.revoke(id, exp);
      deps.audit.record(endedEvent({ account, id }, context));
    },
    async endOthers(account, keepId, context) {
      const others = (await records(account)).filter((r) => keepId === undefined || !tokensOf(r).some((t) => t.id === keepId));
      for (const other of others) await endRecord(other, context);
      return others.length;
    },
    async endFromIssuer(account, issuer, context) {
      const matching = (await records(account)).filter((r) => r.issuer === issuer);
      for (const r of matching) await endRecord(r, context);
      return matching.length;
    },
    async endBySid(issuer, sid, context) {
      const members = await state.hashGetAll(sidKey(issuer, sid));
      let ended = 0;
      for (const [id, account] of Object.entries(members)) {
        const text = await state.hashGet(recordsKey(account), id);
        const found = text === null ? undefined : parseRecord(text);
        if (found === undefined || found.issuer !== issuer || found.sid !== sid) {
          await state.hashDelete(sidKey(issuer, sid), id);
          continue;
        }
        await endRecord(found, context);
        ended++;
      }
      return ended;
    },
    async renewed(account, oldId, next) {
      const text = await state.hashGet(recordsKey(account), oldId);
      const old = text === null ? undefined : parseRecord(text);
      if (old === undefined || old.id === next.id) return;
      const t = now();
      const earlier = tokensOf(old).filter((e) => e.exp * 1000 > t).slice(0, EARLIER_KEPT);
      await write({ ...old, id: next.id, expiresAt: next.exp, earlier });
      await forget(account, [oldId]);
      if (old.sid !== undefined) await state.hashDelete(sidKey(old.issuer, old.sid), oldId);
    },
    async touch(account, id, minuteMs, expiresAt) {
      await state.hashSet(usedKey(account), id, String(minuteMs), { extendTtlMs: lifeMs(expiresAt), maxFields: 2 * max });
    },
    onEnded(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** The audit event of a session's end; the session is named by its token's id, never by the token. */
function endedEvent(record: Pick<SessionRecord, 'account' | 'id'> & Partial<SessionRecord>, context: EndContext): AuditEvent {
  return {
    category: 'session',
    type: 'end',
    action: 'session-ended',
    outcome: 'success',
    user: { id: record.account },
    ...(context.source !== undefined ? { source: context.source } : {}),
    svc: {
      via: context.via,
      sessionId: record.id,
      ...(record.kind !== undefined ? { kind: record.kind, client: record.client } : {}),
      ...(context.by?.id !== undefined ? { endedBy: context.by.id } : {}),
    },
  };
}
