/**
 * Local accounts from svc-cm (`accounts.<name>`, `accounts.<name>.enabled`, `admin.enabled`;
 * admin is left out when `admin.enabled` is "false" and disabled when `accounts.admin.enabled` is)
 * joined with their secrets in svc-secret (`accounts.<name>.password`, `.passwordMtime`,
 * `.sessionsNotBefore`, `.tokens`; `admin.password`, `admin.passwordMtime`, `admin.sessionsNotBefore`;
 * the second factor under `mfa.<name>.`, second-factor-config.ts). Each account stands alone: a bad one is
 * reported and left out (or keeps its last good version, narrowed by whatever of the new text
 * takes access away: restrict.ts), the others apply.
 */
import { SETTINGS_CM, SETTINGS_SECRET } from '../config/manifests.js';
import { ProblemSink, type ConfigProblem, type ScopedSink } from '../config/problems.js';
import { isEmptyFactor, type AccountSettings, type ApiTokenRecord, type Capability } from './account.js';
import { parseSecondFactor } from './second-factor-config.js';
import { restrictAccount, type AccountReading } from './restrict.js';

export const ADMIN = 'admin';

/**
 * Why a name has no account in force. admin is built in: it is missing only when switched off
 * (`admin.enabled: "false"`, or a switch that stays off), and says so as any disabled account
 * does. The name is no secret (every svc has it), so this tells an outsider nothing (issue 52).
 */
export function missingAccountReason(name: string): string {
  return name === ADMIN ? `account '${ADMIN}' is disabled` : `account '${name}' does not exist`;
}
export const MAX_USERNAME_LENGTH = 32;
const USERNAME = /^[a-z0-9]([-a-z0-9._]*[a-z0-9])?$/;

export type { AccountSettings, ApiTokenRecord, Capability };

const CAPABILITIES: readonly Capability[] = ['apiKey', 'login'];

export function usernameProblem(name: string): string | undefined {
  if (name.length > MAX_USERNAME_LENGTH) return `username '${name}' is longer than ${MAX_USERNAME_LENGTH} characters`;
  if (!USERNAME.test(name)) return `username '${name}' must be lower-case letters, digits, '-', '.' or '_', starting and ending with a letter or digit`;
  return undefined;
}

function parseBoolean(value: string, sink: ScopedSink, key: string, inForce?: string): boolean | undefined {
  if (value === 'true') return true;
  if (value === 'false') return false;
  sink.add([key], `must be "true" or "false", not '${value}'${inForce === undefined ? '' : `; ${inForce}`}`);
  return undefined;
}

/**
 * What stays in force while an account's enabled switch is refused, for the log line: the last
 * good state, never the more open one the typo might have meant. /readyz reports the switch
 * (config/disabling-switches.ts) until it is fixed.
 */
function switchInForce(who: string, kept: AccountSettings | undefined): string {
  if (kept === undefined) return `${who} stays off (no last good value) until this is fixed`;
  return `${who} stays ${kept.enabled ? 'enabled' : 'disabled'} (its last good value) until this is fixed`;
}

/** The known capabilities named; `ok` is false (and a problem reported) when others are named too. */
function parseCapabilities(value: string, sink: ScopedSink, key: string): { known: Capability[]; ok: boolean } {
  const parts = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const bad = parts.filter((p) => !CAPABILITIES.includes(p as Capability));
  if (bad.length > 0) sink.add([key], `unknown capability ${bad.map((b) => `'${b}'`).join(', ')} (want apiKey, login)`);
  const known = parts.filter((p): p is Capability => CAPABILITIES.includes(p as Capability));
  return { known: [...new Set(known)], ok: bad.length === 0 };
}

/** svc-secret's cut-off for an account's sessions (RFC 3339): `admin.` for admin, `accounts.<name>.` otherwise, as passwordMtime. */
export function sessionsNotBeforeKey(name: string): string {
  return `${name === ADMIN ? ADMIN : `accounts.${name}`}.sessionsNotBefore`;
}

export function parseTokens(text: string | undefined, sink: ScopedSink, key: string): ApiTokenRecord[] | undefined {
  if (text === undefined || text.trim() === '') return [];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    sink.add([key], 'is not JSON');
    return undefined;
  }
  if (!Array.isArray(raw)) {
    sink.add([key], 'must be a JSON list of {id, jti?, iat, exp?}');
    return undefined;
  }
  const out: ApiTokenRecord[] = [];
  for (const [i, item] of raw.entries()) {
    const record = tokenRecord(item);
    if (record === undefined) {
      sink.add([key, i], 'must be {id: string, jti?: string, iat: number, exp?: number}');
      return undefined;
    }
    out.push(record);
  }
  return out;
}

function tokenRecord(item: unknown): ApiTokenRecord | undefined {
  if (item === null || typeof item !== 'object') return undefined;
  const t = item as { id?: unknown; jti?: unknown; iat?: unknown; exp?: unknown };
  if (typeof t.id !== 'string' || typeof t.iat !== 'number') return undefined;
  if ((t.jti !== undefined && typeof t.jti !== 'string') || (t.exp !== undefined && typeof t.exp !== 'number')) return undefined;
  return {
    id: t.id,
    ...(typeof t.jti === 'string' ? { jti: t.jti } : {}),
    iat: t.iat,
    ...(typeof t.exp === 'number' ? { exp: t.exp } : {}),
  };
}

function parseMtime(text: string | undefined, sink: ScopedSink, key: string): Date | undefined | null {
  if (text === undefined || text === '') return undefined;
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) {
    sink.add([key], `'${text}' is not a timestamp`);
    return null;
  }
  return date;
}

interface AccountsInput {
  readonly cm: Readonly<Record<string, string>>;
  readonly secret: Readonly<Record<string, string>>;
  /** Scoped at svc-cm and svc-secret respectively. */
  readonly cmSink: ScopedSink;
  readonly secretSink: ScopedSink;
  readonly previous?: ReadonlyMap<string, AccountSettings>;
}

/** The svc-cm keys this module owns; settings.ts uses it to report the unknown ones. */
export function isAccountKey(key: string): boolean {
  return key === 'admin.enabled' || key.startsWith('accounts.');
}

export function parseAccounts(input: AccountsInput): ReadonlyMap<string, AccountSettings> {
  const { cm, cmSink, secretSink, previous } = input;
  const names = new Set<string>();
  for (const key of Object.keys(cm)) {
    if (!key.startsWith('accounts.')) continue;
    const rest = key.slice('accounts.'.length);
    const name = rest.endsWith('.enabled') ? rest.slice(0, -'.enabled'.length) : rest;
    // admin is built in: it may have an enabled flag without a capabilities key.
    if (rest.endsWith('.enabled') && cm[`accounts.${name}`] === undefined && name !== ADMIN) {
      cmSink.add([key], `account '${name}' has no capabilities key accounts.${name}`);
      continue;
    }
    names.add(name);
  }
  const accounts = new Map<string, AccountSettings>();
  const adminEnabled = cm['admin.enabled'] === undefined ? true : parseBoolean(cm['admin.enabled'], cmSink, 'admin.enabled', switchInForce('admin', previous?.get(ADMIN)));
  if (adminEnabled !== false) {
    // Still parsed when admin.enabled is unreadable, so that its other problems are reported too.
    const admin = parseOne(ADMIN, input, true, true);
    // An unreadable admin.enabled ("flase") is a bad admin, like a typo in accounts.<name>.enabled:
    // admin keeps its last good version (present if it was enabled, absent if it was not),
    // narrowed by what the rest of its new settings take away (restrict.ts), and with none
    // (first load) stays out. Taking the typo for "enabled" would bring back an admin the
    // operator meant to remove.
    const kept = previous?.get(ADMIN);
    if (admin.account !== undefined && adminEnabled === true) accounts.set(ADMIN, admin.account);
    else if (kept !== undefined) accounts.set(ADMIN, restrictAccount(kept, admin.reading));
  }
  for (const name of [...names].sort()) {
    if (name === ADMIN) continue;
    const before = cmSink.count + secretSink.count;
    const problem = usernameProblem(name);
    if (problem !== undefined) {
      cmSink.add([`accounts.${name}`], problem);
      continue;
    }
    const { account, reading } = parseOne(name, input, false, true);
    const kept = previous?.get(name);
    if (account !== undefined && cmSink.count + secretSink.count === before) accounts.set(name, account);
    // A bad change keeps the last good version, but only ever takes access away (restrict.ts).
    else if (kept !== undefined) accounts.set(name, restrictAccount(kept, reading));
  }
  return accounts;
}

/**
 * What would make parseAccounts refuse account `name` (and keep its last good version) if svc-cm
 * and svc-secret held `cm` and `secret`. The writers (api-tokens.ts, password-change.ts) ask
 * before they write: a change the settings would then ignore must be refused, not reported as
 * done. The same parser as the settings, so the two cannot disagree.
 */
export function accountProblems(name: string, cm: Readonly<Record<string, string>>, secret: Readonly<Record<string, string>>): readonly ConfigProblem[] {
  const sink = new ProblemSink();
  parseOne(name, { cm, secret, cmSink: sink.scoped(SETTINGS_CM), secretSink: sink.scoped(SETTINGS_SECRET) }, name === ADMIN);
  return sink.problems;
}

/** The account as its settings now say, or undefined with any problem; and what could be read. */
/** `inSettings`: parsing the settings in force, whose problems say what stays in force (not a writer's check). */
function parseOne(name: string, input: AccountsInput, isAdmin: boolean, inSettings = false): { account: AccountSettings | undefined; reading: AccountReading } {
  const { cm, secret, cmSink, secretSink } = input;
  const before = cmSink.count + secretSink.count;
  const capsKey = `accounts.${name}`;
  const caps = cm[capsKey] !== undefined ? parseCapabilities(cm[capsKey], cmSink, capsKey) : isAdmin ? { known: ['login'] as Capability[], ok: true } : undefined;
  const enabledKey = `accounts.${name}.enabled`;
  // admin too: `accounts.admin.enabled: "false"` disables it as it would any other account.
  const inForce = inSettings ? switchInForce(isAdmin ? 'admin' : `account '${name}'`, input.previous?.get(name)) : undefined;
  const enabled = cm[enabledKey] === undefined ? true : parseBoolean(cm[enabledKey], cmSink, enabledKey, inForce);
  const prefix = isAdmin ? 'admin' : `accounts.${name}`;
  const storedHash = secret[`${prefix}.password`];
  const passwordHash = storedHash !== undefined && storedHash !== '' ? storedHash : undefined;
  const mtime = parseMtime(secret[`${prefix}.passwordMtime`], secretSink, `${prefix}.passwordMtime`);
  const tokensText = secret[`accounts.${name}.tokens`];
  const tokens = parseTokens(tokensText, secretSink, `accounts.${name}.tokens`);
  const notBefore = parseMtime(secret[sessionsNotBeforeKey(name)], secretSink, sessionsNotBeforeKey(name));
  const secondFactor = parseSecondFactor(name, secret, secretSink);
  const reading: AccountReading = { enabled, capabilities: caps?.known, passwordHash, passwordMtime: mtime, tokens, tokensText, sessionsNotBefore: notBefore, secondFactor };
  if (caps === undefined || !caps.ok || enabled === undefined || tokens === undefined || mtime === null || notBefore === null || secondFactor === undefined) return { account: undefined, reading };
  if (cmSink.count + secretSink.count !== before) return { account: undefined, reading };
  const account: AccountSettings = {
    name,
    enabled,
    capabilities: caps.known,
    tokens,
    // Left out when empty: an account without one reads as before second factors existed.
    ...(secondFactor !== undefined && !isEmptyFactor(secondFactor) ? { secondFactor } : {}),
    ...(passwordHash !== undefined ? { passwordHash } : {}),
    ...(mtime !== undefined ? { passwordMtime: mtime } : {}),
    ...(notBefore !== undefined ? { sessionsNotBefore: notBefore } : {}),
  };
  return { account, reading };
}
