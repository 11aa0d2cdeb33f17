/**
 * Floods of anonymous requests at the bundled identity provider, on the memory state and on
 * Redis, with a real LDAP connector (slapd) for the logins that must keep working:
 * - one address sends 5,000 authorization requests: only that address is refused (with a log
 *   line and a metric), and a person at another address logs in through svc's SSO meanwhile and
 *   after; on memory the flood comes from another loopback address (127.0.0.2), on Redis from
 *   behind a trusted front proxy that reports it in X-Forwarded-For (SVC_TRUSTED_PROXIES);
 * - many addresses send the largest authorization requests taken, and views of the device
 *   page: the state stays within the byte bound (keys and bytes in Redis, memory the process
 *   retains), no device page view leaves a session, and past the bound the provider says so.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { MAX_AUTHORIZATION_REQUEST_BYTES } from '../../src/idp/request-bounds.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { fakePasswordConnector } from '../helpers/fake-password-connector.js';
import { collectGarbage } from '../helpers/heap.js';
import { startPasswordIdpSvc } from '../helpers/idp-svc.js';
import { startLdapIdpSvc, type LdapIdpSvc } from '../helpers/ldap-idp-svc.js';
import { toolsAndSecretPolicy } from '../helpers/manifests.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'idp-bounds-e2e-secret-key-0123456789';
const ONE_ADDRESS_FLOOD = 5_000;
/** The operator's bound in all for this server: small, so that many addresses reach it quickly. */
const TOTAL_BYTES = 8 * 1024 * 1024;
/** Per pending login in Redis: one key, and bytes (the largest request's interaction and its keys). */
const KEYS_PER_LOGIN = 1;
/** What the flood of many addresses may leave retained in the process after a full collection (docs/idp.md). */
const MAX_RETAINED_GROWTH_MB = 40;

/**
 * Memory the process retains: heap and buffers after a full collection. RSS also counts garbage
 * not yet collected, which follows the collector's timing and whatever ran before in the same
 * process, so a bound on it fails at random on a loaded machine.
 */
function retainedMb(): number {
  collectGarbage();
  const usage = process.memoryUsage();
  return (usage.heapUsed + usage.external) / 1024 / 1024;
}

function authorizationUrl(url: string, stateLength = 16): string {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: 'svc', response_type: 'code', redirect_uri: `${url}/auth/callback`, scope: 'openid',
    state: randomBytes(Math.ceil(stateLength * 0.75)).toString('base64url').slice(0, stateLength),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
  });
  return `${url}/api/idp/auth?${query.toString()}`;
}

/** Runs `work(i)` for i < n, `parallel` at a time. */
async function pool(n: number, parallel: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < n) await work(next++);
  }));
}

interface Reply {
  readonly status: number;
  readonly location: string | null;
}

/**
 * A client whose connections leave from `address` (any of 127.0.0.0/8 on Linux), so that svc
 * sees another peer address; node:http, since undici's fetch does not bind a local address.
 */
function clientAt(address: string): { get: (url: string, headers?: Record<string, string>) => Promise<Reply>; close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
  return {
    get: (url, headers = {}) => new Promise<Reply>((resolve, reject) => {
      const req = http.get(url, { agent, localAddress: address, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location ?? null }));
        res.on('error', reject);
      });
      req.on('error', reject);
    }),
    close: () => agent.destroy(),
  };
}

/** Whether an authorization request was refused by the bound: the provider sends the client its error. */
function refusal(res: Reply, url: string): string | null {
  return new URL(String(res.location), url).searchParams.get('error');
}

describe('e2e: the identity provider\'s trusted proxies', function () {
  cleanUpTempDirs();
  it('refuses to start with a malformed SVC_TRUSTED_PROXIES, naming the entry and why', async function () {
    const connector = fakePasswordConnector({});
    const err = await startPasswordIdpSvc(connector, { secretKey: SECRET_KEY, env: { SVC_TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/33' } }).then((started) => started.server.close(), (e: unknown) => e);
    expect(err).to.be.instanceOf(Error);
    expect((err as Error).message).to.match(/^SVC_TRUSTED_PROXIES: '10\.0\.0\.0\/33' has a prefix length that is not 0-32; /);
  });
});

for (const [backend, via] of [['memory', 'address'], ['redis', 'proxy']] as const) {
  describe(`e2e: anonymous requests cannot grow the identity provider's state without bound, nor shut its logins for everyone (${backend}, flood ${via === 'address' ? 'from another address' : 'through a trusted proxy'})`, function () {
    this.timeout(300_000);
    let redis: RedisPeer | undefined;
    let svc: LdapIdpSvc | undefined;
    let url: string;
    let keys: Redis | undefined;

    before(async function () {
      if (backend === 'redis') {
        redis = await startRedis();
        keys = new Redis(redis.url);
      }
      svc = await startLdapIdpSvc({ secretKey: SECRET_KEY, extensions: ['tools'], policy: toolsAndSecretPolicy('devs', 'admins') }, {
        ...(redis !== undefined ? { redisUrl: redis.url } : {}),
        env: { SVC_IDP_PENDING_BYTES: String(TOTAL_BYTES), ...(via === 'proxy' ? { SVC_TRUSTED_PROXIES: '127.0.0.1' } : {}) },
      });
      url = svc.url;
    });

    after(async function () {
      await svc?.close();
      keys?.disconnect();
      await redis?.stop();
    });

    /** A person logging in through svc's SSO (/auth/login → the provider's form → svc.token), from 127.0.0.1. */
    async function ssoLogIn(): Promise<void> {
      const browser = new FormBrowser();
      const form = await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
      if (!isPage(form)) throw new Error(`expected the password form, got a redirect to ${form.href}`);
      const landed = await browser.submit(form, { username: 'bob', password: 'bob123' }, `${url}/apps`);
      if (isPage(landed)) throw new Error(`login refused during the flood: ${String(landed.status)} ${landed.html.slice(0, 300)}`);
      const info = await (await browser.request(`${url}/api/v1/session/userinfo`)).json() as Record<string, unknown>;
      expect(info).to.deep.include({ loggedIn: true, iss: `${url}/api/idp` });
    }

    const metric = async (bound: string): Promise<number> => {
      const text = await (await fetch(`${url}/metrics`)).text();
      const line = new RegExp(`^svc_idp_pending_refused_total\\{kind="Interaction",bound="${bound}"\\} (\\d+)`, 'm').exec(text);
      return Number(line?.[1] ?? 0);
    };

    it(`refuses only the address that sends ${ONE_ADDRESS_FLOOD} authorization requests; another logs in through SSO during and after it`, async function () {
      const flooder = via === 'address' ? '127.0.0.2' : '198.51.100.7';
      const client = clientAt(via === 'address' ? '127.0.0.2' : '127.0.0.1');
      const headers = via === 'proxy' ? { 'x-forwarded-for': `203.0.113.99, ${flooder}` } : {};
      let refused = 0;
      let firstRefused = -1;
      try {
        const logins = pool(10, 1, ssoLogIn);
        await pool(ONE_ADDRESS_FLOOD, 20, async (i) => {
          const res = await client.get(authorizationUrl(url), headers);
          expect(res.status).to.equal(303);
          const error = refusal(res, url);
          if (error === null) return;
          expect(error).to.equal('temporarily_unavailable');
          refused++;
          if (firstRefused < 0) firstRefused = i;
        });
        await logins;
        await ssoLogIn();
      } finally {
        client.close();
      }
      console.log(`      ${ONE_ADDRESS_FLOOD - refused} admitted, ${refused} refused from ${flooder} (first refusal at request ${firstRefused})`);
      // 2 MiB per source: about 1,300 pending logins of this size (1.6 KiB charged each), then refusals only.
      expect(refused).to.be.within(3_000, ONE_ADDRESS_FLOOD - 500);
      expect(await metric('source')).to.equal(refused);
      expect(svc?.server.logs()).to.match(new RegExp(`"source":"${flooder.replaceAll('.', '\\.')}","bound":"source","heldBytes":\\d+,"limitBytes":2097152`));
      expect(svc?.server.logs()).to.contain(`identity provider: ${flooder} holds `);
    });

    /** The largest authorization request the provider takes, from a state of the right length. */
    const largest = (): string => {
      const base = authorizationUrl(url, 0);
      return authorizationUrl(url, MAX_AUTHORIZATION_REQUEST_BYTES - new URL(base).search.length + 1);
    };

    it('refuses an authorization request over the size bound, and has no pushed authorization requests', async function () {
      const over = `${largest()}x`;
      expect((await fetch(over, { redirect: 'manual' })).status).to.equal(414);
      const discovery = await (await fetch(`${url}/api/idp/.well-known/openid-configuration`)).json() as Record<string, unknown>;
      expect(discovery).to.not.have.property('pushed_authorization_request_endpoint');
      expect((await fetch(`${url}/api/idp/request`, { method: 'POST', body: new URLSearchParams({ client_id: 'svc' }) })).status).to.equal(404);
    });

    it(`holds the largest authorization requests and device page views of 16 addresses within ${TOTAL_BYTES / 1024 / 1024} MiB in all, and says so past it`, async function () {
      expect(new URL(largest()).search.length - 1).to.equal(MAX_AUTHORIZATION_REQUEST_BYTES);
      const clients = Array.from({ length: 16 }, (_, i) => clientAt(`127.0.1.${i + 1}`));
      const retainedBefore = retainedMb();
      const memoryBefore = keys === undefined ? 0 : Number(/used_memory:(\d+)/.exec(await keys.info('memory'))?.[1]);
      const keysBefore = keys === undefined ? 0 : await keys.dbsize();
      let admitted = 0;
      let refused = 0;
      try {
        await pool(16 * 150, 20, async (i) => {
          const client = clients[i % clients.length] as (typeof clients)[number];
          const [auth, device] = await Promise.all([client.get(largest()), client.get(`${url}/api/idp/device`)]);
          expect(auth.status).to.equal(303);
          expect(device.status).to.equal(200);
          if (refusal(auth, url) === null) admitted++;
          else refused++;
        });
      } finally {
        for (const c of clients) c.close();
      }
      const retainedGrowthMb = retainedMb() - retainedBefore;
      expect(refused, 'refused past the bound in all').to.be.above(0);
      expect(await metric('total')).to.equal(refused);
      expect(svc?.server.logs()).to.contain(`"bound":"total"`);
      if (keys !== undefined) {
        const added = (await keys.dbsize()) - keysBefore;
        const bytes = Number(/used_memory:(\d+)/.exec(await keys.info('memory'))?.[1]) - memoryBefore;
        // The admitted interactions and the budget's three keys: nothing per device page view.
        expect(added, 'keys added').to.be.at.most(admitted * KEYS_PER_LOGIN + 10);
        expect(bytes, 'Redis bytes added').to.be.at.most(TOTAL_BYTES * 1.25);
        expect(await keys.keys('svc:idp:Session:*'), 'sessions: only the SSO logins\'').to.have.length.at.most(11);
        console.log(`      redis: ${admitted} admitted, ${refused} refused; ${added} keys, ${(bytes / 1024 / 1024).toFixed(1)} MB added; retained +${retainedGrowthMb.toFixed(0)} MB`);
      } else {
        console.log(`      memory: ${admitted} admitted, ${refused} refused; retained +${retainedGrowthMb.toFixed(0)} MB`);
      }
      expect(retainedGrowthMb, 'retained memory growth (MB)').to.be.at.most(MAX_RETAINED_GROWTH_MB);
    });
  });
}
