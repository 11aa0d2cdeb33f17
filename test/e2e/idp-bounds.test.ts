/**
 * A bounded flood of anonymous requests at the bundled identity provider, on the memory state
 * and on Redis: authorization requests as large as the provider takes, and views of the device
 * page. The state stays within the bounds docs/idp.md gives (keys and bytes in Redis, RSS of
 * the process), no view of the device page leaves a session, logins during the flood work,
 * and past the bound on pending logins the provider says so (temporarily_unavailable).
 * The connector is a fake PasswordConnector (a double of the Connector contract).
 */
import { createHash, randomBytes } from 'node:crypto';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { MAX_AUTHORIZATION_REQUEST_BYTES, PENDING_INTERACTIONS } from '../../src/idp/request-bounds.js';
import { SECRET_KEY } from '../helpers/accounts-fixture.js';
import { fakePasswordConnector } from '../helpers/fake-password-connector.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { startPasswordIdpSvc } from '../helpers/idp-svc.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import type { TestServer } from '../helpers/server.js';

const ALICE = { userId: 'u-alice', username: 'Alice', preferredUsername: 'alice', email: 'alice@example.com', emailVerified: true, groups: [] };
const FLOOD = 1000;
/** Per pending login in Redis, as docs/idp.md says: keys and bytes. */
const KEYS_PER_LOGIN = 1;
const MAX_BYTES_PER_LOGIN = 8 * 1024;
/** RSS growth allowed for the flood on the memory state (docs/idp.md). */
/** What the flood may leave retained in the process after a full collection (docs/idp.md). */
const MAX_RETAINED_GROWTH_MB = 40;

/**
 * Memory the process retains: heap and buffers after a full collection. RSS also counts garbage
 * not yet collected, which follows the collector's timing and whatever ran before in the same
 * process, so a bound on it fails at random on a loaded machine.
 */
const collect: () => void = (() => {
  v8.setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();
function retainedMb(): number {
  collect();
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

for (const backend of ['memory', 'redis'] as const) {
  describe(`e2e: anonymous requests cannot grow the identity provider's state without bound (${backend})`, function () {
    this.timeout(120_000);
    let redis: RedisPeer | undefined;
    let server: TestServer;
    let url: string;
    let keys: Redis | undefined;

    before(async function () {
      if (backend === 'redis') {
        redis = await startRedis();
        keys = new Redis(redis.url);
      }
      const connector = fakePasswordConnector({ alice: { password: 'alice-pw', identity: ALICE } });
      ({ url, server } = await startPasswordIdpSvc(connector, { secretKey: SECRET_KEY, ...(redis !== undefined ? { redisUrl: redis.url } : {}) }));
    });

    after(async function () {
      await server?.close();
      keys?.disconnect();
      await redis?.stop();
    });

    async function logIn(): Promise<void> {
      const browser = new FormBrowser();
      const form = await browser.go(authorizationUrl(url), `${url}/auth/callback`);
      if (!isPage(form)) throw new Error('expected the password form');
      const done = await browser.submit(form, { username: 'alice', password: 'alice-pw' }, `${url}/auth/callback`);
      if (isPage(done)) throw new Error(`login failed during the flood: ${String(done.status)} ${done.html.slice(0, 200)}`);
      expect(done.searchParams.get('code')).to.be.a('string');
    }

    /** The largest authorization request the provider takes, from a state of the right length. */
    const largest = (): string => {
      const base = authorizationUrl(url, 0);
      return authorizationUrl(url, MAX_AUTHORIZATION_REQUEST_BYTES - new URL(base).search.length + 1);
    };

    it(`holds ${FLOOD} anonymous authorization requests and device page views within the bounds; logins during them work`, async function () {
      expect(new URL(largest()).search.length - 1).to.equal(MAX_AUTHORIZATION_REQUEST_BYTES);
      const retainedBefore = retainedMb();
      const memoryBefore = keys === undefined ? 0 : Number(/used_memory:(\d+)/.exec(await keys.info('memory'))?.[1]);
      const keysBefore = keys === undefined ? 0 : await keys.dbsize();
      const logins = pool(5, 1, logIn);
      await pool(FLOOD, 20, async () => {
        const [auth, device] = await Promise.all([fetch(largest(), { redirect: 'manual' }), fetch(`${url}/api/idp/device`)]);
        expect(auth.status).to.equal(303);
        expect(device.status).to.equal(200);
        await Promise.all([auth.arrayBuffer(), device.arrayBuffer()]);
      });
      await logins;
      const retainedGrowthMb = retainedMb() - retainedBefore;
      if (keys !== undefined) {
        const added = (await keys.dbsize()) - keysBefore;
        const bytes = Number(/used_memory:(\d+)/.exec(await keys.info('memory'))?.[1]) - memoryBefore;
        // The flood's interactions, the logins' records, a few counters: nothing per device page view.
        expect(added, 'keys added').to.be.at.most(FLOOD * KEYS_PER_LOGIN + 100);
        expect(bytes, 'Redis bytes added').to.be.at.most(FLOOD * MAX_BYTES_PER_LOGIN);
        expect(await keys.keys('svc:idp:Session:*'), 'sessions: only the logins\'').to.have.length.at.most(5);
        console.log(`      redis: ${added} keys, ${(bytes / 1024 / 1024).toFixed(1)} MB added; retained +${retainedGrowthMb.toFixed(0)} MB`);
      } else {
        console.log(`      memory: retained +${retainedGrowthMb.toFixed(0)} MB`);
      }
      expect(retainedGrowthMb, 'retained memory growth (MB)').to.be.at.most(MAX_RETAINED_GROWTH_MB);
    });

    it('refuses an authorization request over the size bound, and has no pushed authorization requests', async function () {
      const over = `${largest()}x`;
      expect((await fetch(over, { redirect: 'manual' })).status).to.equal(414);
      const discovery = await (await fetch(`${url}/api/idp/.well-known/openid-configuration`)).json() as Record<string, unknown>;
      expect(discovery).to.not.have.property('pushed_authorization_request_endpoint');
      expect((await fetch(`${url}/api/idp/request`, { method: 'POST', body: new URLSearchParams({ client_id: 'svc' }) })).status).to.equal(404);
    });

    if (backend === 'redis') {
      it(`says temporarily_unavailable past ${PENDING_INTERACTIONS.perClient} pending logins of a client`, async function () {
        let refused: URL | undefined;
        await pool(PENDING_INTERACTIONS.perClient, 20, async () => {
          const res = await fetch(authorizationUrl(url), { redirect: 'manual' });
          await res.arrayBuffer();
          const to = new URL(String(res.headers.get('location')), url);
          if (to.searchParams.get('error') !== null) refused = to;
        });
        expect(refused?.searchParams.get('error')).to.equal('temporarily_unavailable');
        expect(refused?.searchParams.get('error_description')).to.match(/too many logins are pending/);
        expect(await keys?.keys('svc:idp:Interaction:*')).to.have.length.at.most(PENDING_INTERACTIONS.perClient);
      });
    }
  });
}
