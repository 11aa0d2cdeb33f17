/**
 * The `login` audit event of three login paths, each through a real login against a running
 * server with a collecting trail, each event validated against docs/audit.schema.json:
 * single sign-on through oidc.config's external provider (method sso, the issuer), the device
 * flow at the bundled provider (method idp-password, the connector) and the bundled provider's
 * GitHub browser connector (method idp-browser, the connector); with a failed attempt beside each.
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import type { AuditEvent } from '../../src/audit/trail.js';
import { createTlsFetch, type TlsFetch } from '../../src/lib/tls-fetch.js';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';
import { validAuditEvent } from '../helpers/audit-schema.js';
import { devicePasswordForm } from '../helpers/device-flow.js';
import { startFakeGithub, type FakeGithub } from '../helpers/fake-github.js';
import { fakePasswordConnector } from '../helpers/fake-password-connector.js';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { idpSvcAddress, startIdpSvc, startPasswordIdpSvc, type IdpSvc } from '../helpers/idp-svc.js';
import { toolsAndSecretPolicy } from '../helpers/manifests.js';
import type { TestServer } from '../helpers/server.js';
import { setupSso, ssoLogin, type SsoSetup } from '../helpers/sso-setup.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';
import { CLIENT_ID, CLIENT_SECRET, githubConfig, USERS } from '../connectors/github/fixture.js';

/** The new `login` events since `mark`, in order, each validated against the schema. */
function loginsSince(audit: CollectedAudit, mark: number): AuditEvent[] {
  const found = audit.events.slice(mark).filter((e) => e.action === 'login');
  for (const event of found) validAuditEvent(event);
  return found;
}

/** The one new `login` event since `mark`, validated against the schema. */
function onlyLogin(audit: CollectedAudit, mark: number): AuditEvent {
  const found = loginsSince(audit, mark);
  expect(found, 'one login event').to.have.length(1);
  return found[0] as AuditEvent;
}

describe('audit logins: single sign-on through oidc.config', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  const audit = collectAudit();
  let setup: SsoSetup;

  before(async () => {
    setup = await setupSso({ ca: makeTestCa(), audit });
    setup.provider.accounts.set('alice', { groups: ['sso-team'] });
  });
  after(async () => {
    await setup?.close();
  });

  it('a login through the external provider records login, method sso, the issuer, the display name and subject', async () => {
    const mark = audit.events.length;
    await ssoLogin(setup, 'alice', '/apps');
    const event = onlyLogin(audit, mark);
    expect(event).to.deep.include({ category: 'authentication', type: 'start', action: 'login', outcome: 'success', svc: { method: 'sso', issuer: setup.provider.issuer } });
    // The name is the display name (the test provider sends no `name`, so its email), the id the `sub`.
    expect(event.user).to.deep.include({ name: 'alice@example.com', id: 'alice' });
    expect(event.reason).to.equal(undefined);
    expect(event.source?.requestId).to.be.a('string').and.not.equal('');
  });

  it('a callback without the login state records a failed sso login, expired, with the issuer', async () => {
    const mark = audit.events.length;
    const res = await fetch(`${setup.svc.url}/auth/callback?code=made-up-code&state=made-up-state`, { redirect: 'manual' });
    await res.body?.cancel();
    expect(res.status).to.be.oneOf([302, 303, 400, 401]);
    const event = onlyLogin(audit, mark);
    expect(event).to.deep.include({ category: 'authentication', outcome: 'failure', svc: { method: 'sso', issuer: setup.provider.issuer } });
    expect(event.reason).to.match(/^expired: /);
    expect(event.user).to.equal(undefined);
  });
});

const DEVICE_SECRET_KEY = 'audit-logins-device-secret-key-0123456789';
const DEVICE_PASSWORD = 'alice-device-pw-audit';
const ALICE = { userId: 'u-alice', username: 'Alice Example', preferredUsername: 'alice', email: 'alice@example.com', emailVerified: true, groups: ['dev'] };

describe('audit logins: the device flow at the bundled provider', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  const audit = collectAudit();
  let server: TestServer;
  let cli: client.Configuration;

  before(async () => {
    const connector = fakePasswordConnector({ alice: { password: DEVICE_PASSWORD, identity: ALICE } });
    let url: string;
    ({ url, server } = await startPasswordIdpSvc(connector, { secretKey: DEVICE_SECRET_KEY, audit }));
    cli = await client.discovery(new URL(`${url}/api/idp`), 'svc-cli', undefined, client.None(), { execute: [client.allowInsecureRequests] });
  });
  after(async () => {
    await server?.close();
  });

  it('a wrong password then the right one on the device page: login events of method idp-password naming the connector', async () => {
    const device = await client.initiateDeviceAuthorization(cli, { scope: 'openid groups' });
    const { browser, form } = await devicePasswordForm(String(device.verification_uri), device.user_code);

    let mark = audit.events.length;
    const again = await browser.submit(form, { username: 'alice', password: 'not-her-device-password' }, 'about:');
    if (!isPage(again)) throw new Error('expected the password form again');
    const failure = onlyLogin(audit, mark);
    expect(failure).to.deep.include({ category: 'authentication', type: 'start', outcome: 'failure', user: { name: 'alice' }, svc: { method: 'idp-password', connector: 'directory' } });
    expect(failure.reason).to.match(/^wrong-password: /);

    mark = audit.events.length;
    const done = (await browser.submit(again, { username: 'alice', password: DEVICE_PASSWORD }, 'about:')) as Page;
    expect(done.html).to.include('You are logged in on your device');
    const success = onlyLogin(audit, mark);
    expect(success).to.deep.include({ category: 'authentication', type: 'start', outcome: 'success', user: { name: 'alice' }, svc: { method: 'idp-password', connector: 'directory' } });
    expect(success.reason).to.equal(undefined);

    const tokens = await client.pollDeviceAuthorizationGrant(cli, device);
    expect(tokens.claims()).to.deep.include({ aud: 'svc-cli' });
    const issued = audit.of('client-token-issued').at(-1);
    expect(issued, 'client-token-issued').to.not.equal(undefined);
    validAuditEvent(issued as AuditEvent);
    expect(issued).to.deep.include({ outcome: 'success', svc: { clientId: 'svc-cli', grant: 'urn:ietf:params:oauth:grant-type:device_code' } });
  });
});

describe('audit logins: the bundled provider\'s GitHub browser connector', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  const audit = collectAudit();
  let fake: FakeGithub;
  let svc: IdpSvc | undefined;
  let url: string;
  let tls: TlsFetch;

  before(async () => {
    fake = await startFakeGithub({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, users: USERS });
    tls = createTlsFetch({ rootCAs: [fake.caPem] });
    const at = await idpSvcAddress();
    url = at.url;
    svc = await startIdpSvc(at, {
      connectors: [{ type: 'github', id: 'github', name: 'GitHub', config: githubConfig(fake) }], extensions: ['tools', 'secret'],
      policy: toolsAndSecretPolicy('acme:Developers', 'acme:Admins'),
      secrets: { 'server.secretkey': 'audit-logins-github-secret-key-0123456789', 'github.clientSecret': CLIENT_SECRET },
    }, { audit });
  });
  after(async () => {
    await svc?.close();
    await tls?.close();
    await fake?.close();
  });

  it('a login through GitHub records login, method idp-browser, the connector, the user and groups; then svc\'s own sso login at the bundled issuer', async () => {
    fake.signedIn = 'alice';
    const mark = audit.events.length;
    const landed = await new FormBrowser(tls.fetch).go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
    if (isPage(landed)) throw new Error(`expected to land on /apps, got a page (${landed.status}): ${landed.html.slice(0, 300)}`);
    // The provider's login through the connector, then svc's single sign-on through the provider.
    const [atProvider, atSvc, ...more] = loginsSince(audit, mark);
    expect(more, 'two login events').to.deep.equal([]);
    expect(atProvider).to.deep.include({ category: 'authentication', type: 'start', outcome: 'success', svc: { method: 'idp-browser', connector: 'github' } });
    expect(atProvider?.user).to.deep.include({ name: 'Alice Liddell' });
    expect(atProvider?.user?.id).to.be.a('string').and.not.equal('');
    expect(atProvider?.user?.groups).to.include('acme:Developers');
    expect(atProvider?.reason).to.equal(undefined);
    expect(atProvider?.source?.requestId).to.be.a('string').and.not.equal('');
    expect(atSvc).to.deep.include({ category: 'authentication', outcome: 'success', svc: { method: 'sso', issuer: `${url}/api/idp` } });
    expect(atSvc?.user).to.deep.include({ name: 'alice', id: atProvider?.user?.id });
  });

  it('a GitHub user outside the listed orgs records a failed login, refused, with the reason', async () => {
    fake.signedIn = 'bob';
    const mark = audit.events.length;
    const landed = await new FormBrowser(tls.fetch).go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
    if (!isPage(landed)) throw new Error(`expected a refusal page, got a redirect to ${landed.href}`);
    expect(landed.status).to.equal(401);
    const event = onlyLogin(audit, mark);
    expect(event).to.deep.include({ category: 'authentication', outcome: 'failure', svc: { method: 'idp-browser', connector: 'github' } });
    expect(event.reason).to.match(/^refused: .*not a member of the organizations or teams/);
  });
});
