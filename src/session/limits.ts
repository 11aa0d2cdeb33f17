/**
 * The login limits of SPEC.md "Limits", read once from the environment at start. An unparsable
 * or out-of-range value falls back to its default with a warning naming the variable, so a typo
 * never disables protection silently (Argo CD's users could not tell which name applied, #8139).
 */
export const DEFAULT_MAX_FAIL_COUNT = 5;
export const DEFAULT_WINDOW_SECONDS = 300;
/** With a window of 0, SPEC.md fixes the threshold at 10 consecutive failures. */
export const NO_WINDOW_MAX_FAIL_COUNT = 10;
export const DEFAULT_MAX_CACHE_SIZE = 1000;
export const DEFAULT_MAX_CONCURRENT_LOGINS = 50;

export interface LoginLimits {
  readonly maxFailCount: number;
  /** 0: no window, failures never expire and a lockout lasts until cleared. */
  readonly windowSeconds: number;
  readonly maxCacheSize: number;
  /** 0: no limit. */
  readonly maxConcurrentLogins: number;
}

export type Env = Readonly<Record<string, string | undefined>>;
export type WarnLog = { warn(obj: object, msg: string): void };

/** An integer >= min from the environment; a bad value warns, naming the variable, and gives the default. */
export function readInt(env: Env, log: WarnLog, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min) {
    log.warn({ variable: name, value: raw, default: fallback }, `${name}='${raw}' is not an integer >= ${min}; using ${fallback}`);
    return fallback;
  }
  return value;
}

export function readLoginLimits(env: Env, log: WarnLog): LoginLimits {
  const windowSeconds = readInt(env, log, 'SVC_SESSION_FAILURE_WINDOW_SECONDS', DEFAULT_WINDOW_SECONDS, 0);
  const maxFailCount = readInt(env, log, 'SVC_SESSION_FAILURE_MAX_FAIL_COUNT', DEFAULT_MAX_FAIL_COUNT, 1);
  return {
    maxFailCount: windowSeconds === 0 ? NO_WINDOW_MAX_FAIL_COUNT : maxFailCount,
    windowSeconds,
    maxCacheSize: readInt(env, log, 'SVC_SESSION_MAX_CACHE_SIZE', DEFAULT_MAX_CACHE_SIZE, 1),
    maxConcurrentLogins: readInt(env, log, 'SVC_MAX_CONCURRENT_LOGIN_REQUESTS_COUNT', DEFAULT_MAX_CONCURRENT_LOGINS, 0),
  };
}
