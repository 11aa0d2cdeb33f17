/**
 * Two svc replicas on one Redis, on Redis Sentinel and on Redis Cluster (real redis-servers,
 * scripts/peers/), side by side in one run:
 *   - local logins per second and token checks per second (CONCURRENCY clients, SECONDS each);
 *   - per failover (Sentinel: SENTINEL FAILOVER, then kill -9 of the new primary; Cluster:
 *     kill -9 of one primary), under the same load: requests failed by kind, seconds until the
 *     first success after the failover began, and until the login rate is back to 90 % of the
 *     rate before it.
 * Not measured here: the identity provider's refresh grants (bench/sso-login.ts measures them on
 * one Redis; its set-up of a directory and clients is not repeated here).
 * Usage: npx tsx bench/redis-failover.ts [--seconds 5] [--concurrency 8]
 */
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { RedisTopology } from '../src/state/redis-topology.js';
import { accountsConfigDir, call, login, PASSWORDS } from '../test/helpers/accounts-fixture.js';
import { startRedis } from '../test/helpers/peers.js';
import { clusterTopology, sentinelTopology, startRedisCluster, startRedisSentinel } from '../test/helpers/redis-topology.js';
import { startReplica, stopReplica, type Replica } from '../test/helpers/replica-process.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, concurrency: { type: 'string', default: '8' } } });
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const BUCKET_MS = 250;

interface Sample {
  readonly at: number;
  readonly kind: 'login' | 'check';
  readonly ok: boolean;
}

/** CONCURRENCY clients alternating a login and a token check, on both replicas, until stopped. */
function load(replicas: readonly Replica[], token: string) {
  const samples: Sample[] = [];
  let running = true;
  const workers = Array.from({ length: CONCURRENCY }, async (_, w) => {
    for (let i = 0; running; i++) {
      const r = replicas[(w + i) % replicas.length] as Replica;
      const kind = i % 2 === 0 ? 'login' : 'check';
      const reply = kind === 'login'
        ? await call(r.url, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } }).catch(() => ({ status: 0 }))
        : await call(r.url, 'GET', '/api/v1/account/alice', { token }).catch(() => ({ status: 0 }));
      samples.push({ at: Date.now(), kind, ok: reply.status === 200 });
      if (reply.status !== 200) await sleep(10);
    }
  });
  return {
    samples,
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

function rate(samples: readonly Sample[], kind: Sample['kind'], from: number, to: number): number {
  return samples.filter((s) => s.kind === kind && s.ok && s.at >= from && s.at < to).length / ((to - from) / 1000);
}

interface FailoverFigures {
  readonly what: string;
  readonly failed: Record<string, number>;
  readonly firstSuccessS: number;
  readonly back90S: number;
}

/** Runs `act` under load and measures what it cost. */
async function failover(what: string, replicas: readonly Replica[], token: string, act: () => Promise<void>): Promise<FailoverFigures> {
  const l = load(replicas, token);
  await sleep(SECONDS * 1000);
  const started = Date.now();
  const before = rate(l.samples, 'login', started - SECONDS * 1000, started);
  await act();
  // Let it settle, then read the figures from the samples.
  let back90 = Number.NaN;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    await sleep(BUCKET_MS);
    for (let t = started; t + 1000 <= Date.now(); t += BUCKET_MS) {
      if (rate(l.samples, 'login', t, t + 1000) >= 0.9 * before) {
        back90 = (t - started) / 1000;
        break;
      }
    }
    if (!Number.isNaN(back90) && Date.now() - started > back90 * 1000 + 2000) break;
  }
  await l.stop();
  const after = l.samples.filter((s) => s.at >= started);
  const failed: Record<string, number> = {};
  for (const s of after) if (!s.ok) failed[s.kind] = (failed[s.kind] ?? 0) + 1;
  const firstFailure = after.find((s) => !s.ok)?.at;
  const firstSuccessAfterFailure = firstFailure === undefined ? started : (after.find((s) => s.ok && s.at > firstFailure)?.at ?? Number.NaN);
  return { what, failed, firstSuccessS: (firstSuccessAfterFailure - started) / 1000, back90S: back90 };
}

async function steadyRates(replicas: readonly Replica[], token: string): Promise<{ logins: number; checks: number }> {
  const l = load(replicas, token);
  await sleep(1000);
  const from = Date.now();
  await sleep(SECONDS * 1000);
  const to = Date.now();
  await l.stop();
  return { logins: rate(l.samples, 'login', from, to), checks: rate(l.samples, 'check', from, to) };
}

async function withReplicas<T>(topology: RedisTopology, run: (replicas: Replica[], token: string) => Promise<T>): Promise<T> {
  const dir = accountsConfigDir();
  const arg = topology.kind === 'standalone' ? topology.url : JSON.stringify(topology);
  const replicas = await Promise.all([startReplica(dir, arg), startReplica(dir, arg)]);
  try {
    const token = await login((replicas[0] as Replica).url, 'alice', PASSWORDS.alice);
    return await run(replicas, token);
  } finally {
    await Promise.all(replicas.map((r) => stopReplica(r)));
    await rm(dir, { recursive: true, force: true });
  }
}

const rows: string[] = [];
const failovers: FailoverFigures[] = [];

{
  const redis = await startRedis();
  try {
    const r = await withReplicas({ kind: 'standalone', url: redis.url }, steadyRates);
    rows.push(`| standalone | ${r.logins.toFixed(1)} | ${r.checks.toFixed(1)} |`);
  } finally {
    await redis.stop();
  }
}
{
  const peer = await startRedisSentinel();
  try {
    await withReplicas(sentinelTopology(peer), async (replicas, token) => {
      const r = await steadyRates(replicas, token);
      rows.push(`| sentinel | ${r.logins.toFixed(1)} | ${r.checks.toFixed(1)} |`);
      failovers.push(await failover('sentinel: SENTINEL FAILOVER', replicas, token, async () => void (await peer.failover())));
      const primary = await peer.primaryPort();
      failovers.push(await failover('sentinel: kill -9 of the primary', replicas, token, async () => {
        await peer.kill(primary);
        await peer.awaitPrimaryOtherThan(primary);
      }));
      await peer.start(primary);
    });
  } finally {
    await peer.stop();
  }
}
{
  const peer = await startRedisCluster();
  try {
    await withReplicas(clusterTopology(peer), async (replicas, token) => {
      const r = await steadyRates(replicas, token);
      rows.push(`| cluster | ${r.logins.toFixed(1)} | ${r.checks.toFixed(1)} |`);
      const [victim] = await peer.primaryPorts();
      failovers.push(await failover('cluster: kill -9 of a primary', replicas, token, async () => {
        await peer.kill(victim as number);
        await peer.awaitHealthy();
      }));
      await peer.start(victim as number);
    });
  } finally {
    await peer.stop();
  }
}

console.log(`two svc replicas, ${CONCURRENCY} clients, ${SECONDS} s per measure\n`);
console.log('| topology | logins/s | token checks/s |\n|---|---|---|');
for (const row of rows) console.log(row);
console.log('\n| failover | failed requests by kind | first success (s) | logins back to 90 % (s) |\n|---|---|---|---|');
for (const f of failovers) console.log(`| ${f.what} | ${JSON.stringify(f.failed)} | ${f.firstSuccessS.toFixed(2)} | ${f.back90S.toFixed(2)} |`);
process.exit(0);
