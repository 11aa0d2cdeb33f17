/**
 * Two svc processes on Redis Sentinel, then on Redis Cluster, under a stream of local logins,
 * logouts and requests with valid and revoked tokens, while the primary is failed over (Sentinel:
 * SENTINEL FAILOVER, then kill -9 of the new primary; Cluster: kill -9 of one primary). After
 * that no token whose logout was answered with success is accepted, every token issued before
 * is still valid, and the stream works again by itself. Real redis-servers
 * (scripts/peers/start-redis-sentinel.sh, start-redis-cluster.sh); the killed node is started
 * again (empty), as its supervisor would.
 */
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import type { RedisTopology } from '../../src/state/redis-topology.js';
import { accountsConfigDir, call, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { clusterTopology, sentinelTopology, startRedisCluster, startRedisSentinel } from '../helpers/redis-topology.js';
import { startReplica, stopReplica, type Replica } from '../helpers/replica-process.js';

interface Outcome {
  readonly at: number;
  readonly kind: 'login' | 'valid' | 'revoked' | 'logout';
  readonly ok: boolean;
}

/** Logins, logouts and token checks on both replicas until stopped; what each answered. */
function stream(replicas: readonly Replica[], valid: string, revoked: string) {
  const outcomes: Outcome[] = [];
  /** Tokens whose logout was answered with success: never accepted again. */
  const loggedOut: string[] = [];
  let running = true;
  const done = (async () => {
    for (let i = 0; running; i++) {
      const r = replicas[i % replicas.length] as Replica;
      const at = Date.now();
      const reply = await call(r.url, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } }).catch(() => ({ status: 0, body: {} as Record<string, unknown> }));
      outcomes.push({ at, kind: 'login', ok: reply.status === 200 });
      const [v, x] = await Promise.all([
        call(r.url, 'GET', '/api/v1/account/alice', { token: valid }).catch(() => ({ status: 0 })),
        call(r.url, 'GET', '/api/v1/account/alice', { token: revoked }).catch(() => ({ status: 0 })),
      ]);
      outcomes.push({ at, kind: 'valid', ok: v.status === 200 }, { at, kind: 'revoked', ok: x.status === 401 });
      if (reply.status === 200 && i % 3 === 0) {
        const token = String(reply.body['token']);
        const out = await call(replicas[(i + 1) % replicas.length]?.url as string, 'DELETE', '/api/v1/session', { token }).catch(() => ({ status: 0 }));
        outcomes.push({ at, kind: 'logout', ok: out.status === 200 });
        if (out.status === 200) loggedOut.push(token);
      }
      await sleep(20);
    }
  })();
  return {
    outcomes,
    loggedOut,
    async stop() {
      running = false;
      await done;
    },
    /** Waits until the last `n` rounds all succeeded. */
    async recovered(n = 6, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const logins = outcomes.filter((o) => o.kind === 'login').slice(-n);
        if (logins.length === n && logins.every((o) => o.ok)) return;
        await sleep(100);
      }
      throw new Error(`the stream did not recover within ${timeoutMs} ms`);
    },
  };
}

async function checkAfter(replicas: readonly Replica[], before: readonly string[], loggedOut: readonly string[]): Promise<void> {
  for (const r of replicas) {
    for (const token of before) expect((await call(r.url, 'GET', '/api/v1/account/alice', { token })).status, 'a token issued before').to.equal(200);
    for (const token of loggedOut) expect((await call(r.url, 'GET', '/api/v1/account/alice', { token })).status, 'a logged-out token').to.equal(401);
  }
}

function failedByKind(outcomes: readonly Outcome[]): Record<string, number> {
  const failed: Record<string, number> = {};
  for (const o of outcomes) if (!o.ok) failed[o.kind] = (failed[o.kind] ?? 0) + 1;
  return failed;
}

async function twoReplicas(dir: string, topology: RedisTopology): Promise<Replica[]> {
  return Promise.all([startReplica(dir, JSON.stringify(topology)), startReplica(dir, JSON.stringify(topology))]);
}

/** Tokens issued before: two kept, one logged out (answered 200). */
async function tokensBefore(replicas: readonly Replica[]): Promise<{ kept: string[]; revoked: string }> {
  const [a, b] = replicas as [Replica, Replica];
  const kept = [await login(a.url, 'alice', PASSWORDS.alice), await login(b.url, 'alice', PASSWORDS.alice)];
  const revoked = await login(a.url, 'alice', PASSWORDS.alice);
  expect((await call(b.url, 'DELETE', '/api/v1/session', { token: revoked })).status).to.equal(200);
  return { kept, revoked };
}

describe('two svc replicas through Redis failovers', function () {
  this.timeout(120_000);

  it('on Sentinel: SENTINEL FAILOVER, then kill -9 of the new primary', async function () {
    const peer = await startRedisSentinel();
    const dir = accountsConfigDir();
    let replicas: Replica[] = [];
    try {
      replicas = await twoReplicas(dir, sentinelTopology(peer));
      const { kept, revoked } = await tokensBefore(replicas);
      const s = stream(replicas, kept[0] as string, revoked);
      await s.recovered();
      const second = await peer.failover();
      await s.recovered();
      await peer.kill(second);
      await peer.awaitPrimaryOtherThan(second);
      await s.recovered();
      await peer.start(second);
      await s.recovered();
      await s.stop();
      console.log(`      sentinel: ${s.outcomes.length} requests, failed by kind ${JSON.stringify(failedByKind(s.outcomes))}; ${s.loggedOut.length} logouts answered 200`);
      expect(s.outcomes.filter((o) => o.kind === 'revoked' && !o.ok)).to.have.length(0);
      await checkAfter(replicas, kept, [revoked, ...s.loggedOut]);
    } finally {
      await Promise.all(replicas.map((r) => stopReplica(r)));
      await peer.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('on Cluster: kill -9 of one primary', async function () {
    const peer = await startRedisCluster();
    const dir = accountsConfigDir();
    let replicas: Replica[] = [];
    try {
      replicas = await twoReplicas(dir, clusterTopology(peer));
      const { kept, revoked } = await tokensBefore(replicas);
      const s = stream(replicas, kept[0] as string, revoked);
      await s.recovered();
      const [victim] = await peer.primaryPorts();
      await peer.kill(victim as number);
      await peer.awaitHealthy();
      await s.recovered();
      await peer.start(victim as number);
      await s.recovered();
      await s.stop();
      console.log(`      cluster: ${s.outcomes.length} requests, failed by kind ${JSON.stringify(failedByKind(s.outcomes))}; ${s.loggedOut.length} logouts answered 200`);
      expect(s.outcomes.filter((o) => o.kind === 'revoked' && !o.ok)).to.have.length(0);
      await checkAfter(replicas, kept, [revoked, ...s.loggedOut]);
    } finally {
      await Promise.all(replicas.map((r) => stopReplica(r)));
      await peer.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
