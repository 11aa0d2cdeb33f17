/** The login throttle's state-backend keys (the backend adds `svc:`); see throttle.ts. */
export const COUNT_PREFIX = 'login-failures:';
export const LOCK_PREFIX = 'login-locked:';
export const INDEX_KEY = 'login-failures-index';
