/**
 * The session registry: every login's session (session-record.ts), kept in the state backend so
 * that every replica lists and ends the same ones. A session ends by revoking every token id it
 * holds (revocation.ts: refused at once on every replica), then its record goes; listeners
 * (the SSO refresh token, the bundled provider's own session) are told after.
 *
 * Sessions belong to a person (person.ts: the type, the issuer that vouches, the subject there),
 * never to a name alone: an SSO user with `sub: alice` and the local account `alice` have
 * separate records, lists and bounds (issue 51, finding 4). Layout, per person: hash
 * `sessions:<person key>` (token id -> record), hash `sessions-used:<person key>` (token id ->
 * the minute it was last used, written at most once a minute by usage.ts), and per upstream
 * session hash `sessions-sid:<digest>` (token id -> person key) for back-channel logout. Each
 * hash lives as long as its longest-lived member (hashSet's extendTtlMs); an expired or revoked
 * member is dropped when the person is listed. Bounded per person: past `maxPerAccount`
 * (default 50) the oldest sessions are ended, so a script that logs in in a loop cannot grow the
 * store, and its older tokens stop working.
 *
 * Every record read is checked against the person asked about (its kind, issuer and account):
 * one that belongs to someone else is never listed, ended or counted, wherever it was found.
 * Records of older replicas (`sessions:<name>`, `sessions-used:<name>`, a sid member holding a
 * name) are still read, under that rule, until they expire: written before the person key, they
 * are found for their own person and for no one else. New records are only written under the
 * person key.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { AuditEvent, AuditSource, AuditTrail, AuditUser } from '../audit/trail.js';
import { NotFound } from '../errors.js';
import { parsePersonKey, personKey, samePerson, ssoPerson, type Person } from '../person.js';
import type { StateBackend } from '../state/state.js';
import { LogoutNotShared, logLogoutRefused } from './logout-refusal.js';
import type { Revocation } from './revocation.js';
import { parseRecord, personOfRecord, serializeRecord, tokensOf, type SessionRecord } from './session-record.js';

export const DEFAULT_SESSIONS_PER_ACCOUNT = 50;
export const SESSIONS_PER_ACCOUNT_ENV = 'SVC_SESSIONS_PER_ACCOUNT';
/** Earlier token ids a renewed session keeps, to revoke with it (each lives minutes at most). */
const EARLIER_KEPT = 3;

/** Where a person's records are: under the person key, or (`legacy`) under the bare name older replicas wrote. */
interface Place {
  readonly person: Person;
  readonly legacy: boolean;
}

const recordsKey = ({ person, legacy }: Place): string => `sessions:${legacy ? person.subject : personKey(person)}`;
const usedKey = ({ person, legacy }: Place): string => `sessions-used:${legacy ? person.subject : personKey(person)}`;
const placesOf = (person: Person): readonly Place[] => [{ person, legacy: false }, { person, legacy: true }];
/** The upstream sid is the provider's text: digested, with its issuer, so it cannot shape the key. */
export const sidKey = (issuer: string, sid: string): string => `sessions-sid:${createHash('sha256').update(`${issuer}\n${sid}`).digest('base64url')}`;

/** Why a session ended, for the audit trail's `svc.via`. */
export type EndVia = 'logout' | 'list' | 'backchannel' | 'bound' | 'provider' | 'second-factor';

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
  /** Records a login's session; ends the person's oldest past the bound. */
  record(session: NewSession): Promise<void>;
  /** Records a session first seen in use (a token from before the registry, the CLI's SSO token), unless known. */
  recordIfAbsent(session: NewSession): Promise<void>;
  /** The person's live sessions, newest first. */
  list(person: Person): Promise<readonly ListedSession[]>;
  /** Ends one of the person's sessions by its token id (NotFound when they have none of that id). */
  end(person: Person, id: string, context: EndContext): Promise<SessionRecord>;
  /**
   * Logout: ends the session of this token; a token the registry does not hold (from before it,
   * or not recorded while the backend was down) is revoked all the same.
   */
  logout(person: Person, id: string, exp: number | undefined, context: EndContext): Promise<void>;
  /** Ends every session of the person but `keepId`; how many ended. */
  endOthers(person: Person, keepId: string | undefined, context: EndContext): Promise<number>;
  /** Ends every session of the SSO user `sub` at `issuer` (back-channel logout by `sub`); how many ended. */
  endFromIssuer(sub: string, issuer: string, context: EndContext): Promise<number>;
  /** Ends every session of the upstream session `sid` at `issuer`; how many ended. */
  endBySid(issuer: string, sid: string, context: EndContext): Promise<number>;
  /** An SSO session renewed: the record follows the new token, the old id is kept to revoke with it. */
  renewed(person: Person, oldId: string, next: { readonly id: string; readonly exp: number }): Promise<void>;
  /** Writes the minute a session was last used (usage.ts calls it at most once a minute per session). */
  touch(person: Person, id: string, minuteMs: number, expiresAt: number): Promise<void>;
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

/** A record with the place it was read from, so that it is forgotten there. */
interface Held {
  readonly record: SessionRecord;
  readonly place: Place;
}

const belongs = (record: SessionRecord, person: Person): boolean => samePerson(personOfRecord(record), person);

export function createSessionRegistry(deps: SessionRegistryDeps): SessionRegistry {
  const { state, now } = deps;
  const max = deps.maxPerAccount ?? DEFAULT_SESSIONS_PER_ACCOUNT;
  const listeners = new Set<(record: SessionRecord, context: EndContext) => Promise<void> | void>();

  const lifeMs = (expiresAt: number): number => Math.max(1, Math.ceil(expiresAt * 1000 - now()));

  async function write(record: SessionRecord): Promise<void> {
    const extendTtlMs = lifeMs(record.expiresAt);
    const person = personOfRecord(record);
    await state.hashSet(recordsKey({ person, legacy: false }), record.id, serializeRecord(record), { extendTtlMs });
    if (record.sid !== undefined) await state.hashSet(sidKey(record.issuer, record.sid), record.id, personKey(person), { extendTtlMs });
  }

  /** The record of `id` at `place`, when it is there and belongs to the place's person. */
  async function at(place: Place, id: string): Promise<Held | undefined> {
    const text = await state.hashGet(recordsKey(place), id);
    const record = text === null ? undefined : parseRecord(text);
    return record !== undefined && record.id === id && belongs(record, place.person) ? { record, place } : undefined;
  }

  async function stored(person: Person, id: string): Promise<Held | undefined> {
    for (const place of placesOf(person)) {
      const found = await at(place, id);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  async function records(person: Person): Promise<Held[]> {
    const live: Held[] = [];
    const t = now();
    for (const place of placesOf(person)) {
      const all = await state.hashGetAll(recordsKey(place));
      const gone: string[] = [];
      for (const [id, text] of Object.entries(all)) {
        const record = parseRecord(text);
        if (record === undefined || record.id !== id || record.expiresAt * 1000 <= t || deps.revocation.revokedNow(id) === true) gone.push(id);
        else if (belongs(record, person)) live.push({ record, place });
        // Someone else's (an older replica's record under a shared name): left alone, never shown.
      }
      if (gone.length > 0) await forget(place, gone);
    }
    return live.sort((a, b) => b.record.createdAt - a.record.createdAt);
  }

  async function forget(place: Place, ids: readonly string[]): Promise<void> {
    await state.hashDelete(recordsKey(place), ...ids);
    await state.hashDelete(usedKey(place), ...ids);
  }

  async function endRecord({ record, place }: Held, context: EndContext): Promise<void> {
    // Revoked first: when that cannot be shared (Unavailable), the record stays and the caller hears why.
    for (const token of tokensOf(record)) await deps.revocation.revoke(token.id, token.exp);
    await forget(place, [record.id]);
    if (record.sid !== undefined) await state.hashDelete(sidKey(record.issuer, record.sid), record.id);
    deps.audit.record(endedEvent(place.person, record, context));
    deps.log.info({ account: record.account, sessionId: record.id, via: context.via }, 'session ended');
    for (const listener of listeners) {
      try {
        await listener(record, context);
      } catch (err: unknown) {
        deps.log.warn({ err, sessionId: record.id }, 'session ended; a follow-up step failed');
      }
    }
  }

  /** A logout someone asked for: its refusal is logged (logout-refusal.ts), then rethrown. */
  function refusedLogout(err: unknown, person: Person, sessionId: string, context: EndContext): never {
    logLogoutRefused(deps.log, err, { account: person.subject, sessionId, via: context.via });
    throw err;
  }

  /**
   * Past the bound the oldest sessions end. When a revocation cannot be shared (a Redis replica
   * resyncing), the login stands (it is recorded already), the oldest stays until the next login
   * of the person, and one line says so: nobody logged out, so no "logout refused" (issue 52).
   */
  async function bound(person: Person): Promise<void> {
    const live = await records(person);
    for (const oldest of live.slice(max)) {
      try {
        await endRecord(oldest, { via: 'bound' });
      } catch (err: unknown) {
        if (!(err instanceof LogoutNotShared)) throw err;
        const cause = err.cause instanceof Error ? err.cause.message : err.reason;
        deps.log.warn({ account: person.subject, sessionId: oldest.record.id, reason: err.reason }, `sessions: '${person.subject}' has more than ${max} sessions and the oldest could not be ended now (${cause}); the next login ends it`);
        return;
      }
    }
  }

  async function record(session: NewSession): Promise<void> {
    await write({ ...session, createdAt: now() });
    await bound(personOfRecord(session));
  }

  /** A sid member: the person key, or (an older replica's) the bare name; the record must carry this issuer and sid. */
  async function ofSid(issuer: string, sid: string, id: string, holder: string): Promise<Held | undefined> {
    const person = parsePersonKey(holder);
    let found = person === undefined ? undefined : await stored(person, id);
    if (found === undefined) {
      const text = await state.hashGet(`sessions:${holder}`, id);
      const old = text === null ? undefined : parseRecord(text);
      if (old !== undefined && old.id === id && old.account === holder) found = { record: old, place: { person: personOfRecord(old), legacy: true } };
    }
    return found !== undefined && found.record.issuer === issuer && found.record.sid === sid ? found : undefined;
  }

  return {
    record,
    async recordIfAbsent(session) {
      if ((await stored(personOfRecord(session), session.id)) !== undefined) return;
      await record(session);
    },
    async list(person) {
      const live = await records(person);
      const used = await state.hashGetAll(usedKey({ person, legacy: false }));
      const usedBefore = live.some((h) => h.place.legacy) ? await state.hashGetAll(usedKey({ person, legacy: true })) : {};
      return live.map(({ record: r }) => {
        const ms = Math.max(Number(used[r.id] ?? 0), Number(usedBefore[r.id] ?? 0));
        return { record: r, lastUsedMs: Number.isFinite(ms) && ms > 0 ? ms : undefined };
      });
    },
    async end(person, id, context) {
      const found = await stored(person, id);
      if (found === undefined) throw new NotFound(`no session '${id.slice(0, 80)}' of '${person.subject.slice(0, 80)}'`);
      await endRecord(found, context).catch((err: unknown) => refusedLogout(err, person, id, context));
      return found.record;
    },
    async logout(person, id, exp, context) {
      try {
        const found = await stored(person, id).catch(() => undefined);
        if (found !== undefined) return await endRecord(found, context);
        await deps.revocation.revoke(id, exp);
      } catch (err: unknown) {
        refusedLogout(err, person, id, context);
      }
      deps.audit.record(endedEvent(person, { id }, context));
    },
    async endOthers(person, keepId, context) {
      const others = (await records(person)).filter((h) => keepId === undefined || !tokensOf(h.record).some((t) => t.id === keepId));
      for (const other of others) await endRecord(other, context);
      return others.length;
    },
    async endFromIssuer(sub, issuer, context) {
      const matching = await records(ssoPerson(issuer, sub));
      for (const h of matching) await endRecord(h, context);
      return matching.length;
    },
    async endBySid(issuer, sid, context) {
      const members = await state.hashGetAll(sidKey(issuer, sid));
      let ended = 0;
      for (const [id, holder] of Object.entries(members)) {
        const found = await ofSid(issuer, sid, id, holder);
        if (found === undefined) {
          await state.hashDelete(sidKey(issuer, sid), id);
          continue;
        }
        await endRecord(found, context);
        ended++;
      }
      return ended;
    },
    async renewed(person, oldId, next) {
      const held = await stored(person, oldId);
      if (held === undefined || held.record.id === next.id) return;
      const old = held.record;
      const t = now();
      const earlier = tokensOf(old).filter((e) => e.exp * 1000 > t).slice(0, EARLIER_KEPT);
      await write({ ...old, id: next.id, expiresAt: next.exp, earlier });
      await forget(held.place, [oldId]);
      if (old.sid !== undefined) await state.hashDelete(sidKey(old.issuer, old.sid), oldId);
    },
    async touch(person, id, minuteMs, expiresAt) {
      await state.hashSet(usedKey({ person, legacy: false }), id, String(minuteMs), { extendTtlMs: lifeMs(expiresAt), maxFields: 2 * max });
    },
    onEnded(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** The audit event of a session's end; the session is named by its token's id, never by the token. */
function endedEvent(person: Person, record: Pick<SessionRecord, 'id'> & Partial<SessionRecord>, context: EndContext): AuditEvent {
  return {
    category: 'session',
    type: 'end',
    action: 'session-ended',
    outcome: 'success',
    user: { id: person.subject, domain: person.issuer },
    ...(context.source !== undefined ? { source: context.source } : {}),
    svc: {
      via: context.via,
      sessionId: record.id,
      ...(record.kind !== undefined ? { kind: record.kind, client: record.client } : {}),
      ...(context.by?.id !== undefined ? { endedBy: context.by.id } : {}),
      ...(context.by?.domain !== undefined ? { endedByDomain: context.by.domain } : {}),
    },
  };
}
