/**
 * idp.keyRotation on two svc servers sharing one Redis and one config dir, with a clock the
 * test moves (ServerOptions.now) and checks every 100 ms: each period one new key, whichever
 * replica gets there first; a token signed by the old key verifies on both replicas throughout
 * the overlap; both publish old and new; `0`, applied live, stops rotation.
 */
import { expect } from 'chai';
import { importJWK, SignJWT } from 'jose';
import { generateKeyPairSync } from 'node:crypto';
import YAML from 'yaml';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SETTINGS_SECRET } from '../../src/config/manifests.js';
import { parseIdpKeys, type SigningKey } from '../../src/idp/keys.js';
import { waitFor } from '../helpers/accounts-fixture.js';
import { fakePasswordConnector, singleConnector } from '../helpers/fake-password-connector.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const HOUR = 3_600_000;
const PLACEHOLDER = [{ type: 'ldap', id: 'directory', name: 'Directory', config: { host: 'ldap.invalid', userSearch: { baseDN: 'ou=people', username: 'uid', idAttr: 'uid' } } }];

describe('e2e: idp.keyRotation on two replicas sharing Redis', function () {
  cleanUpTempDirs();
  this.timeout(90_000);
  let redis: RedisPeer;
  let servers: TestServer[] = [];
  let dir: string;
  let url: string;
  const clock = { now: Date.now() };

  const svcCm = (rotation: string) => configMap('svc-cm', { url, 'idp.config': YAML.stringify({ connectors: PLACEHOLDER }), 'idp.keyRotation': rotation });
  const keysIn = (server: TestServer): readonly SigningKey[] => parseIdpKeys(server.services.store.current().secrets.get(SETTINGS_SECRET)?.data ?? {})?.signing ?? [];
  const stored = (): readonly SigningKey[] => keysIn(servers[0] as TestServer);

  /** The kids a replica's JWKS endpoint publishes. */
  async function published(server: TestServer): Promise<string[]> {
    const discovery = (await (await fetch(`${server.url}/api/idp/.well-known/openid-configuration`)).json()) as { jwks_uri: string };
    const jwks = (await (await fetch(`${server.url}${new URL(discovery.jwks_uri).pathname}`)).json()) as { keys: { kid: string }[] };
    return jwks.keys.map((k) => k.kid).sort();
  }

  /** An ID token as the provider signs one, with `key`; verified by svc's API as the bundled provider's. */
  async function idToken(jwk: Record<string, unknown>, kid: string): Promise<string> {
    return new SignJWT({ groups: [] })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(`${url}/api/idp`).setAudience('svc').setSubject('alice')
      // 24 h, the provider's ID token lifetime: the test's clock moves two periods on.
      .setIssuedAt().setExpirationTime('24h')
      .sign(await importJWK(jwk, 'RS256'));
  }

  /** Who svc's API takes the bearer of `token` for: `alice` when it verifies, `anonymous` when not. */
  async function whoIs(server: TestServer, token: string): Promise<string> {
    const body = (await (await fetch(`${server.url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${token}` } })).json()) as { loggedIn: boolean; username?: string };
    return body.loggedIn ? String(body.username) : 'anonymous';
  }

  async function rotationsCounted(): Promise<number> {
    let total = 0;
    for (const s of servers) total += (await s.services.metrics.registry.getSingleMetric('svc_idp_key_rotations_total')?.get())?.values[0]?.value ?? 0;
    return total;
  }

  /** Waits long enough for each replica to have checked several times (100 ms apart). */
  const severalChecks = () => new Promise((r) => setTimeout(r, 600));

  before(async function () {
    redis = await startRedis();
    const ports = [await freePort(), await freePort()];
    url = `http://127.0.0.1:${String(ports[0])}`;
    dir = tempConfigDir({
      'svc-cm.yaml': svcCm('1h'),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'key-rotation-e2e-secret-key-0123456789' }),
    });
    const connector = fakePasswordConnector({});
    for (const port of ports) {
      servers.push(await startTestServer(dir, { port, redisUrl: redis.url, now: () => clock.now, idp: { connectors: () => singleConnector('directory', connector), keyRotationCheckMs: 100 } }));
    }
  });

  after(async function () {
    await Promise.all(servers.map((s) => s.close(500)));
    servers = [];
    await redis?.stop();
  });

  it('rotates once per period across both replicas; a token of the old key verifies on both during the overlap', async function () {
    const [a, b] = servers as [TestServer, TestServer];
    expect(stored()).to.have.length(1);
    const first = stored()[0] as SigningKey;
    const oldToken = await idToken(first.jwk, first.kid);
    // The check that the test can fail: a key no replica publishes is refused.
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
    expect(await whoIs(a, await idToken(stranger, 'stranger'))).to.equal('anonymous');
    for (const s of [a, b]) expect(await whoIs(s, oldToken), 'before rotation').to.equal('alice');

    await severalChecks();
    expect(stored(), 'not due yet').to.have.length(1);

    for (let period = 1; period <= 2; period++) {
      clock.now += HOUR + 1000;
      await waitFor(() => stored().length === period + 1, `rotation ${period}`, 10_000);
      await severalChecks();
      expect(stored(), `exactly one rotation in period ${period}`).to.have.length(period + 1);
      const kids = stored().map((k) => k.kid).sort();
      for (const s of [a, b]) {
        await waitFor(() => keysIn(s).length === period + 1, 'the replica sees the rotation', 10_000);
        expect(await published(s), 'old and new keys published').to.deep.equal(kids);
        expect(await whoIs(s, oldToken), `the old key's token after rotation ${period}`).to.equal('alice');
      }
    }
    expect(await rotationsCounted()).to.equal(2);
    expect(stored()[2]?.kid).to.equal(first.kid);
    expect(stored()[2]?.retiredAt).to.be.a('string');
  });

  it('idp.keyRotation 0, applied live, never rotates', async function () {
    writeFileSync(join(dir, 'svc-cm.yaml'), svcCm('0'));
    await waitFor(() => servers.every((s) => s.services.settings.current().idpKeyRotationMs === 0), 'idp.keyRotation 0 applied', 10_000);
    const before = stored().map((k) => k.kid);
    clock.now += 365 * 24 * HOUR;
    await severalChecks();
    expect(stored().map((k) => k.kid)).to.deep.equal(before);
  });
});
