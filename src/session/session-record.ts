/**
 * One login as the session registry keeps it (registry.ts), and the view a person reads. A
 * session is named by the id of the token it gave (svc's jti, or an SSO ID token's id): ending it
 * revokes that id. Knows nothing of HTTP or of the state backend.
 */
import { localPerson, ssoPerson, workloadPerson, type Person } from '../person.js';

export type SessionKind = 'local' | 'sso' | 'workload';
export type SessionClient = 'cli' | 'browser' | 'api';

/** A token id this session held before a renewal (SSO), still valid until `exp`. */
export interface EarlierToken {
  readonly id: string;
  /** Seconds since the epoch. */
  readonly exp: number;
}

export interface SessionRecord {
  /** The id of the token the session holds now. */
  readonly id: string;
  /** The rights subject: a local account's name, an SSO `sub`, a workload's name; with `kind` and `issuer`, the person (personOfRecord). */
  readonly account: string;
  readonly kind: SessionKind;
  readonly client: SessionClient;
  /** Where the login came from (client-address.ts); '' when unknown. */
  readonly address: string;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  /** When the token ends, in seconds since the epoch. */
  readonly expiresAt: number;
  /** The token's issuer: `svc`, an SSO provider's URL, a workload issuer's. */
  readonly issuer: string;
  /** The upstream provider's session id (`sid` of its ID token), for back-channel logout. */
  readonly sid?: string;
  /** Earlier token ids of a renewed SSO session: ending the session revokes them too. */
  readonly earlier?: readonly EarlierToken[];
}

/** What GET /api/v1/session/list shows of a session: RFC 3339 times, `lastUsedAt` to the minute. */
export interface SessionView {
  readonly id: string;
  readonly kind: SessionKind;
  readonly client: SessionClient;
  readonly address: string;
  readonly createdAt: string;
  readonly lastUsedAt: string;
  readonly expiresAt: string;
  readonly current: boolean;
}

const KINDS: readonly string[] = ['local', 'sso', 'workload'] satisfies SessionKind[];
const CLIENTS: readonly string[] = ['cli', 'browser', 'api'] satisfies SessionClient[];

/** The CLI says who it is (`svc/<version>`); anything a browser sends starts with `Mozilla/`. */
const CLI_AGENT = /^svc\/\S+/;
const BROWSER_AGENT = /^Mozilla\//;

/**
 * How a session logged in. `viaBrowser`: through a page (the login form, an SSO redirect, the
 * cookie); otherwise by the user agent: the CLI's, a browser's, else an API client.
 */
export function clientOf(userAgent: string | undefined, viaBrowser: boolean): SessionClient {
  if (userAgent !== undefined && CLI_AGENT.test(userAgent)) return 'cli';
  if (viaBrowser || (userAgent !== undefined && BROWSER_AGENT.test(userAgent))) return 'browser';
  return 'api';
}

/** The stored text of a record; parseRecord reads it back. */
export function serializeRecord(record: SessionRecord): string {
  return JSON.stringify(record);
}

/** A stored record, or undefined when the text is not one (written by a later release, or damaged). */
export function parseRecord(text: string): SessionRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  const strings = ['id', 'account', 'address', 'issuer'].every((k) => typeof r[k] === 'string');
  const numbers = ['createdAt', 'expiresAt'].every((k) => typeof r[k] === 'number');
  if (!strings || !numbers || !KINDS.includes(String(r['kind'])) || !CLIENTS.includes(String(r['client']))) return undefined;
  if (r['sid'] !== undefined && typeof r['sid'] !== 'string') return undefined;
  return r as unknown as SessionRecord;
}

/** The person a session belongs to, by its kind: a local account, the SSO user `account` at `issuer`, a workload. */
export function personOfRecord(record: Pick<SessionRecord, 'kind' | 'issuer' | 'account'>): Person {
  switch (record.kind) {
    case 'local':
      return localPerson(record.account);
    case 'sso':
      return ssoPerson(record.issuer, record.account);
    case 'workload':
      return workloadPerson(record.account);
  }
}

/** Every token id the session holds or held, with its expiry: what ending it revokes. */
export function tokensOf(record: SessionRecord): readonly EarlierToken[] {
  return [{ id: record.id, exp: record.expiresAt }, ...(record.earlier ?? [])];
}

/** Minutes, as lastUsedAt is kept: the start of the minute `ms` falls in. */
export function minuteOf(ms: number): number {
  return ms - (ms % 60_000);
}

export function viewOf(record: SessionRecord, lastUsedMs: number | undefined, currentId: string | undefined): SessionView {
  return {
    id: record.id,
    kind: record.kind,
    client: record.client,
    address: record.address,
    createdAt: new Date(record.createdAt).toISOString(),
    lastUsedAt: new Date(Math.max(lastUsedMs ?? 0, minuteOf(record.createdAt))).toISOString(),
    expiresAt: new Date(record.expiresAt * 1000).toISOString(),
    current: currentId !== undefined && tokensOf(record).some((t) => t.id === currentId),
  };
}
