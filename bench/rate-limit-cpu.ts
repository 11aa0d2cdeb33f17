/**
 * CPU per proxied request spent on `backend.rateLimit` with Redis state, in this process (the
 * replica's side; Redis's own CPU is printed apart): a caller far from its limit, `--concurrency`
 * requests in flight, through the extension rate limiter (src/extensions/rate-limit.ts, leases),
 * beside one Lua call per request (StateBackend.takeToken, what the limiter did before leases).
 * CPU per operation rather than throughput: steadier on a shared host.
 *
 * Peers: scripts/peers/start-redis.sh.
 * Usage: npx tsx bench/rate-limit-cpu.ts [--requests 50000] [--concurrency 64] [--rounds 3]
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { ExtensionConfig } from '../src/extensions/config.js';
import { createRateLimiter } from '../src/extensions/rate-limit.js';
import type { Principal } from '../src/principal.js';
import { createRedisState } from '../src/state/redis.js';
import { cleanUp, freePort, pidOf, startPeer } from './sso-login-procs.js';

const { values: opts } = parseArgs({
  options: { requests: { type: 'string', default: '50000' }, concurrency: { type: 'string', default: '64' }, rounds: { type: 'string', default: '3' } },
});
const REQUESTS = Number(opts.requests);
const CONCURRENCY = Number(opts.concurrency);
const ROUNDS = Number(opts.rounds);

const log = pino({ level: 'warn' });
const port = await freePort();
const redisPid = await pidOf(await startPeer('start-redis.sh', [String(port)]));
const state = createRedisState({ topology: { kind: 'standalone', url: `redis://127.0.0.1:${port}` }, log });
const limit = { requestsPerSecond: 1_000_000, burst: 1_000_000 };
const extension: ExtensionConfig = { name: 'bench', enabled: true, idleConnTimeoutMs: 60_000, contentSecurityPolicy: undefined, services: [{ url: 'http://b' }], rateLimit: limit };
const caller: Principal = { username: 'alice', groups: [], issuer: 'svc', kind: 'session', tokenId: 't', expiresAt: undefined };
const address = (): string => '192.0.2.1';

async function ticks(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? [];
  return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100 a second)
}

/** Runs `take` REQUESTS times, CONCURRENCY at a time; µs of this process's and Redis's CPU per request. */
async function measure(take: () => Promise<void> | undefined): Promise<{ own: number; redis: number; wall: number }> {
  const cpu = process.cpuUsage();
  const redisBefore = await ticks(redisPid);
  const start = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next++ < REQUESTS) await take();
  }));
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { own: (used.user + used.system) / REQUESTS, redis: ((await ticks(redisPid)) - redisBefore) * 10_000 / REQUESTS, wall };
}

const limiter = createRateLimiter({ state, now: Date.now, log, registry: new Registry() });
const rate = { perSecond: limit.requestsPerSecond, burst: limit.burst };
const targets = {
  'one Lua call per request': () => state.takeToken('ratelimit:bench:per-request', rate, Date.now()).then(() => undefined),
  'limiter with leases': () => limiter.take(extension, caller, address),
};
console.log(`# ${new Date().toISOString()} ${REQUESTS} requests, ${CONCURRENCY} in flight, ${ROUNDS} rounds, limit far above the load`);
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, take] of Object.entries(targets)) {
      const { own, redis, wall } = await measure(take);
      console.log(`round ${round}  ${name.padEnd(26)} ${own.toFixed(2).padStart(7)} µs CPU here, ${redis.toFixed(2).padStart(6)} µs in Redis per request  (${(REQUESTS / wall * 1000).toFixed(0)} /s)`);
    }
  }
} finally {
  await state.close();
  await cleanUp();
}
