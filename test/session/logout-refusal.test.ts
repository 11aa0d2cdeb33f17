/**
 * A logout refused because no Redis replica acknowledged the revocation (Sentinel, its replica
 * down, the primary answering): said as that, logged and counted; and one refused because the
 * state backend does not answer, told apart.
 */
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { Counter, Registry } from 'prom-client';
import { Unavailable } from '../../src/errors.js';
import { createLogoutRefusals, logLogoutRefused } from '../../src/session/logout-refusal.js';
import { NotReplicated, StateUnavailable } from '../../src/state/state.js';
import { accountsConfigDir, call, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { sentinelTopology, startRedisSentinel, type RedisSentinelPeer } from '../helpers/redis-topology.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const NOT_REPLICATED =
  'logout could not be confirmed: Redis took it, but no replica acknowledged the write within the wait, so a failover ' +
  'could lose it. The svc.token cookie is cleared and this replica refuses the token; log out again once a Redis replica is back';

describe('session: logout refusals', function () {
  cleanUpTempDirs();
  it('tells "not replicated" from "unreachable", counts each, logs nothing itself, and passes other errors through', async () => {
    const warnings: { obj: object; msg: string }[] = [];
    const log = { warn: (obj: object, msg: string) => warnings.push({ obj, msg }) } as never;
    const registry = new Registry();
    const refusals = createLogoutRefusals({ registry });
    const notReplicated = refusals.explain(new NotReplicated('redis set at …: no replica acknowledged the write within 500 ms'));
    expect(notReplicated).to.be.instanceOf(Unavailable);
    expect((notReplicated as Error).message).to.equal(NOT_REPLICATED);
    const unreachable = refusals.explain(new StateUnavailable('redis at 127.0.0.1:1 is unreachable (end)'));
    expect((unreachable as Error).message).to.match(/^logout could not be recorded: the state backend is unreachable\./);
    const bug = new TypeError('a bug');
    expect(refusals.explain(bug)).to.equal(bug);
    // Not every revocation is a logout (the bound ends sessions at a login): the caller that knows logs.
    expect(warnings).to.deep.equal([]);
    const who = { account: 'alice', sessionId: 's1', via: 'logout' };
    for (const err of [notReplicated, unreachable, bug]) logLogoutRefused(log, err, who);
    expect(warnings.map((w) => w.msg)).to.deep.equal([
      'logout refused: Redis took the revocation but no replica acknowledged it within the wait; check the Redis replicas',
      'logout refused: the revocation could not be written, the state backend does not answer',
    ]);
    expect(warnings[0]?.obj).to.deep.equal({ ...who, reason: 'not_replicated', cause: 'redis set at …: no replica acknowledged the write within 500 ms' });
    const counted = await (registry.getSingleMetric('svc_logout_refusals_total') as Counter).get();
    expect(counted.values.map((v) => [v.labels['reason'], v.value])).to.deep.equal([['not_replicated', 1], ['unreachable', 1]]);
  });

  describe('on Redis Sentinel with its replica down', function () {
    this.timeout(90_000);
    let peer: RedisSentinelPeer;
    let dir: string;
    let server: TestServer;
    let replica: number | undefined;

    before(async () => {
      peer = await startRedisSentinel();
      dir = accountsConfigDir();
      server = await startTestServer(dir, { redis: sentinelTopology(peer) });
    });
    after(async () => {
      await server?.close(500);
      if (replica !== undefined) await peer.start(replica);
      await peer?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    it('answers 503 saying no replica acknowledged the logout (not "unreachable"), logs it and counts it', async () => {
      const base = server.url;
      const token = await login(base, 'alice', PASSWORDS.alice);
      const primary = await peer.primaryPort();
      replica = peer.nodePorts.find((p) => p !== primary) as number;
      await peer.kill(replica);
      expect((await fetch(`${base}/readyz`)).status, 'the primary answers').to.equal(200);

      const out = await call(base, 'DELETE', '/api/v1/session', { cookie: `svc.token=${token}`, origin: base });
      expect(out.status).to.equal(503);
      expect(out.body).to.deep.equal({ error: 'unavailable', message: NOT_REPLICATED });
      expect(out.headers.get('set-cookie')).to.match(/^svc\.token=;/);
      expect(server.logs()).to.include('logout refused: Redis took the revocation but no replica acknowledged it within the wait');
      expect(server.logs()).to.include('no replica acknowledged the write within 500 ms');
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).to.include('svc_logout_refusals_total{reason="not_replicated"} 1\n');
      // This replica refuses the token at once, as for any refused logout.
      expect((await call(base, 'GET', '/api/v1/account/alice', { token })).status).to.equal(401);
    });
  });
});
