/**
 * What an operator reads when logins fail (issue 23, items 7 and 11): the bundled identity
 * provider with a real LDAP connector against a real slapd, svc's own login, and the provider's
 * token endpoint. Each failed login is one info line with the reason, the connector, the
 * username and the request id; a directory that is down is one error line (the attempt's, with
 * the connector's reason and the address), no stack above debug; a refused token request names the client
 * and the error; and svc_login_outcomes_total counts each outcome by method, connector and reason.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import * as client from 'openid-client';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { idpConfigDir, toolsAndSecretPolicy } from '../helpers/manifests.js';
import { freePort, startPeer, type Peer } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));
const SECRET_KEY = 'login-log-e2e-secret-key-0123456789';

type Line = Record<string, unknown> & { level: number; msg: string };

describe('e2e: the log lines and counters of failed logins', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let slapd: Peer;
  let ldapPort: number;
  let backend: Backend;
  let server: TestServer;
  let dir: string;
  let url: string;
  let rp: client.Configuration;

  before(async function () {
    ldapPort = await freePort();
    slapd = await startPeer('start-slapd.sh', [String(ldapPort)], { LDAPS: '0', USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
    backend = await echoBackend('tools');
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    dir = idpConfigDir({
      url, connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldapConnectorConfig(ldapPort) }], extensions: ['tools'], backendUrl: backend.url,
      policy: toolsAndSecretPolicy('devs', 'admins'), secrets: { 'server.secretkey': SECRET_KEY, 'ldap.bindPW': 'readerpw' },
    });
    server = await startTestServer(dir, { port });
    rp = await svcWebClient(url, SECRET_KEY);
  });

  after(async function () {
    await server?.close(1000);
    await backend?.close();
    await slapd?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const lines = (): Line[] => server.logs().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line);
  const linesWith = (msg: string): Line[] => lines().filter((l) => l.msg === msg);

  async function formLogin(username: string, password: string) {
    const redirectUri = `${url}/auth/callback`;
    const { href, verifier, state } = await authorizationRequest(rp, redirectUri, 'openid profile');
    const browser = new FormBrowser();
    const form = await browser.go(href, redirectUri);
    if (!isPage(form)) throw new Error('expected the password form');
    return { done: await browser.submit(form, { username, password }, redirectUri), verifier, state };
  }

  async function outcomes(): Promise<string[]> {
    const text = await (await fetch(`${url}/metrics`)).text();
    return text.split('\n').filter((l) => l.startsWith('svc_login_outcomes_total{'));
  }

  it('logs an unknown user and a wrong password at the directory apart, once each, at info', async function () {
    await formLogin('nobody', 'x');
    await formLogin('bob', 'wrong');
    const failed = linesWith('identity provider: password login failed');
    expect(failed.map((l) => [l.level, l['connector'], l['username'], l['reason']])).to.deep.equal([
      [30, 'corp', 'nobody', 'unknown user'],
      [30, 'corp', 'bob', 'wrong password'],
    ]);
    for (const line of failed) expect(line['requestId']).to.be.a('string').and.not.equal('');
    expect(await outcomes()).to.include.members([
      'svc_login_outcomes_total{method="idp-password",connector="corp",reason="unknown-user"} 1',
      'svc_login_outcomes_total{method="idp-password",connector="corp",reason="wrong-password"} 1',
    ]);
  });

  it('logs a refused code exchange with the client and the reason, and counts a good login', async function () {
    const { done, state } = await formLogin('bob', 'bob123');
    if (isPage(done)) throw new Error('expected the redirect with the code');
    const refused = await client.authorizationCodeGrant(rp, done, { pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: state }).catch((e: unknown) => e);
    expect(refused).to.have.property('error', 'invalid_grant');
    const [line] = lines().filter((l) => l.msg.startsWith('identity provider: token request refused'));
    expect(line).to.deep.include({ level: 30, client: 'svc', error: 'invalid_grant' });
    expect(line?.msg).to.match(/^identity provider: token request refused: invalid_grant \(.+\)$/);
    expect(line?.['requestId']).to.be.a('string').and.not.equal('');
    expect(await outcomes()).to.include('svc_login_outcomes_total{method="idp-password",connector="corp",reason="ok"} 1');
  });

  it('logs a token request with a wrong client secret with the client and invalid_client', async function () {
    const res = await fetch(`${url}/api/idp/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from('svc:not-the-secret').toString('base64')}`, 'x-request-id': 'req-token-1' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: `${url}/auth/callback` }).toString(),
    });
    expect(res.status).to.equal(401);
    const [line] = lines().filter((l) => l['requestId'] === 'req-token-1' && l.msg.startsWith('identity provider: token request refused'));
    expect(line).to.deep.include({ level: 30, client: 'svc', error: 'invalid_client' });
    expect(JSON.stringify(line)).not.to.include('not-the-secret');
  });

  it('gives the local login line the request id and the client address, and counts it', async function () {
    const res = await fetch(`${url}/api/v1/session`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'req-local-login-1' }, body: JSON.stringify({ username: 'nobody-here', password: 'x' }),
    });
    expect(res.status).to.equal(401);
    expect(linesWith('login failed').map((l) => [l.level, l['username'], l['reason'], l['requestId'], l['client']])).to.deep.equal([
      [30, 'nobody-here', 'no such account', 'req-local-login-1', '127.0.0.1'],
    ]);
    expect(await outcomes()).to.include('svc_login_outcomes_total{method="local",connector="",reason="unknown-user"} 1');
  });

  it('logs a directory that is down as one error line without a stack, the stack at debug only', async function () {
    await slapd.stop();
    const before = lines().length;
    const { done } = await formLogin('bob', 'bob123');
    expect(isPage(done) && done.status).to.equal(503);
    const added = lines().slice(before).filter((l) => l['requestId'] === undefined || !String(l.msg).startsWith('request'));
    const loud = added.filter((l) => l.level >= 30);
    expect(loud.map((l) => [l.level, l.msg, l['connector'], l['username'], l['reason']])).to.deep.equal([
      [50, 'identity provider: password login failed', 'corp', 'bob', `directory unreachable: ECONNREFUSED 127.0.0.1:${ldapPort}`],
    ]);
    expect(loud[0]?.['requestId']).to.be.a('string').and.not.equal('');
    expect(JSON.stringify(loud[0])).not.to.match(/"stack"|\\n\s+at /);
    expect(added.filter((l) => l.level === 20 && JSON.stringify(l).includes('"stack"'))).to.have.length.greaterThan(0);
    expect(await outcomes()).to.include('svc_login_outcomes_total{method="idp-password",connector="corp",reason="unavailable"} 1');
  });
});
