/** The composition root: what it reads once for every feature. */
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { accountsConfigDir, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { startRedis } from '../helpers/peers.js';
import { startTestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('startServer', function () {
  cleanUpTempDirs();
  this.timeout(20_000);

  /** The log lines of a server started with `env` that hold `warning`. */
  async function warningsOf(env: Record<string, string>, warning: string): Promise<string[]> {
    const dir = accountsConfigDir();
    const server = await startTestServer(dir, { env });
    try {
      return server.logs().split('\n').filter((line) => line.includes(warning));
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }

  it('warns once about a bad login limit, however many features read the limits', async function () {
    expect(await warningsOf({ SVC_SESSION_FAILURE_MAX_FAIL_COUNT: 'five' }, "SVC_SESSION_FAILURE_MAX_FAIL_COUNT='five' is not an integer >= 1; using 5")).to.have.length(1);
  });

  it('warns once about a bad API token cap, though local accounts\' and SSO users\' tokens both use it', async function () {
    expect(await warningsOf({ SVC_MAX_API_TOKENS_PER_ACCOUNT: 'many' }, "SVC_MAX_API_TOKENS_PER_ACCOUNT='many' is not an integer >= 1; using 100")).to.have.length(1);
  });

  it('close(): a slow login in flight on Redis state, and a logout sent behind it on its connection after close() began, get their normal answers: the state closes after them', async function () {
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
      // starts while it is in flight; the second, a logout, writes its revocation to the state
      // after close() began. Were the state closed before the connections drained, it would be
      // refused (503, "the state backend is unreachable") and the token stay valid elsewhere.
      const body = JSON.stringify({ username: 'alice', password: 'wrong-password' });
      socket.write(`POST /api/v1/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await new Promise((r) => setTimeout(r, 150));
      const closing = server.close();
      await new Promise((r) => setTimeout(r, 50));
      socket.write(`DELETE /api/v1/session HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`);
      await closing;
      await gone;
      expect([...answers.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).to.deep.equal(['401', '200']);
      expect(answers).to.contain('"error":"invalid_credentials"').and.not.contain('"error":"unavailable"');
      expect(server.logs()).to.not.contain('"level":50');
    } finally {
      await rm(dir, { recursive: true, force: true });
      await redis.stop();
    }
  });
});
