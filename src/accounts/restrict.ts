/**
 * What a bad change to an account may still do: take access away, never give it. When an
 * account's new settings do not parse, svc keeps its last good version (DESIGN §2), but "keep"
 * must not mean keeping access the operator has just removed: `enabled: "false"` written beside
 * a typo in the capabilities, or a leaked token deleted by hand from a list left with a trailing
 * comma. So the version kept is the last good one narrowed by every part of the new text that
 * can be read: the result grants no more than the old text, nor more than the readable new one.
 *
 *   enabled       false if either says false (an unreadable value: the old one)
 *   capabilities  the old ones that the new list still names (a list with an unknown name: the
 *                 known names in it)
 *   password      the old hash only if the new text holds the same hash; a changed hash beside
 *                 a problem leaves the account without a password (neither password logs in)
 *   passwordMtime the later of the two (an unreadable one: the old one)
 *   sessionsNotBefore  the later of the two (an unreadable one: the old one)
 *   second factor the old one (a factor removed beside a problem is still asked for: the
 *                 account may lose its login, never its second step)
 *   tokens        the old records the new list still holds; a list that does not parse keeps
 *                 the old records whose jti (id, for records without one) still appears in its
 *                 text as a JSON string, so a token removed by hand stops at once
 */
import type { AccountSettings, ApiTokenRecord, Capability, SecondFactorSettings } from './account.js';

/** The account's new settings field by field; undefined where a value cannot be read. */
export interface AccountReading {
  readonly enabled: boolean | undefined;
  /** The capabilities the new text names that are known, even when it names unknown ones too. */
  readonly capabilities: readonly Capability[] | undefined;
  readonly passwordHash: string | undefined;
  /** null: present but unreadable. */
  readonly passwordMtime: Date | undefined | null;
  /** undefined: the list does not parse; then `tokensText` is what it says. */
  readonly tokens: readonly ApiTokenRecord[] | undefined;
  readonly tokensText: string | undefined;
  /** null: present but unreadable. */
  readonly sessionsNotBefore?: Date | undefined | null;
  /** undefined: a second-factor key does not parse. */
  readonly secondFactor?: SecondFactorSettings | undefined;
}

export function restrictAccount(previous: AccountSettings, reading: AccountReading): AccountSettings {
  const capabilities = reading.capabilities === undefined ? previous.capabilities : previous.capabilities.filter((c) => reading.capabilities?.includes(c));
  const passwordHash = previous.passwordHash !== undefined && previous.passwordHash === reading.passwordHash ? previous.passwordHash : undefined;
  const passwordMtime = laterMtime(previous.passwordMtime, reading.passwordMtime);
  const sessionsNotBefore = laterMtime(previous.sessionsNotBefore, reading.sessionsNotBefore);
  return {
    name: previous.name,
    enabled: previous.enabled && reading.enabled !== false,
    capabilities,
    tokens: previous.tokens.filter((record) => stillListed(record, reading)),
    // Kept as it was: a second step is never dropped because the text around it is broken.
    ...(previous.secondFactor !== undefined ? { secondFactor: previous.secondFactor } : {}),
    ...(passwordHash !== undefined ? { passwordHash } : {}),
    ...(passwordMtime !== undefined ? { passwordMtime } : {}),
    ...(sessionsNotBefore !== undefined ? { sessionsNotBefore } : {}),
  };
}

function laterMtime(old: Date | undefined, next: Date | undefined | null): Date | undefined {
  if (next === null || next === undefined) return old;
  if (old === undefined) return next;
  return next.getTime() > old.getTime() ? next : old;
}

function stillListed(record: ApiTokenRecord, reading: AccountReading): boolean {
  if (reading.tokens !== undefined) return reading.tokens.some((t) => sameRecord(t, record));
  const text = reading.tokensText ?? '';
  return text.includes(JSON.stringify(record.jti ?? record.id));
}

function sameRecord(a: ApiTokenRecord, b: ApiTokenRecord): boolean {
  return a.id === b.id && a.jti === b.jti && a.iat === b.iat && a.exp === b.exp;
}
