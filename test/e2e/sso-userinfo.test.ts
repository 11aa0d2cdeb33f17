/**
 * enableUserInfoGroups against a real provider, with the cache on memory and on Redis: groups
 * read at login, kept until userInfoCacheExpiration, read again after, none (not a failure)
 * once the cache expired while the endpoint is down; in Redis the cached value is sealed.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { setupSso, ssoLogin, userInfo, type SsoSetup } from '../helpers/sso-setup.js';
import { makeTestCa, type TestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

for (const backend of ['memory', 'redis'] as const) {
  describe(`e2e: SSO groups from userinfo, cached on ${backend}`, function () {
    cleanUpTempDirs();
    this.timeout(30_000);
    let ca: TestCa;
    let redis: RedisPeer | undefined;
    let setup: SsoSetup | undefined;

    before(async () => {
      ca = makeTestCa();
      if (backend === 'redis') redis = await startRedis();
    });
    afterEach(async () => setup?.close());
    after(async () => redis?.stop());

    it('reads groups at login, keeps them until the cache expires, then reads again, and gives none while the endpoint is down', async () => {
      setup = await setupSso({
        ca,
        oidc: { enableUserInfoGroups: true, userInfoPath: '/me', userInfoCacheExpiration: '2s' },
        ...(redis !== undefined ? { redisUrl: redis.url } : {}),
      });
      const provider = setup.provider;
      provider.accounts.set('alice', { groups: ['in-token'], userInfoGroups: ['from-userinfo-1'] });
      const { token } = await ssoLogin(setup, 'alice');
      const groups = async () => (await userInfo((setup as SsoSetup).svc.url, token))['groups'];
      expect(await groups()).to.deep.equal(['in-token', 'from-userinfo-1']);

      if (redis !== undefined) {
        const raw = new Redis(redis.url);
        const keys = await raw.keys('svc:sso:userinfo:*');
        expect(keys).to.have.length(1);
        const stored = (await raw.get(keys[0] as string)) ?? '';
        expect(stored).to.not.include('from-userinfo');
        expect(() => JSON.parse(stored) as unknown).to.throw();
        raw.disconnect();
      }

      provider.accounts.set('alice', { groups: ['in-token'], userInfoGroups: ['from-userinfo-2'] });
      expect(await groups()).to.deep.equal(['in-token', 'from-userinfo-1']);
      await sleep(2_200);
      expect(await groups()).to.deep.equal(['in-token', 'from-userinfo-2']);

      provider.userInfoDown = true;
      expect(await groups()).to.deep.equal(['in-token', 'from-userinfo-2']);
      await sleep(2_200);
      expect(await groups()).to.deep.equal(['in-token']);
      expect(setup.svc.logs()).to.include('userinfo groups cannot be read');
    });
  });
}
