/**
 * Password logins per second, and the login throttle's share of a login's time (it must stay
 * under 1 %). One run: N sequential successful logins through the real LoginService (bcrypt
 * cost 10, token signing), with the throttle wrapped to time its check + record calls.
 * State: memory, or a real Redis with SVC_BENCH_REDIS_URL=redis://127.0.0.1:6390.
 * Usage: npx tsx bench/login.ts [logins=100]
 */
import bcrypt from 'bcryptjs';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { AccountSettings } from '../src/accounts/config.js';
import { BCRYPT_COST } from '../src/accounts/passwords.js';
import { createLoginConcurrency } from '../src/session/concurrency.js';
import { readLoginLimits } from '../src/session/limits.js';
import { createLoginService } from '../src/session/login.js';
import { createLoginThrottle, type LoginThrottle } from '../src/session/throttle.js';
import { createTokenSigner } from '../src/session/tokens.js';
import { createMemoryState } from '../src/state/memory.js';
import { createRedisState } from '../src/state/redis.js';

const logins = Number(process.argv[2] ?? 100);
const log = pino({ level: 'silent' });
const redisUrl = process.env['SVC_BENCH_REDIS_URL'];
const state = redisUrl ? createRedisState({ url: redisUrl, log }) : createMemoryState();
const real = createLoginThrottle({ state, limits: readLoginLimits({}, log), log, registry: new Registry(), now: Date.now });

let throttleNs = 0n;
async function timed<T>(fn: () => Promise<T>): Promise<T> {
  const start = process.hrtime.bigint();
  try {
    return await fn();
  } finally {
    throttleNs += process.hrtime.bigint() - start;
  }
}
const throttle: LoginThrottle = {
  admit: (u) => timed(() => real.admit(u)),
  release: (u) => timed(() => real.release(u)),
  recordFailure: (u, attempt) => timed(() => real.recordFailure(u, attempt)),
  recordSuccess: (u) => timed(() => real.recordSuccess(u)),
  get degraded() {
    return real.degraded;
  },
  close: () => real.close(),
};

const hash = await bcrypt.hash('bench-password', BCRYPT_COST);
const accounts: ReadonlyMap<string, AccountSettings> = new Map([['bench', { name: 'bench', enabled: true, capabilities: ['login'], tokens: [], passwordHash: hash }]]);
const service = createLoginService({
  accounts: () => accounts,
  throttle,
  concurrency: createLoginConcurrency(50),
  signer: createTokenSigner({ secretKey: () => 'bench-secret-key-0123456789abcdef', now: Date.now }),
  sessionDurationMs: () => 86_400_000,
  log,
  now: Date.now,
});

await service.withPassword({ username: 'bench', password: 'bench-password' }); // warm-up
throttleNs = 0n;
const start = process.hrtime.bigint();
for (let i = 0; i < logins; i++) await service.withPassword({ username: 'bench', password: 'bench-password' });
const totalNs = process.hrtime.bigint() - start;

const seconds = Number(totalNs) / 1e9;
const share = (Number(throttleNs) / Number(totalNs)) * 100;
console.log(`state backend:            ${state.kind}`);
console.log(`successful logins:        ${logins} in ${seconds.toFixed(2)} s`);
console.log(`logins per second:        ${(logins / seconds).toFixed(1)}`);
console.log(`mean login time:          ${((seconds * 1000) / logins).toFixed(2)} ms`);
console.log(`mean throttle time/login: ${(Number(throttleNs) / 1e6 / logins).toFixed(3)} ms (admit + record)`);
console.log(`throttle share of login:  ${share.toFixed(3)} % (must be < 1 %) ${share < 1 ? 'OK' : 'TOO HIGH'}`);
await real.close();
await state.close();
process.exitCode = share < 1 ? 0 : 1;
