/**
 * The identity provider's password-form limits (src/idp/login/password-guard.ts) with the default
 * limits over `state`, a registry of their own and no wait after a failure: for tests that
 * build the provider's app themselves.
 */
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { createPasswordGuard, type PasswordGuard } from '../../src/idp/login/password-guard.js';
import { createLoginConcurrency } from '../../src/session/concurrency.js';
import { readLoginLimits } from '../../src/session/limits.js';
import { createLoginThrottle } from '../../src/session/throttle.js';
import type { StateBackend } from '../../src/state/state.js';

export function testPasswordGuard(state: StateBackend, env: Readonly<Record<string, string>> = {}): PasswordGuard {
  const log = pino({ level: 'silent' });
  const limits = readLoginLimits(env, log);
  const throttle = createLoginThrottle({ state, limits, log, registry: new Registry(), now: Date.now });
  return createPasswordGuard({ state, throttle, concurrency: createLoginConcurrency(limits.maxConcurrentLogins), log, failureDelay: async () => {} });
}
