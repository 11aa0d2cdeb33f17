import { expect } from 'chai';
import { pino } from 'pino';
import { openDirStore } from '../../src/config/dir-store.js';
import { SETTINGS_SECRET } from '../../src/config/manifests.js';
import {
  ASSERTION_KEYS_KEY, ASSERTION_TTL_S, assertionKeysIn, AssertionKeysUnavailable, ensureAssertionKeys, parseAssertionKeys, publicAssertionJwks, rotateAssertionKeys,
} from '../../src/extensions/assertion-keys.js';
import { PUBLISH_BEFORE_SIGNING_S, RETIRED_KEY_GRACE_S } from '../../src/idp/keys.js';
import { secret, tempConfigDir } from '../helpers/manifests.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const log = pino({ level: 'silent' });
const T0 = new Date('2026-01-01T00:00:00.000Z');
const configDir = () => tempConfigDir({ 'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'k'.repeat(32), 'operator.note': 'keep' }) });

describe('extensions/assertion-keys', function () {
  cleanUpTempDirs();
  it('makes a P-256 key on first start under assertion.signingKeys, keeps the other keys, and reads the same key back later', async () => {
    const dir = configDir();
    const store = await openDirStore({ dir, log, watch: false });
    const [key, ...rest] = await ensureAssertionKeys(store, () => T0);
    expect(rest).to.deep.equal([]);
    expect(key?.jwk).to.include({ kty: 'EC', crv: 'P-256', kid: key?.kid });
    const data = store.current().secrets.get(SETTINGS_SECRET)?.data ?? {};
    expect(data).to.include({ 'operator.note': 'keep' });
    expect(Object.keys(data)).to.include(ASSERTION_KEYS_KEY);
    await store.close();
    const again = await openDirStore({ dir, log, watch: false });
    expect((await ensureAssertionKeys(again, () => new Date()))[0]?.kid).to.equal(key?.kid);
    await again.close();
  });

  it('replicas starting together on one store end with the same key, whichever wrote first', async () => {
    const dir = configDir();
    const stores = await Promise.all([0, 1, 2].map(() => openDirStore({ dir, log, watch: false })));
    const kids = (await Promise.all(stores.map((store) => ensureAssertionKeys(store, () => T0)))).map((keys) => keys.map((k) => k.kid));
    expect(kids[0]).to.have.length(1);
    expect(kids[1]).to.deep.equal(kids[0]);
    expect(kids[2]).to.deep.equal(kids[0]);
    await Promise.all(stores.map((store) => store.close()));
  });

  it('publishes the public half only, with kid, alg and use', async () => {
    const store = await openDirStore({ dir: configDir(), log, watch: false });
    const keys = await ensureAssertionKeys(store, () => T0);
    const [published] = publicAssertionJwks(keys).keys;
    expect(published).to.have.all.keys('kty', 'crv', 'kid', 'x', 'y', 'alg', 'use');
    expect(published).to.include({ kty: 'EC', crv: 'P-256', kid: keys[0]?.kid, alg: 'ES256', use: 'sig' });
    await store.close();
  });

  it('rotates with overlap: the new key published at once and signing later, the old one kept until its assertions expired, then pruned', async () => {
    const store = await openDirStore({ dir: configDir(), log, watch: false });
    const [first] = await ensureAssertionKeys(store, () => T0);
    const report = await rotateAssertionKeys(store, T0);
    expect(report.retired).to.deep.equal([first?.kid]);
    expect(report.added.signsFrom).to.equal(new Date(T0.getTime() + PUBLISH_BEFORE_SIGNING_S * 1000).toISOString());
    const keys = assertionKeysIn(store)();
    expect(keys.map((k) => k.kid)).to.deep.equal([report.added.kid, first?.kid]);
    expect(keys[1]?.retiredAt).to.equal(report.added.signsFrom);
    // The old key stopped signing at signsFrom; its last assertion expires ASSERTION_TTL_S later, plus the grace.
    const late = new Date(Date.parse(String(report.added.signsFrom)) + (ASSERTION_TTL_S + RETIRED_KEY_GRACE_S) * 1000 + 1000);
    const second = await rotateAssertionKeys(store, late);
    expect(second.pruned).to.deep.equal([first?.kid]);
    expect(assertionKeysIn(store)().map((k) => k.kid)).to.deep.equal([second.added.kid, report.added.kid]);
    await store.close();
  });

  it('refuses a value svc did not write, naming the key and never quoting the value', () => {
    expect(() => parseAssertionKeys('{not json')).to.throw(AssertionKeysUnavailable, `svc-secret: ${ASSERTION_KEYS_KEY}: not JSON; remove the key to have new keys generated`);
    let refused: unknown;
    try {
      parseAssertionKeys(JSON.stringify([{ kid: 'k', createdAt: T0.toISOString(), jwk: { kty: 'RSA', kid: 'k', x: 'a', y: 'b', d: 'SECRET-D' } }]));
    } catch (err: unknown) {
      refused = err;
    }
    expect(refused).to.be.instanceOf(AssertionKeysUnavailable);
    expect(String((refused as Error).message)).to.match(/^svc-secret: assertion\.signingKeys: not a key list svc wrote \(.*\); remove the key to have new keys generated$/);
    expect(String((refused as Error).message)).to.not.include('SECRET-D');
  });

  it('answers unavailable when svc-secret holds no keys (nothing is signed, so nothing is forwarded)', async () => {
    const store = await openDirStore({ dir: configDir(), log, watch: false });
    expect(() => assertionKeysIn(store)()).to.throw(AssertionKeysUnavailable, `svc-secret has no ${ASSERTION_KEYS_KEY}`);
    await store.close();
  });
});
