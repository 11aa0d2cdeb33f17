/**
 * Two svc replicas on one Redis, on Redis Sentinel and on Redis Cluster (real redis-servers,
 * scripts/peers/), with the bundled identity provider (a real slapd behind an LDAP connector),
 * side by side in one run:
 *   - per topology, each alone for SECONDS with CONCURRENCY clients on both replicas: local logins
 *     per second, token checks per second, and the provider's refresh grants per second (each
 *     client chains one login's refresh tokens, rotated at every grant, and logs in again after
 *     REFRESHES_PER_CHAIN or when the chain is refused);
 *   - per failover (Sentinel: SENTINEL FAILOVER, then kill -9 of the new primary; Cluster:
 *     kill -9 of one primary; a killed node is started again once the new primary serves, as its
 *     supervisor would), under a mixed load of the three (each client doing one): requests failed
 *     by kind, and for logins
 *     and refresh grants the seconds from the failover's start until the first success after
 *     their first failure, and until their rate is back to 90 % of theirs before (the end of the
 *     first 1 s window at or above it after a window below it).
 * Usage: npx tsx bench/redis-failover.ts [--seconds 5] [--concurrency 8]
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { RedisTopology } from '../src/state/redis-topology.js';
import { call, login, PASSWORDS } from '../test/helpers/accounts-fixture.js';
import { startRedis } from '../test/helpers/peers.js';
import { clusterTopology, sentinelTopology, startRedisCluster, startRedisSentinel } from '../test/helpers/redis-topology.js';
import type { Replica } from '../test/helpers/replica-process.js';
import { RefreshChain, withSsoReplicas, type SsoRefresh } from '../test/helpers/sso-refresh.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, concurrency: { type: 'string', default: '8' } } });
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const BUCKET_MS = 250;
/** The grant index holds 1,000 live tokens; a refresh lists two (refresh and access token). */
const REFRESHES_PER_CHAIN = 400;

type Kind = 'login' | 'check' | 'refresh' | 'sso-login';

interface Sample {
  readonly at: number;
  readonly kind: Kind;
  readonly ok: boolean;
}

interface Svc {
  readonly replicas: readonly Replica[];
  readonly token: string;
  readonly sso: SsoRefresh;
}

/**
 * CONCURRENCY clients on both replicas, client `w` doing only `kinds[w % kinds.length]` (so a kind
 * that waits or fails does not slow the others' rates), until stopped.
 */
function load(svc: Svc, kinds: readonly Exclude<Kind, 'sso-login'>[]) {
  const samples: Sample[] = [];
  /** When each kind succeeded, in time order: rates are read by binary search, so measuring stays cheap. */
  const okAt: Record<Kind, number[]> = { login: [], check: [], refresh: [], 'sso-login': [] };
  const record = (sample: Sample) => {
    samples.push(sample);
    if (sample.ok) okAt[sample.kind].push(sample.at);
  };
  let running = true;
  const workers = Array.from({ length: CONCURRENCY }, async (_, w) => {
    const chain = new RefreshChain(svc.sso, REFRESHES_PER_CHAIN);
    for (let i = 0; running; i++) {
      const r = svc.replicas[(w + i) % svc.replicas.length] as Replica;
      const kind = kinds[w % kinds.length] as Kind;
      let ok: boolean;
      if (kind === 'refresh') {
        const loggedIn = await chain.start();
        if (loggedIn !== undefined) record({ at: Date.now(), kind: 'sso-login', ok: loggedIn });
        if (loggedIn === false) {
          await sleep(10);
          continue;
        }
        ok = (await chain.refresh(r)).refreshToken !== undefined;
      } else {
        const reply = kind === 'login'
          ? await call(r.url, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } }).catch(() => ({ status: 0 }))
          : await call(r.url, 'GET', '/api/v1/account/alice', { token: svc.token }).catch(() => ({ status: 0 }));
        ok = reply.status === 200;
      }
      record({ at: Date.now(), kind, ok });
      if (!ok) await sleep(10);
    }
  });
  return {
    samples,
    okAt,
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

type Load = ReturnType<typeof load>;

/** The first index of `times` (ascending) at or after `t`. */
function firstAtOrAfter(times: readonly number[], t: number): number {
  let [lo, hi] = [0, times.length];
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((times[mid] as number) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Successes of `kind` per second in [from, to). */
function rate(l: Load, kind: Kind, from: number, to: number): number {
  const times = l.okAt[kind];
  return (firstAtOrAfter(times, to) - firstAtOrAfter(times, from)) / ((to - from) / 1000);
}

/**
 * Seconds from `started` until `kind`'s rate is back to 90 % of `before`: the end of the first
 * 1 s window (BUCKET_MS apart) at or above it after the first one below it; 0 when none was
 * below, NaN when none is back yet. Later dips (a busy host) do not count.
 */
function back90(l: Load, kind: Kind, before: number, started: number, until: number): number {
  let dipped = false;
  for (let t = started; t + 1000 <= until; t += BUCKET_MS) {
    const low = rate(l, kind, t, t + 1000) < 0.9 * before;
    if (low) dipped = true;
    else if (dipped) return (t + 1000 - started) / 1000;
  }
  return dipped ? Number.NaN : 0;
}

/** Seconds from `started` to `kind`'s first success after its first failure; 0 when none failed, NaN when none succeeded since. */
function firstSuccess(l: Load, kind: Kind, started: number): number {
  const after = l.samples.filter((s) => s.kind === kind && s.at >= started);
  const firstFailure = after.find((s) => !s.ok)?.at;
  if (firstFailure === undefined) return 0;
  const success = after.find((s) => s.ok && s.at > firstFailure)?.at;
  return success === undefined ? Number.NaN : (success - started) / 1000;
}

interface FailoverFigures {
  readonly what: string;
  readonly failed: Record<string, number>;
  readonly firstSuccessS: { readonly login: number; readonly refresh: number };
  readonly back90S: { readonly login: number; readonly refresh: number };
}

/** Watched this long after both rates are back, or after the act when neither dipped. */
const SETTLED_MS = 3_000;

/** Runs `act` under the mixed load and measures what it cost. */
async function failover(what: string, svc: Svc, act: () => Promise<void>): Promise<FailoverFigures> {
  const l = load(svc, ['login', 'check', 'refresh']);
  await sleep(SECONDS * 1000);
  const started = Date.now();
  const before = { login: rate(l, 'login', started - SECONDS * 1000, started), refresh: rate(l, 'refresh', started - SECONDS * 1000, started) };
  await act();
  // Until both rates are back and SETTLED_MS more have passed (a dip may start late), at most 60 s.
  const acted = Date.now();
  const deadline = acted + 60_000;
  for (;;) {
    await sleep(BUCKET_MS);
    const now = Date.now();
    const back = Math.max(back90(l, 'login', before.login, started, now), back90(l, 'refresh', before.refresh, started, now));
    if ((!Number.isNaN(back) && now - started > back * 1000 + SETTLED_MS && now - acted > SETTLED_MS) || now > deadline) break;
  }
  await l.stop();
  const until = Date.now();
  const perSecond = (kind: Kind) => Array.from({ length: Math.floor((until - started) / 1000) }, (_, i) => rate(l, kind, started + i * 1000, started + (i + 1) * 1000).toFixed(0)).join(' ');
  console.error(`${what}: before ${before.login.toFixed(0)} logins/s, ${before.refresh.toFixed(0)} refresh grants/s; each second from the start:\n  logins  ${perSecond('login')}\n  refresh ${perSecond('refresh')}`);
  const failed: Record<string, number> = {};
  for (const s of l.samples) if (s.at >= started && !s.ok) failed[s.kind] = (failed[s.kind] ?? 0) + 1;
  return {
    what, failed,
    firstSuccessS: { login: firstSuccess(l, 'login', started), refresh: firstSuccess(l, 'refresh', started) },
    back90S: { login: back90(l, 'login', before.login, started, until), refresh: back90(l, 'refresh', before.refresh, started, until) },
  };
}

/** Each kind alone: its rate over SECONDS after 1 s of warm-up. */
async function steadyRates(svc: Svc): Promise<Record<Exclude<Kind, 'sso-login'>, number>> {
  const rates = { login: 0, check: 0, refresh: 0 };
  for (const kind of ['login', 'check', 'refresh'] as const) {
    const l = load(svc, [kind]);
    await sleep(1000);
    const from = Date.now();
    await sleep(SECONDS * 1000);
    const to = Date.now();
    await l.stop();
    rates[kind] = rate(l, kind, from, to);
  }
  return rates;
}

async function withSvc<T>(topology: RedisTopology, run: (svc: Svc) => Promise<T>): Promise<T> {
  return withSsoReplicas(topology, async (replicas, sso) => {
    const token = await login((replicas[0] as Replica).url, 'alice', PASSWORDS.alice);
    return run({ replicas, token, sso });
  });
}

const rows: string[] = [];
const failovers: FailoverFigures[] = [];
const row = (name: string, r: Record<string, number>) => rows.push(`| ${name} | ${r['login']?.toFixed(1)} | ${r['check']?.toFixed(1)} | ${r['refresh']?.toFixed(1)} |`);

{
  const redis = await startRedis();
  try {
    row('one Redis', await withSvc({ kind: 'standalone', url: redis.url }, steadyRates));
  } finally {
    await redis.stop();
  }
}
{
  const peer = await startRedisSentinel();
  try {
    await withSvc(sentinelTopology(peer), async (svc) => {
      row('Sentinel', await steadyRates(svc));
      failovers.push(await failover('Sentinel: `SENTINEL FAILOVER`', svc, async () => void (await peer.failover())));
      const primary = await peer.primaryPort();
      failovers.push(await failover('Sentinel: kill -9 of the primary', svc, async () => {
        await peer.kill(primary);
        await peer.awaitPrimaryOtherThan(primary);
        await peer.start(primary);
      }));
    });
  } finally {
    await peer.stop();
  }
}
{
  const peer = await startRedisCluster();
  try {
    await withSvc(clusterTopology(peer), async (svc) => {
      row('Cluster', await steadyRates(svc));
      const [victim] = await peer.primaryPorts();
      failovers.push(await failover('Cluster: kill -9 of a primary', svc, async () => {
        await peer.kill(victim as number);
        await peer.awaitHealthy();
        await peer.start(victim as number);
      }));
    });
  } finally {
    await peer.stop();
  }
}

const seconds = (s: number) => (Number.isNaN(s) ? 'not yet' : s.toFixed(2));
console.log(`two svc replicas, ${CONCURRENCY} clients, ${SECONDS} s per measure\n`);
console.log('| topology | logins/s | token checks/s | refresh grants/s |\n|---|---|---|---|');
for (const line of rows) console.log(line);
console.log('\n| failover | failed requests by kind | first success after a failure (s): logins / refresh grants | back to 90 % (s): logins / refresh grants |\n|---|---|---|---|');
for (const f of failovers) {
  const failed = Object.keys(f.failed).length === 0 ? 'none' : Object.entries(f.failed).map(([k, n]) => `${k} ${n}`).join(', ');
  console.log(`| ${f.what} | ${failed} | ${seconds(f.firstSuccessS.login)} / ${seconds(f.firstSuccessS.refresh)} | ${seconds(f.back90S.login)} / ${seconds(f.back90S.refresh)} |`);
}
process.exit(0);
