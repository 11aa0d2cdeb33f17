/** The composition root: what it reads once for every feature. */
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { accountsConfigDir, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { startRedis } from '../helpers/peers.js';
import { startTestServer } from '../helpers/server.js';

describe('startServer', function () {
  this.timeout(20_000);

  it('warns once about a bad login limit, however many features read the limits', async function () {
    const dir = accountsConfigDir();
    const server = await startTestServer(dir, { env: { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: 'five' } });
    try {
      const warnings = server.logs().split('\n').filter((line) => line.includes("SVC_SESSION_FAILURE_MAX_FAIL_COUNT='five' is not an integer >= 1; using 5"));
      expect(warnings).to.have.length(1);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('close(): requests in flight on Redis state, a slow one and one pipelined behind it, get their normal answers before the state closes', async function () {
    const redis = await startRedis();
    const dir = accountsConfigDir();
    const server = await startTestServer(dir, { redisUrl: redis.url });
    try {
      const token = await login(server.url, 'alice', PASSWORDS.alice);
      const socket = connect(server.port, '127.0.0.1');
      socket.on('error', () => undefined);
      let answers = '';
      socket.on('data', (d: Buffer) => (answers += d.toString()));
      const gone = new Promise((resolve) => socket.once('close', resolve));
      // A wrong password is answered after at least 0.5 s (failed logins are slowed), so close()
      // starts while it is in flight; the pipelined request's answer waits behind it.
      const body = JSON.stringify({ username: 'alice', password: 'wrong-password' });
      socket.write(`POST /api/v1/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
        + `GET /api/v1/session/userinfo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`);
      await new Promise((r) => setTimeout(r, 150));
      await server.close();
      await gone;
      expect([...answers.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).to.deep.equal(['401', '200']);
      expect(answers).to.contain('"error":"invalid_credentials"').and.to.contain('"username":"alice"');
      expect(server.logs()).to.not.contain('"level":50');
    } finally {
      await rm(dir, { recursive: true, force: true });
      await redis.stop();
    }
  });
});
