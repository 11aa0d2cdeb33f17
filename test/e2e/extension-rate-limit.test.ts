/**
 * backend.rateLimit on two replicas sharing one Redis: a client sending twice the limit,
 * spread over both replicas, gets through at the configured rate (within 10 %, summed across
 * both); another caller at the same time is not affected; with Redis stopped each replica
 * keeps the limit on its own and nothing answers 500.
 */
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import YAML from 'yaml';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { accountsConfigDir, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { startReplica, stopReplica, type Replica } from '../helpers/replica-process.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const RATE = 10;
const BURST = 5;

interface Sent {
  readonly statuses: number[];
  readonly retryAfter: string[];
  readonly bodies: string[];
  /** From the first request sent to the last, in seconds. */
  readonly seconds: number;
}

/**
 * Sends `perSecond` requests a second for `seconds`, open loop (each at its time, whatever the
 * answers before it), alternating between the replicas.
 */
async function send(replicas: readonly Replica[], token: string, perSecond: number, seconds: number): Promise<Sent> {
  const statuses: number[] = [];
  const retryAfter: string[] = [];
  const bodies: string[] = [];
  const count = perSecond * seconds;
  const start = performance.now();
  const pending: Promise<void>[] = [];
  let last = start;
  for (let i = 0; i < count; i++) {
    const wait = start + (i * 1000) / perSecond - performance.now();
    if (wait > 0) await sleep(wait);
    last = performance.now();
    const replica = replicas[i % replicas.length]!;
    pending.push(
      fetch(`${replica.url}/api/v1/extensions/limited/x`, { headers: { authorization: `Bearer ${token}` } }).then(async (res) => {
        statuses.push(res.status);
        const text = await res.text();
        if (res.status === 429) {
          retryAfter.push(res.headers.get('retry-after') ?? '');
          bodies.push(text);
        }
      }),
    );
  }
  await Promise.all(pending);
  return { statuses, retryAfter, bodies, seconds: (last - start) / 1000 };
}

const allowed = (sent: Sent): number => sent.statuses.filter((s) => s === 200).length;

async function refusedOn(replica: Replica): Promise<number> {
  const text = await (await fetch(`${replica.url}/metrics`)).text();
  const line = /^svc_extension_rate_limited_total\{extension="limited"\} (\d+)$/m.exec(text);
  return Number(line?.[1] ?? 0);
}

describe('extension rate limits on two replicas sharing Redis', function () {
  cleanUpTempDirs();
  this.timeout(90_000);
  let redis: RedisPeer;
  let dir: string;
  let a: Replica;
  let b: Replica;
  let echo: Backend;
  let alice: string;
  let bob: string;

  before(async function () {
    redis = await startRedis();
    echo = await echoBackend('echo');
    const extensions = [{ name: 'limited', enabled: true, backend: { rateLimit: { requestsPerSecond: RATE, burst: BURST }, services: [{ url: echo.url }] } }];
    dir = accountsConfigDir({
      cm: { 'extension.config': YAML.stringify({ extensions }) },
      rbac: { 'policy.csv': 'p, alice, extensions, *, */limited, allow\np, bob, extensions, get, */limited, allow' },
    });
    [a, b] = await Promise.all([startReplica(dir, redis.url), startReplica(dir, redis.url)]);
    [alice, bob] = await Promise.all([login(a.url, 'alice', PASSWORDS.alice), login(b.url, 'bob', PASSWORDS.bob)]);
  });
  after(async function () {
    await Promise.all([stopReplica(a), stopReplica(b)]);
    await redis?.stop();
    await echo?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('lets a client at twice the limit through at the configured rate, summed across both replicas; another caller is not affected', async function () {
    const [fast, other] = await Promise.all([send([a, b], alice, 2 * RATE, 10), send([b, a], bob, RATE / 5, 10)]);
    // The bucket starts full (BURST) and refills RATE a second over the span of the requests.
    const expected = BURST + RATE * fast.seconds;
    expect(allowed(fast), `${allowed(fast)} allowed of ${fast.statuses.length} in ${fast.seconds.toFixed(2)} s`).to.be.within(expected * 0.9, expected * 1.1);
    expect(fast.statuses.filter((s) => s !== 200 && s !== 429)).to.deep.equal([]);
    expect(other.statuses.every((s) => s === 200), `bob: ${other.statuses.join(',')}`).to.equal(true);
    expect(new Set(fast.retryAfter)).to.deep.equal(new Set(['1']));
    expect(JSON.parse(fast.bodies[0]!)).to.deep.equal({ error: 'rate_limited', message: `extension 'limited' allows ${RATE} requests per second per caller (burst ${BURST}); try again in 1s` });
    const refused = fast.statuses.length - allowed(fast);
    expect((await refusedOn(a)) + (await refusedOn(b))).to.equal(refused);
  });

  it('with Redis stopped, holds the limit on each replica and never answers 500', async function () {
    await redis.stop();
    await sleep(500); // the previous test's last answers are in; each replica's own buckets start full
    // Twice the limit on each replica: each one's own bucket must hold it.
    const sent = await send([a, b], alice, 4 * RATE, 5);
    expect(sent.statuses.filter((s) => s !== 200 && s !== 429), sent.statuses.join(',')).to.deep.equal([]);
    const perReplica = BURST + RATE * sent.seconds;
    expect(allowed(sent), `${allowed(sent)} allowed of ${sent.statuses.length} in ${sent.seconds.toFixed(2)} s`).to.be.within(2 * perReplica * 0.9, 2 * perReplica * 1.1);
    const metrics = await (await fetch(`${a.url}/metrics`)).text();
    expect(metrics).to.match(/^svc_extension_rate_limit_fallback 1$/m);
  });
});
