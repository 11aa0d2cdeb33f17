/**
 * Svc-Identity-Assertion end to end: a real svc with a local account, the bundled provider over
 * a real slapd, and a GitHub Actions workload issuer (an HTTPS stand-in); a real backend that
 * verifies each assertion with jose against the key set it fetches from svc, as
 * docs/extensions.md shows a backend doing. For each kind of caller the claims match what the
 * plain headers say; a forged or replayed assertion sent by a client never reaches the backend;
 * a WebSocket upgrade carries one too; a second replica on the same store signs with the same
 * keys; after `svc-server idp rotate-keys` the backend verifies assertions of the new key while
 * the old key is still published.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import { rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import bcrypt from 'bcryptjs';
import { createRemoteJWKSet, decodeProtectedHeader, generateKeyPair, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { WebSocket, WebSocketServer } from 'ws';
import YAML from 'yaml';
import { runRotateKeys } from '../../src/commands/idp.js';
import { PUBLISH_BEFORE_SIGNING_S } from '../../src/idp/keys.js';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';
import { login } from '../helpers/accounts-fixture.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { startFakeGithubActions, type FakeGithubActions } from '../helpers/fake-github-actions.js';
import { idpSvcAddress } from '../helpers/idp-svc.js';
import { application, configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { startPeer, freePort, type Peer } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AUDIENCE, exchange, MAIN, MAIN_SUBJECT } from '../helpers/workload-setup.js';
import { closeServer, listen } from '../extensions/helpers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));
const CAROL_PASSWORD = 'carol-local-pass-1';
const JWKS_PATH = '/.well-known/svc/jwks.json';

/** What the backend saw and concluded, as it answers it. */
interface Seen {
  readonly assertions: string[];
  readonly verified?: JWTPayload;
  readonly kid?: string;
  readonly refused?: string;
  readonly username?: string;
  readonly groups?: string;
}

function sink(): Writable & { text: () => string } {
  const chunks: string[] = [];
  return Object.assign(new Writable({ write(c: Buffer, _e, done) { chunks.push(c.toString()); done(); } }), { text: () => chunks.join('') });
}

describe('e2e: Svc-Identity-Assertion, verified by a backend against svc\'s published keys', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let slapd: Peer;
  let github: FakeGithubActions;
  let backend: Server;
  let wss: WebSocketServer;
  let server: TestServer;
  let dir: string;
  let url: string;
  let hits = 0;

  /** The backend's check, as a backend would write it (docs/extensions.md); a short cooldown so a rotated key is fetched at once. */
  async function check(headers: IncomingHttpHeaders, rawHeaders: readonly string[], extension: string): Promise<Seen> {
    const jwks = createRemoteJWKSet(new URL(`${url}${JWKS_PATH}`), { cooldownDuration: 0 });
    const assertions = rawHeaders.filter((_, i) => i % 2 === 1 && rawHeaders[i - 1]?.toLowerCase() === 'svc-identity-assertion');
    const plain = { username: String(headers['svc-username']), groups: String(headers['svc-user-groups'] ?? '') };
    const token = assertions[0];
    if (token === undefined) return { assertions, ...plain };
    try {
      const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer: url, audience: `svc-extension:${extension}`, algorithms: ['ES256'] });
      return { assertions, verified: payload, kid: String(protectedHeader.kid), ...plain };
    } catch (err: unknown) {
      return { assertions, refused: String(err), ...plain };
    }
  }

  before(async function () {
    const ldapPort = await freePort();
    [slapd, github] = await Promise.all([
      startPeer('start-slapd.sh', [String(ldapPort)], { LDAPS: '0', USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') }),
      startFakeGithubActions(),
    ]);
    backend = createServer((req, res) => {
      hits++;
      const extension = String(req.url).split('/')[1] ?? '';
      void check(req.headers, req.rawHeaders, extension).then((seen) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(seen));
      });
    });
    wss = new WebSocketServer({ noServer: true });
    backend.on('upgrade', (req: IncomingMessage, socket, head) => {
      void check(req.headers, req.rawHeaders, 'whoami').then((seen) => wss.handleUpgrade(req, socket, head, (ws) => ws.send(JSON.stringify(seen))));
    });
    const backendUrl = (await listen(backend)).url;
    const at = await idpSvcAddress();
    url = at.url;
    // The backend path names the extension, so the backend knows which audience to expect.
    const extensions = [
      { name: 'whoami', enabled: true, backend: { identityAssertion: true, services: [{ url: `${backendUrl}/whoami` }] } },
      { name: 'plain', enabled: true, backend: { services: [{ url: `${backendUrl}/plain` }] } },
    ];
    const workloads = [{ name: 'github', issuer: github.issuer, rootCA: github.caPem, audiences: [AUDIENCE], claims: { repository_owner: 'my-org' }, groups: ['gh-{{repository_owner}}'] }];
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', {
        url,
        'idp.config': YAML.stringify({ connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldapConnectorConfig(ldapPort) }] }),
        'workload.config': YAML.stringify(workloads),
        'extension.config': YAML.stringify({ extensions }),
        'accounts.carol': 'login',
      }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', {
        'policy.csv': [
          'p, role:users, extensions, *, */whoami, allow',
          'p, role:users, extensions, *, */plain, allow',
          'g, carol, role:users',
          'g, devs, role:users',
          `g, ${MAIN_SUBJECT}, role:users`,
        ].join('\n'),
        'policy.default': '',
      }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'assertion-e2e-secret-key-0123456789', 'ldap.bindPW': 'readerpw', 'accounts.carol.password': bcrypt.hashSync(CAROL_PASSWORD, 4) }),
      'apps.yaml': application('team', 'web', 'payments', { name: 'in-cluster' }),
    });
    server = await startTestServer(dir, { port: at.port });
  });

  after(async function () {
    await server?.close(1000);
    wss?.close();
    if (backend !== undefined) await closeServer(backend);
    await Promise.all([slapd?.stop(), github?.close()]);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function through(path: string, headers: Record<string, string>): Promise<{ status: number; seen: Seen }> {
    const response = await fetch(`${url}/api/v1/extensions/${path}`, { headers });
    const text = await response.text();
    return { status: response.status, seen: response.status === 200 ? (JSON.parse(text) as Seen) : { assertions: [], refused: text } };
  }

  /** The assertion verified, and its claims the same as the plain headers. */
  function expectVerified(seen: Seen, kind: string): JWTPayload {
    expect(seen.refused, 'the backend verified the assertion').to.equal(undefined);
    expect(seen.assertions).to.have.length(1);
    const claims = seen.verified as JWTPayload;
    expect(claims).to.include({ iss: url, aud: 'svc-extension:whoami', sub: seen.username, kind });
    expect(((claims['groups'] as string[]) ?? []).join(',')).to.equal(seen.groups);
    expect(Number(claims.exp) - Number(claims.iat)).to.be.within(1, 60);
    return claims;
  }

  it('publishes the public keys only, each with its kid, without a token', async function () {
    const response = await fetch(`${url}${JWKS_PATH}`);
    expect(response.status).to.equal(200);
    const { keys } = (await response.json()) as { keys: Record<string, unknown>[] };
    expect(keys).to.have.length.at.least(1);
    for (const key of keys) {
      expect(key).to.have.all.keys('kty', 'crv', 'kid', 'x', 'y', 'alg', 'use');
      expect(key).to.include({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    }
  });

  it('a local user: the backend verifies it, and sub and groups are Svc-Username and Svc-User-Groups; application and project when named', async function () {
    const token = await login(url, 'carol', CAROL_PASSWORD);
    const { status, seen } = await through('whoami/x', { authorization: `Bearer ${token}`, 'svc-application-name': 'team/web' });
    expect(status).to.equal(200);
    const claims = expectVerified(seen, 'local');
    expect(claims).to.include({ sub: 'carol', name: 'carol', application: 'team/web', project: 'payments' });
  });

  it('an SSO user of the bundled provider (slapd): sub is the stable id, name the readable one, groups from the directory', async function () {
    const browser = new FormBrowser();
    const form = await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
    if (!isPage(form)) throw new Error(`expected the password form, got a redirect to ${form.href}`);
    expect(await browser.submit(form, { username: 'bob', password: 'bob123' }, `${url}/apps`)).to.be.instanceOf(URL);
    const response = await browser.request(`${url}/api/v1/extensions/whoami/x`);
    expect(response.status).to.equal(200);
    const seen = (await response.json()) as Seen;
    const claims = expectVerified(seen, 'sso');
    expect(claims.sub).to.not.equal('bob');
    expect(claims['name']).to.equal('bob');
    expect((claims['groups'] as string[]).slice().sort()).to.deep.equal(['devs', 'qa']);
  });

  it('a workload: kind workload, sub its workload name', async function () {
    const answer = await exchange(url, await github.token(MAIN, AUDIENCE));
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const { seen } = await through('whoami/x', { authorization: `Bearer ${String(answer.body['access_token'])}` });
    const claims = expectVerified(seen, 'workload');
    expect(claims).to.include({ sub: MAIN_SUBJECT });
    expect(claims['groups']).to.deep.equal(['gh-my-org']);
  });

  it('a forged or replayed assertion sent by a client never reaches the backend', async function () {
    const carol = await login(url, 'carol', CAROL_PASSWORD);
    const captured = (await through('whoami/x', { authorization: `Bearer ${carol}` })).seen.assertions[0] as string;
    const published = ((await (await fetch(`${url}${JWKS_PATH}`)).json()) as { keys: { kid: string }[] }).keys[0]?.kid as string;
    // A real ES256 signature naming svc's kid, made with a key svc does not hold.
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ groups: ['admins'], kind: 'local' }).setProtectedHeader({ alg: 'ES256', kid: published })
      .setIssuer(url).setAudience('svc-extension:whoami').setSubject('admin').setIssuedAt().setExpirationTime('1m').sign(privateKey);

    const job = String((await exchange(url, await github.token(MAIN, AUDIENCE))).body['access_token']);
    for (const [name, value] of [['Svc-Identity-Assertion', forged], ['svc_identity_assertion', captured]] as const) {
      // To an extension that signs: the backend gets svc's assertion for the caller, only.
      const signed = await through('whoami/x', { authorization: `Bearer ${job}`, [name]: value });
      expect(signed.seen.assertions, name).to.have.length(1);
      expect(signed.seen.assertions[0]).to.not.equal(value);
      expect(expectVerified(signed.seen, 'workload').sub).to.equal(MAIN_SUBJECT);
      // To one that does not: nothing.
      const plain = await through('plain/x', { authorization: `Bearer ${job}`, [name]: value });
      expect(plain.status).to.equal(200);
      expect(plain.seen.assertions, name).to.deep.equal([]);
    }
    // Without a token: refused before the backend.
    const before = hits;
    expect((await through('whoami/x', { 'svc-identity-assertion': captured })).status).to.equal(401);
    expect(hits).to.equal(before);
  });

  it('a WebSocket upgrade carries a verified assertion too', async function () {
    const carol = await login(url, 'carol', CAROL_PASSWORD);
    const ws = new WebSocket(`${url.replace('http', 'ws')}/api/v1/extensions/whoami/ws`, { headers: { authorization: `Bearer ${carol}`, 'svc-identity-assertion': 'forged.by.client' } });
    const seen = await new Promise<Seen>((resolve, reject) => {
      ws.once('message', (data) => resolve(JSON.parse(String(data)) as Seen));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`status ${String(res.statusCode)}`)));
      ws.once('error', reject);
    });
    ws.close();
    expect(expectVerified(seen, 'local').sub).to.equal('carol');
  });

  it('a second replica on the same store signs with the same keys: its assertions verify against the first one\'s key set', async function () {
    const replica = await startTestServer(dir, { port: await freePort() });
    try {
      const carol = await login(replica.url, 'carol', CAROL_PASSWORD);
      const response = await fetch(`${replica.url}/api/v1/extensions/whoami/x`, { headers: { authorization: `Bearer ${carol}` } });
      const seen = (await response.json()) as Seen;
      // The backend fetches the key set from `url`, the first replica.
      expect(expectVerified(seen, 'local').sub).to.equal('carol');
      const published = async (base: string) => ((await (await fetch(`${base}${JWKS_PATH}`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
      expect(await published(replica.url)).to.deep.equal(await published(url));
    } finally {
      await replica.close(1000);
    }
  });

  it('after rotate-keys the backend verifies assertions of the new key while the old one is still listed', async function () {
    const carol = await login(url, 'carol', CAROL_PASSWORD);
    const before = await through('whoami/x', { authorization: `Bearer ${carol}` });
    const oldKid = String(before.seen.kid);
    const out = sink();
    // Rotated as of PUBLISH_BEFORE_SIGNING_S ago, so the new key's time to sign has come.
    expect(await runRotateKeys(dir, out, sink(), new Date(Date.now() - PUBLISH_BEFORE_SIGNING_S * 1000))).to.equal(0);
    const newKid = /^added identity assertion key (\S+);/m.exec(out.text())?.[1];
    expect(newKid).to.be.a('string');
    expect(out.text()).to.include(`retired identity assertion key ${oldKid};`);
    let after = before;
    for (let i = 0; i < 50 && after.seen.kid !== newKid; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await through('whoami/x', { authorization: `Bearer ${carol}` });
    }
    expect(after.seen.kid, 'signed with the new key').to.equal(newKid);
    expectVerified(after.seen, 'local');
    const kids = ((await (await fetch(`${url}${JWKS_PATH}`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    expect(kids).to.deep.equal([newKid, oldKid]);
    expect(decodeProtectedHeader(before.seen.assertions[0] as string).kid).to.equal(oldKid);
    // An assertion of the old key, still within its life, verifies against the key set as published now.
    const jwks = createRemoteJWKSet(new URL(`${url}${JWKS_PATH}`));
    expect((await jwtVerify(before.seen.assertions[0] as string, jwks, { issuer: url, audience: 'svc-extension:whoami' })).payload.sub).to.equal('carol');
  });
});
