/**
 * The svc-cm keys of personal API tokens for SSO users and of group rechecks:
 * `users.ssoTokens.maxLifetime` (the longest `expiresIn` a token may ask, default 2160h) and
 * `users.sso.groupsRecheck` (how often an SSO user's groups are read again from their source
 * while they are in use, default 5m). Parsed once per settings change; a bad value is named by
 * key and the value in force stays.
 */
import { keptOrAtStart, type SettingsSection } from '../config/settings.js';
import { formatDuration, parseDuration } from '../lib/duration.js';

export const MAX_LIFETIME_KEY = 'users.ssoTokens.maxLifetime';
export const GROUPS_RECHECK_KEY = 'users.sso.groupsRecheck';
/** 90 days, as the issue asks: long enough for a CI job's token, short enough to be rotated. */
export const DEFAULT_MAX_LIFETIME_MS = 2160 * 3_600_000;
export const DEFAULT_GROUPS_RECHECK_MS = 5 * 60_000;
/** Below a second a recheck would run on nearly every request of a busy user. */
export const MIN_GROUPS_RECHECK_MS = 1000;

export interface SsoTokenLimits {
  readonly maxLifetimeMs: number;
  readonly groupsRecheckMs: number;
}

function duration(cm: Readonly<Record<string, string>>, key: string, fallback: number, min: number, problem: (message: string) => void, previous: number | undefined): number {
  const value = cm[key];
  if (value === undefined || value === '') return fallback;
  const ms = parseDuration(value);
  const why = ms === undefined ? 'is not a duration (for example 2160h, 5m)' : ms < min ? `is shorter than ${formatDuration(min)}` : undefined;
  if (why === undefined && ms !== undefined) return ms;
  problem(`'${value}' ${why ?? ''}; ${keptOrAtStart(`'${formatDuration(fallback)}'`)}`);
  return previous ?? fallback;
}

// A bad value keeps the one in force: a typo must not stretch tokens' lives or stop rechecks.
export const ssoTokenLimitsSection: SettingsSection<SsoTokenLimits> = {
  ownsCmKey: (key) => key === MAX_LIFETIME_KEY || key === GROUPS_RECHECK_KEY,
  parse({ cm, cmSink }, previous) {
    return {
      maxLifetimeMs: duration(cm, MAX_LIFETIME_KEY, DEFAULT_MAX_LIFETIME_MS, 1000, (m) => cmSink.add([MAX_LIFETIME_KEY], m), previous?.maxLifetimeMs),
      groupsRecheckMs: duration(cm, GROUPS_RECHECK_KEY, DEFAULT_GROUPS_RECHECK_MS, MIN_GROUPS_RECHECK_MS, (m) => cmSink.add([GROUPS_RECHECK_KEY], m), previous?.groupsRecheckMs),
    };
  },
};
