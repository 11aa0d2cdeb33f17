/**
 * Personal API tokens of SSO users across replicas and restarts: two svc servers share one
 * config dir (svc-secret holds the token records) and one Redis (the shared group check), with
 * the bundled provider's LDAP connector against a real slapd. A token made on one replica works
 * on the other, deleted on one it stops on the other, and it survives a restart, even one onto
 * the memory state backend, where the provider's own login record is gone: the identity its
 * connector rechecks is in the record.
 */
import { expect } from 'chai';
import { ssoFormLogin, startLdapIdpSvc, type LdapIdpSvc } from '../helpers/ldap-idp-svc.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const POLICY = ['p, role:token-makers, tokens, create, self, allow', 'g, devs, role:token-makers', 'p, role:dev-tools, extensions, *, */tools, allow', 'g, qa, role:dev-tools'].join('\n');

describe('e2e: personal API tokens of SSO users on two replicas and after restarts', function () {
  this.timeout(90_000);
  let redis: RedisPeer;
  let first: LdapIdpSvc | undefined;
  const others: TestServer[] = [];

  before(async function () {
    redis = await startRedis();
    first = await startLdapIdpSvc({ secretKey: 'sso-tokens-replicas-secret-key-0123456789', extensions: ['tools'], policy: POLICY }, { redisUrl: redis.url });
  });

  after(async function () {
    for (const server of others) await server.close(1000);
    await first?.close();
    await redis?.stop();
  });

  /** Another replica on the same config dir: on the same Redis, or (redisUrl undefined) on memory. */
  async function replica(redisUrl: string | undefined): Promise<TestServer> {
    const server = await startTestServer(first?.dir ?? '', { port: await freePort(), ...(redisUrl !== undefined ? { redisUrl } : {}) });
    others.push(server);
    return server;
  }

  async function makeToken(): Promise<{ id: string; token: string }> {
    const url = first?.url ?? '';
    const browser = await ssoFormLogin(url, 'bob', 'bob123');
    const res = await fetch(`${url}/api/v1/session/tokens`, { method: 'POST', headers: { authorization: `Bearer ${browser.token()}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ci', expiresIn: '1h' }) });
    expect(res.status).to.equal(200);
    return await res.json() as { id: string; token: string };
  }

  const tools = async (url: string, token: string) => {
    const res = await fetch(`${url}/api/v1/extensions/tools/x`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    return res.status;
  };

  async function eventually(want: number, probe: () => Promise<number>): Promise<void> {
    let last = 0;
    for (let i = 0; i < 50; i++) {
      last = await probe();
      if (last === want) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`still ${last}, want ${want}`);
  }

  it('works on the other replica, and deleted on one it stops on the other', async function () {
    const other = await replica(redis.url);
    const made = await makeToken();
    await eventually(200, () => tools(other.url, made.token));
    const deleted = await fetch(`${first?.url ?? ''}/api/v1/session/tokens/${made.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${made.token}` } });
    expect(deleted.status).to.equal(200);
    await eventually(401, () => tools(other.url, made.token));
  });

  it('survives a restart, onto Redis or onto the memory state backend', async function () {
    const made = await makeToken();
    const again = await replica(redis.url);
    expect(await tools(again.url, made.token)).to.equal(200);
    others.splice(others.indexOf(again), 1);
    await again.close(1000);
    const memory = await replica(undefined);
    expect(await tools(memory.url, made.token), 'its connector rechecked from the stored identity').to.equal(200);
  });
});
