/**
 * Workload exchanges on two replicas sharing Redis (the real peer): a subject token exchanged on
 * one is a replay on the other, the svc token works on both, and its logout on one holds on the
 * other.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { startFakeGithubActions, type FakeGithubActions } from '../helpers/fake-github-actions.js';
import { startFakeKubernetesIssuer, type FakeKubernetesIssuer } from '../helpers/fake-kubernetes-issuer.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AUDIENCE, exchange, MAIN, workloadConfigDir } from '../helpers/workload-setup.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('e2e: workload exchanges on two replicas sharing Redis', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let redis: RedisPeer;
  let github: FakeGithubActions;
  let kubernetes: FakeKubernetesIssuer;
  let backend: Backend;
  let dir: string;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    [redis, github, kubernetes, backend] = await Promise.all([startRedis(), startFakeGithubActions(), startFakeKubernetesIssuer(), echoBackend('echo')]);
    dir = workloadConfigDir(github, kubernetes, backend.url);
    [a, b] = await Promise.all([startTestServer(dir, { redisUrl: redis.url, env: {} }), startTestServer(dir, { redisUrl: redis.url, env: {} })]);
  });
  after(async () => {
    await Promise.all([a?.close(1000), b?.close(1000)]);
    await Promise.all([github?.close(), kubernetes?.close(), backend?.close()]);
    await redis?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const tools = (url: string, token: string): Promise<number> =>
    fetch(`${url}/api/v1/extensions/tools/x`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);

  it('refuses on one replica a subject token exchanged on the other', async () => {
    const subjectToken = await github.token(MAIN, AUDIENCE);
    expect((await exchange(a.url, subjectToken)).status).to.equal(200);
    const again = await exchange(b.url, subjectToken);
    expect(again.status).to.equal(400);
    expect(again.body['error_description']).to.match(/^check 'replay' failed: /);
  });

  it('takes the svc token on both replicas, and a logout on one holds on the other', async () => {
    const token = (await exchange(a.url, await github.token(MAIN, AUDIENCE))).body['access_token'] as string;
    expect(await tools(a.url, token)).to.equal(200);
    expect(await tools(b.url, token)).to.equal(200);
    const logout = await fetch(`${b.url}/api/v1/session`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    expect(logout.status).to.equal(200);
    for (let i = 0; i < 50 && (await tools(a.url, token)) !== 401; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await tools(a.url, token)).to.equal(401);
  });
});
