/**
 * The bundled provider's logins and token grants in the audit trail: a password login through
 * a connector (method idp-password, the connector, why it failed), a token issued to a client
 * (client id, grant) and one refused.
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import type { AuditEvent } from '../../src/audit/trail.js';
import { webClientSecret } from '../../src/idp/clients.js';
import { authorizationRequest } from '../helpers/authorization.js';
import { collectAudit } from '../helpers/audit.js';
import { validAuditEvent } from '../helpers/audit-schema.js';
import { fakePasswordConnector } from '../helpers/fake-password-connector.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { startPasswordIdpSvc } from '../helpers/idp-svc.js';
import type { TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'token-audit-test-secret-key-0123456789abcdef';
const ALICE = { userId: 'u-alice', username: 'Alice Example', preferredUsername: 'alice', email: 'alice@example.com', emailVerified: true, groups: ['dev'] };

describe('idp token audit: logins through a connector, tokens issued and refused', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  const audit = collectAudit();
  let server: TestServer;
  let url: string;
  let rp: client.Configuration;

  before(async () => {
    const connector = fakePasswordConnector({ alice: { password: 'alice-pw-audit', identity: ALICE } });
    ({ url, server } = await startPasswordIdpSvc(connector, { secretKey: SECRET_KEY, audit }));
    rp = await client.discovery(new URL(`${url}/api/idp`), 'svc', undefined, client.ClientSecretBasic(webClientSecret(SECRET_KEY)), { execute: [client.allowInsecureRequests] });
  });
  after(() => server.close());

  function last(action: string): AuditEvent {
    const found = audit.of(action).at(-1);
    expect(found, action).to.not.equal(undefined);
    validAuditEvent(found as AuditEvent);
    return found as AuditEvent;
  }

  it('a wrong password, then a login and a token: login events name the connector; the grant names the client and the grant type', async () => {
    const redirect = `${url}/auth/callback`;
    const { href, verifier, state } = await authorizationRequest(rp, redirect, 'openid profile groups');
    const browser = new FormBrowser();
    const form = await browser.go(href, redirect);
    if (!isPage(form)) throw new Error('expected the password form');
    const again = await browser.submit(form, { username: 'alice', password: 'not-her-password' }, redirect);
    if (!isPage(again)) throw new Error('expected the form again');
    expect(last('login')).to.deep.include({ outcome: 'failure', user: { name: 'alice' }, svc: { method: 'idp-password', connector: 'directory' } });
    expect(last('login').reason).to.match(/^wrong-password: /);
    const done = await browser.submit(again, { username: 'alice', password: 'alice-pw-audit' }, redirect);
    expect(last('login')).to.deep.include({ outcome: 'success', user: { name: 'alice' }, svc: { method: 'idp-password', connector: 'directory' } });
    await client.authorizationCodeGrant(rp, done as URL, { pkceCodeVerifier: verifier, expectedState: state });
    const issued = last('client-token-issued');
    expect(issued).to.deep.include({ category: 'authentication', outcome: 'success', svc: { clientId: 'svc', grant: 'authorization_code' } });
    expect(issued.source?.ip).to.equal('127.0.0.1');
  });

  it('a refused grant: the client, the grant type and the error, never the code', async () => {
    const res = await fetch(`${url}/api/idp/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`svc:${webClientSecret(SECRET_KEY)}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'made-up-code-0123456789', redirect_uri: `${url}/auth/callback`, code_verifier: 'v'.repeat(43) }),
    });
    expect(res.status).to.equal(400);
    const refused = last('client-token-refused');
    expect(refused).to.deep.include({ outcome: 'failure', svc: { clientId: 'svc', grant: 'authorization_code', error: 'invalid_grant' } });
    expect(JSON.stringify(refused)).to.not.include('made-up-code');
  });

  it('introspection and revocation: the caller, what it was told or whether the token went, never the token', async () => {
    const basic = `Basic ${Buffer.from(`svc:${webClientSecret(SECRET_KEY)}`).toString('base64')}`;
    const post = (path: string, token: string) => fetch(`${url}/api/idp${path}`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body: new URLSearchParams({ token }),
    });
    // svc's own client may not introspect (only confidential static clients may).
    expect((await post('/token/introspection', 'some-token-0123456789')).status).to.equal(400);
    const introspected = last('client-token-introspected');
    expect(introspected).to.deep.include({ category: 'authentication', type: 'info', outcome: 'failure', svc: { clientId: 'svc', error: 'unauthorized_client' } });
    expect((await post('/token/revocation', 'unknown-token-0123456789')).status).to.equal(200);
    const revoked = last('client-token-revoked');
    expect(revoked).to.deep.include({ category: 'session', type: 'end', outcome: 'success', svc: { clientId: 'svc', revoked: false, tokenType: '(unknown)' } });
    expect(JSON.stringify([introspected, revoked])).to.not.include('-token-0123456789');
  });
});
