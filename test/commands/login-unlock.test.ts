/** `svc-server login unlock`: the break-glass for a locked login, on a real Redis. */
import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { runLoginUnlock } from '../../src/commands/login-unlock.js';
import { createLoginThrottle } from '../../src/session/throttle.js';
import { createRedisState } from '../../src/state/redis.js';
import type { StateBackend } from '../../src/state/state.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { textSink } from '../helpers/text-sink.js';
import { collectAudit } from '../helpers/audit.js';
import { validAuditEvent } from '../helpers/audit-schema.js';


describe('login unlock', function () {
  this.timeout(30_000);
  let peer: RedisPeer;
  let redis: StateBackend;

  before(async function () {
    peer = await startRedis();
    redis = createRedisState({ url: peer.url, log: { info: () => undefined, warn: () => undefined } });
    await redis.ping();
  });
  after(async function () {
    await redis?.close();
    await peer?.stop();
  });

  it('lifts a lockout of admin that anyone could set, so the operator logs in at once', async function () {
    const audit = collectAudit();
    const throttle = createLoginThrottle({
      audit,
      state: redis,
      limits: { maxFailCount: 2, windowSeconds: 300, maxCacheSize: 100, maxConcurrentLogins: 0 },
      log: pino({ level: 'silent' }),
      registry: new Registry(),
      now: Date.now,
    });
    try {
      for (let i = 0; i < 2; i++) await throttle.recordFailure('admin', await throttle.admit('admin'));
      expect(await throttle.admit('admin').catch((e: unknown) => e)).to.include({ code: 'too_many_attempts' });
      const out = textSink();
      const err = textSink();
      expect(await runLoginUnlock(peer.url, 'admin', out.stream, err.stream, audit)).to.equal(0);
      expect(out.text()).to.equal('"admin": lockout lifted; 3 counted attempt(s) forgotten\n');
      // The lockout's start and its end, each an audit event.
      const [started, lifted] = [audit.of('lockout-started'), audit.of('lockout-lifted')];
      expect(started).to.have.length(1);
      expect(started[0]).to.deep.include({ outcome: 'success', user: { name: 'admin' }, reason: '2 failed logins' });
      expect(lifted).to.have.length(1);
      expect(lifted[0]).to.deep.include({ category: 'iam', type: 'change', outcome: 'success', user: { name: 'admin' } });
      expect(lifted[0]?.svc).to.include({ command: 'login unlock', wasLocked: true, attempts: 3 });
      for (const e of [...started, ...lifted]) validAuditEvent(e);
      expect(err.text()).to.equal('');
      expect(await throttle.admit('admin')).to.equal(1);
      expect(await redis.hashGet('login-failures-index', 'admin')).to.equal(null);
    } finally {
      await throttle.close();
      await redis.delete('login-failures:admin');
    }
  });

  it('waits for a Redis that answers only a moment after it starts', async function () {
    const late = await startRedis();
    try {
      await late.stop();
      const out = textSink();
      const err = textSink();
      const unlocking = runLoginUnlock(late.url, 'admin', out.stream, err.stream);
      await late.restart();
      expect(await unlocking, err.text()).to.equal(0);
      expect(out.text()).to.equal('"admin": was not locked; 0 counted attempt(s) forgotten\n');
    } finally {
      await late.stop();
    }
  });

  it('says what to do without Redis', async function () {
    const err = textSink();
    const audit = collectAudit();
    expect(await runLoginUnlock(undefined, 'admin', textSink().stream, err.stream, audit)).to.equal(1);
    expect(audit.of('lockout-lifted').map((e) => [e.outcome, e.reason])).to.deep.equal([['failure', 'no Redis given']]);
    expect(err.text()).to.equal(
      "svc-server: login unlock needs --redis, --redis-sentinel or --redis-cluster (or SVC_REDIS_URL, SVC_REDIS_SENTINELS, SVC_REDIS_CLUSTER): without Redis the failed logins are counted in the server's memory, and restarting the server clears them\n",
    );
  });
});
