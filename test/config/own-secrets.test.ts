/**
 * What svc keeps for itself (src/config/own-secrets.ts): configuration never reads it, and a key
 * svc starts writing is owned from its first write, because every write svc makes to svc-secret
 * refuses a key outside the owned prefixes, and no write to svc-secret in src/ skips that check.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { ensureInitialConfig } from '../../src/config/bootstrap.js';
import { openDirStore } from '../../src/config/dir-store.js';
import { INITIAL_ADMIN_SECRET, SETTINGS_SECRET } from '../../src/config/manifests.js';
import { assertOwnKeys, ownedBySvc, ownKeysOnly, UnownedSecretKey } from '../../src/config/own-secrets.js';
import { ensureAssertionKeys, rotateAssertionKeys } from '../../src/extensions/assertion-keys.js';
import { ensureIdpKeys, rotateSigningKeys } from '../../src/idp/keys.js';
import { ROOT } from '../helpers/run.js';
import { tempDirEach } from '../helpers/temp-dir.js';

const NOT_OWNED = "svc would write key 'oidc.clientSecret' of Secret svc-secret, which is not among the keys it owns (server., admin., accounts., idp., mfa., ssotokens., assertion.); list it in own-secrets.ts";

/** Every .ts file below `dir`. */
async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => join(e.parentPath, e.name));
}

describe('config/own-secrets', () => {
  let root: string;
  tempDirEach('svc-own-secrets-', (made) => (root = made));

  it('owns svc-secret keys by prefix and svc-initial-admin-secret whole, nothing of another Secret', () => {
    expect(ownedBySvc(SETTINGS_SECRET, 'server.secretkey')).to.equal("svc-secret's server.* keys hold svc's session and API token signing key");
    expect(ownedBySvc(INITIAL_ADMIN_SECRET, 'anything')).to.equal('svc-initial-admin-secret holds the initial admin password');
    expect(ownedBySvc(SETTINGS_SECRET, 'ssotokens.0123abcd')).to.equal("svc-secret's ssotokens.* keys hold SSO users' personal API token records, with the identity their connector rechecks");
    expect(ownedBySvc(SETTINGS_SECRET, 'oidc.clientSecret')).to.equal(undefined);
    expect(ownedBySvc(SETTINGS_SECRET, 'serverless.token')).to.equal(undefined);
    expect(ownedBySvc('corp-sso', 'server.secretkey'), 'an operator Secret names its keys as it likes').to.equal(undefined);
  });

  it('lets a write of owned keys through and refuses one that sets or deletes any other key', () => {
    const owned = ownKeysOnly(() => ({ set: { 'idp.signingKeys': '[]', 'accounts.bob.tokens': '[]' }, delete: ['admin.passwordMtime'] }));
    expect(owned({})).to.deep.equal({ set: { 'idp.signingKeys': '[]', 'accounts.bob.tokens': '[]' }, delete: ['admin.passwordMtime'] });
    expect(() => ownKeysOnly(() => ({ set: { 'server.secretkey': 'k', 'oidc.clientSecret': 'x' } }))({})).to.throw(UnownedSecretKey, NOT_OWNED);
    expect(() => ownKeysOnly(() => ({ delete: ['oidc.clientSecret'] }))({})).to.throw(UnownedSecretKey, NOT_OWNED);
    expect(() => assertOwnKeys(['admin.password', 'oidc.clientSecret'])).to.throw(UnownedSecretKey, NOT_OWNED);
  });

  it('leaves only owned keys in svc-secret after a first start, the provider and assertion keys and their rotations', async () => {
    const log = pino({ level: 'silent' });
    await ensureInitialConfig({ dir: root, log });
    const store = await openDirStore({ dir: root, log, watch: false });
    try {
      await ensureIdpKeys(store, () => new Date());
      await rotateSigningKeys(store, new Date());
      await ensureAssertionKeys(store, () => new Date());
      await rotateAssertionKeys(store, new Date());
      const keys = Object.keys(store.current().secrets.get(SETTINGS_SECRET)?.data ?? {});
      expect(keys).to.include.members(['server.secretkey', 'admin.password', 'idp.signingKeys', 'idp.cookieKeys', 'assertion.signingKeys']);
      expect(keys.filter((key) => ownedBySvc(SETTINGS_SECRET, key) === undefined)).to.deep.equal([]);
    } finally {
      await store.close();
    }
  });

  it('finds no write to svc-secret in src/ that skips ownKeysOnly', async () => {
    // A call naming svc-secret, and the text up to its mutation: `ownKeysOnly(` must be there.
    const call = /\b(?:updateSecret|updateSecretOnDisk)\(\s*(?:\{[^}]*?name:\s*)?(?:SETTINGS_SECRET|'svc-secret')[\s\S]{0,80}/g;
    const bypassing: string[] = [];
    let calls = 0;
    for (const file of await sources(join(ROOT, 'src'))) {
      const text = await readFile(file, 'utf8');
      for (const match of text.matchAll(call)) {
        calls++;
        if (!match[0].includes('ownKeysOnly(')) bypassing.push(`${file.slice(ROOT.length + 1)}: ${match[0].split('\n')[0]}`);
      }
    }
    expect(calls, 'the writers of svc-secret are found at all').to.be.at.least(6);
    expect(bypassing).to.deep.equal([]);
  });
});
