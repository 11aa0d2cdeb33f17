/**
 * The identity provider's password form is throttled like svc's own login, across replicas:
 * two svc processes on one Redis, a real slapd that records every bind in its accesslog
 * (start-slapd.sh ACCESSLOG=1), and 50 wrong passwords for one user posted at once, half to
 * each replica, each from its own login page. At most SVC_SESSION_FAILURE_MAX_FAIL_COUNT of
 * them may reach the directory as a bind of that user; the rest are refused with a page that
 * says when to try again, and while the lockout lasts the right password is refused too.
 *
 * The replicas are called at their own addresses (the issuer is the configured `url`, which
 * nothing here serves): the authorization request is written by hand, as a relying party of
 * `url` would send it, and a login that passes the form ends at the redirect to the issuer.
 */
import { createHash, randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { Client } from 'ldapts';
import YAML from 'yaml';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort, startPeer, startRedis, type Peer, type RedisPeer } from '../helpers/peers.js';
import { startReplica, stopReplica, type Replica } from '../helpers/replica-process.js';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));
const SECRET_KEY = 'idp-ldap-throttle-e2e-secret-key-0123456789';
const MAX_FAIL_COUNT = 5;
const URL_OF_SVC = 'http://svc.test.invalid';
const REDIRECT_URI = `${URL_OF_SVC}/auth/callback`;

describe('e2e: the identity provider\'s password form is throttled across replicas (real slapd, Redis)', function () {
  cleanUpTempDirs();
  this.timeout(120_000);
  let slapd: Peer;
  let ldapPort: number;
  let redis: RedisPeer;
  let replicas: [Replica, Replica];
  let dir: string;

  before(async function () {
    ldapPort = await freePort();
    slapd = await startPeer('start-slapd.sh', [String(ldapPort), '0'], { LDAPS: '0', ACCESSLOG: '1', USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
    redis = await startRedis();
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url: URL_OF_SVC, 'idp.config': YAML.stringify({ connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldapConnectorConfig(ldapPort) }] }) }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY, 'ldap.bindPW': 'readerpw' }),
    });
    const env = { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: String(MAX_FAIL_COUNT), SVC_SESSION_FAILURE_WINDOW_SECONDS: '300' };
    const [a, b] = await Promise.all([startReplica(dir, redis.url, env), startReplica(dir, redis.url, env)]);
    replicas = [a, b];
  });

  after(async function () {
    await Promise.all([stopReplica(replicas?.[0]), stopReplica(replicas?.[1])]);
    await redis?.stop();
    await slapd?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  /** The binds of `dn` the directory has seen (its accesslog). */
  async function bindsOf(dn: string): Promise<number> {
    const ldap = new Client({ url: `ldap://127.0.0.1:${ldapPort}` });
    try {
      await ldap.bind('cn=admin,cn=accesslog', 'adminpw');
      const { searchEntries } = await ldap.search('cn=accesslog', { filter: `(&(objectClass=auditBind)(reqDN=${dn}))`, attributes: ['reqResult'] });
      return searchEntries.length;
    } finally {
      await ldap.unbind();
    }
  }

  /** A new browser at the password form of `replica`. */
  async function formAt(replica: Replica): Promise<{ browser: FormBrowser; form: Page }> {
    const verifier = randomBytes(32).toString('base64url');
    const query = new URLSearchParams({
      client_id: 'svc', response_type: 'code', redirect_uri: REDIRECT_URI, scope: 'openid', state: randomBytes(8).toString('hex'),
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    });
    const browser = new FormBrowser();
    const form = await browser.go(`${replica.url}/api/idp/auth?${query.toString()}`, REDIRECT_URI);
    if (!isPage(form) || !form.html.includes('name="password"')) throw new Error(`expected the password form, got ${isPage(form) ? form.html.slice(0, 300) : form.href}`);
    return { browser, form };
  }

  it(`lets at most ${MAX_FAIL_COUNT} of 50 parallel wrong passwords on two replicas reach the directory, then says when to try again`, async function () {
    const bob = 'uid=bob,ou=people,dc=example,dc=org';
    const before = await bindsOf(bob);
    const forms = await Promise.all(Array.from({ length: 50 }, (_, i) => formAt(replicas[i % 2] as Replica)));
    const answers = await Promise.all(forms.map(({ browser, form }) => browser.submit(form, { username: 'bob', password: 'not-bobs' }, REDIRECT_URI)));
    const pages = answers.filter(isPage);
    expect(pages).to.have.lengthOf(50);
    const binds = (await bindsOf(bob)) - before;
    expect(binds, 'binds of bob reaching slapd').to.be.at.most(MAX_FAIL_COUNT).and.above(0);
    expect(pages.filter((p) => p.status === 401).length, 'wrong-password answers').to.equal(binds);
    const locked = pages.filter((p) => p.status === 429);
    expect(locked).to.have.lengthOf(50 - binds);
    expect(locked[0]?.html).to.match(/Too many failed logins for this user\. Try again in [1-5] minutes \(at \d\d:\d\d UTC\)/);

    // Locked: the right password is refused too, without a bind.
    const { browser, form } = await formAt(replicas[1]);
    const right = await browser.submit(form, { username: 'bob', password: 'bob123' }, REDIRECT_URI);
    expect(isPage(right) && right.status).to.equal(429);
    expect(await bindsOf(bob)).to.equal(before + binds);

    // Another user is not affected: past the form, the provider resumes the authorization at
    // the issuer (`url`, which nothing here serves).
    const other = await formAt(replicas[0]);
    const alice = await other.browser.submit(other.form, { username: 'alice', password: 'alice123' }, `${URL_OF_SVC}/api/idp/auth/`);
    expect(alice, 'alice logs in').to.be.instanceOf(URL);
  });

  it('gives every spelling the directory matches one budget: once carol is locked, Carol, CAROL, " carol", "carol " are refused and CaRoL with the right password does not log in', async function () {
    const carol = 'uid=carol,ou=people,dc=example,dc=org';
    const before = await bindsOf(carol);
    for (let i = 0; i < MAX_FAIL_COUNT; i++) {
      const { browser, form } = await formAt(replicas[i % 2] as Replica);
      const page = await browser.submit(form, { username: 'carol', password: `not-carols-${i}` }, REDIRECT_URI);
      expect(isPage(page) && page.status, `wrong password ${i + 1}`).to.equal(401);
    }
    for (const [i, spelling] of ['Carol', 'CAROL', ' carol', 'carol ', 'cArOl'].entries()) {
      const { browser, form } = await formAt(replicas[i % 2] as Replica);
      const page = await browser.submit(form, { username: spelling, password: `still-not-carols-${i}` }, REDIRECT_URI);
      expect(isPage(page) && page.status, JSON.stringify(spelling)).to.equal(429);
    }
    const { browser, form } = await formAt(replicas[1]);
    const right = await browser.submit(form, { username: 'CaRoL', password: 'carol123' }, REDIRECT_URI);
    expect(right, 'the right password in another case does not log in').to.not.be.instanceOf(URL);
    expect(isPage(right) && right.status).to.equal(429);
    expect((await bindsOf(carol)) - before, 'binds of carol reaching slapd').to.equal(MAX_FAIL_COUNT);
  });
});
