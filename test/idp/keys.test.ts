import { expect } from 'chai';
import { importJWK, jwtVerify, SignJWT } from 'jose';
import { pino } from 'pino';
import { openDirStore } from '../../src/config/dir-store.js';
import { SETTINGS_SECRET } from '../../src/config/manifests.js';
import {
  COOKIE_KEYS_KEY, ensureIdpKeys, generateSigningKey, IdpKeysUnreadable, localKeySet, nextSignerChange, parseIdpKeys,
  PUBLISH_BEFORE_SIGNING_S, RETIRED_KEY_GRACE_S, rotatedKeys, rotateSigningKeys, SIGNING_KEYS_KEY, signingOrder,
  type SigningKey,
} from '../../src/idp/keys.js';
import { ID_TOKEN_TTL_S } from '../../src/idp/lifetimes.js';
import { secret, tempConfigDir } from '../helpers/manifests.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const log = pino({ level: 'silent' });
const T0 = new Date('2026-01-01T00:00:00.000Z');
const configDir = () => tempConfigDir({ 'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'k'.repeat(32), 'operator.note': 'keep' }) });

describe('idp/keys', function () {
  cleanUpTempDirs();
  it('generates the keys on first start, keeps the other keys of svc-secret, and reads the same keys back later', async function () {
    const dir = configDir();
    const store = await openDirStore({ dir, log, watch: false });
    const keys = await ensureIdpKeys(store, () => T0);
    expect(keys.signing).to.have.length(1);
    expect(keys.signing[0]).to.include({ createdAt: T0.toISOString() });
    expect(keys.signing[0]?.jwk).to.include({ kty: 'RSA', kid: keys.signing[0]?.kid });
    expect(keys.cookie).to.have.length(1);
    expect(store.current().secrets.get(SETTINGS_SECRET)?.data).to.include({ 'operator.note': 'keep' });
    await store.close();

    const again = await openDirStore({ dir, log, watch: false });
    expect(await ensureIdpKeys(again, () => new Date())).to.deep.equal(keys);
    await again.close();
  });

  it('two replicas starting together on one config end with the same keys', async function () {
    const dir = configDir();
    const stores = await Promise.all([openDirStore({ dir, log, watch: false }), openDirStore({ dir, log, watch: false })]);
    const [a, b] = await Promise.all(stores.map((s) => ensureIdpKeys(s, () => T0)));
    expect(a).to.deep.equal(b);
    await Promise.all(stores.map((s) => s.close()));
  });

  it('refuses a key list it did not write, naming the key and not the value', function () {
    expect(() => parseIdpKeys({ [SIGNING_KEYS_KEY]: 'secret-looking{', [COOKIE_KEYS_KEY]: '["x"]' }))
      .to.throw(IdpKeysUnreadable, 'svc-secret: idp.signingKeys: not JSON; remove the key to have new keys generated');
    expect(parseIdpKeys({})).to.equal(undefined);
  });

  it('rotation: the new key first, signing later; the current one retired as of then; retired keys pruned once their tokens have expired', async function () {
    const k1 = await generateSigningKey(T0);
    const k2 = await generateSigningKey(T0);
    const retiredLongAgo = { ...k1, retiredAt: new Date(T0.getTime() - (ID_TOKEN_TTL_S + RETIRED_KEY_GRACE_S + 1) * 1000).toISOString() };
    const { keys, report } = rotatedKeys([k2, retiredLongAgo], await generateSigningKey(T0), T0);
    expect(keys.map((k) => k.kid)).to.deep.equal([report.added.kid, k2.kid]);
    const handOver = new Date(T0.getTime() + PUBLISH_BEFORE_SIGNING_S * 1000).toISOString();
    expect(keys[0]?.signsFrom).to.equal(handOver);
    expect(keys[1]?.retiredAt).to.equal(handOver);
    expect(report).to.deep.include({ retired: [k2.kid], pruned: [k1.kid], kept: [k2.kid] });

    const recent = { ...k1, retiredAt: T0.toISOString() };
    expect(rotatedKeys([k2, recent], report.added, new Date(T0.getTime() + ID_TOKEN_TTL_S * 1000)).report.pruned).to.deep.equal([]);
  });

  it('the published key signs only from its signsFrom; until then the key it replaces does', async function () {
    const old = await generateSigningKey(T0);
    const { keys } = rotatedKeys([old], await generateSigningKey(T0), T0);
    const added = keys[0] as SigningKey;
    const handOver = T0.getTime() + PUBLISH_BEFORE_SIGNING_S * 1000;
    expect(signingOrder(keys, T0).map((k) => k.kid)).to.deep.equal([old.kid, added.kid]);
    expect(signingOrder(keys, new Date(handOver - 1)).map((k) => k.kid)).to.deep.equal([old.kid, added.kid]);
    expect(signingOrder(keys, new Date(handOver)).map((k) => k.kid)).to.deep.equal([added.kid, old.kid]);
    expect(nextSignerChange(keys, T0)).to.equal(handOver);
    expect(nextSignerChange(keys, new Date(handOver))).to.equal(undefined);
    expect(nextSignerChange([old], T0)).to.equal(undefined);
  });

  it('rotateSigningKeys writes the rotation to svc-secret', async function () {
    const store = await openDirStore({ dir: configDir(), log, watch: false });
    const before = await ensureIdpKeys(store, () => T0);
    const report = await rotateSigningKeys(store, new Date(T0.getTime() + 1000));
    const after = parseIdpKeys(store.current().secrets.get(SETTINGS_SECRET)?.data ?? {});
    expect(after?.signing.map((k) => k.kid)).to.deep.equal([report.added.kid, before.signing[0]?.kid]);
    expect(after?.cookie).to.deep.equal(before.cookie);
    await store.close();
  });

  it('gives the published keys to jwtVerify in process, following a rotation, and refuses another key', async function () {
    const first = await generateSigningKey(T0);
    const second = await generateSigningKey(T0);
    let published: readonly SigningKey[] = [first];
    const keySet = localKeySet(() => published);
    const sign = async (key: SigningKey, kid = key.kid) =>
      new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid }).setSubject('s').setIssuedAt().setExpirationTime('5m')
        .sign(await importJWK({ ...key.jwk, alg: 'RS256' }));
    expect((await jwtVerify(await sign(first), keySet)).payload.sub).to.equal('s');
    const refused = (token: string) => jwtVerify(token, keySet).then(() => 'verified', (err: unknown) => (err as { code?: string }).code);
    expect(await refused(await sign(second))).to.equal('ERR_JWKS_NO_MATCHING_KEY');
    expect(await refused(await sign(second, first.kid))).to.equal('ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
    published = [second, first];
    expect(await refused(await sign(second))).to.equal('verified');
    expect(await refused(await sign(first))).to.equal('verified');
  });
});
