/**
 * The SSO pieces of the CLI alone: the loopback listener, the expiry decision, which provider
 * the settings name, and the device flow's endings against a scripted token endpoint. The
 * whole flows against the bundled provider are in test/e2e/cli-sso.test.ts.
 */
import { expect } from 'chai';
import { UnsecuredJWT } from 'jose';
import * as oidc from 'openid-client';
import { ApiClient } from '../../src/cli/api-client.js';
import { CliError } from '../../src/cli/errors.js';
import { codeFlowLogin } from '../../src/cli/sso/code-flow.js';
import { deviceFlowLogin } from '../../src/cli/sso/device-flow.js';
import { ssoProvider, type SsoProvider } from '../../src/cli/sso/discovery.js';
import { listenForCallback } from '../../src/cli/sso/loopback.js';
import { needsRefresh, REFRESH_MARGIN_S, refreshFailure } from '../../src/cli/sso/refresh.js';
import { freePort } from '../helpers/peers.js';
import { scriptedFetch } from './fake-io.js';

const ISSUER = 'https://idp.example/api/idp';
const PROVIDER: SsoProvider = { issuer: ISSUER, clientId: 'svc-cli', scope: 'openid offline_access' };

function providerConfig(metadata: Partial<oidc.ServerMetadata>, answer: (url: string) => { status: number; body: unknown }): oidc.Configuration {
  const config = new oidc.Configuration({ issuer: ISSUER, token_endpoint: `${ISSUER}/token`, ...metadata }, 'svc-cli', undefined, oidc.None());
  config[oidc.customFetch] = async (url) => {
    const { status, body } = answer(url);
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  };
  return config;
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof Error)) throw new Error('expected a failure');
  return err;
}

describe('cli/sso: the loopback listener', function () {
  it('answers other paths 404, takes one callback with a page to close, then stops listening', async function () {
    const listener = await listenForCallback(await freePort(), 's');
    const other = await fetch(listener.redirectUri.replace('/auth/callback', '/favicon.ico'));
    expect(other.status).to.equal(404);
    const answer = fetch(`${listener.redirectUri}?code=c&state=s`);
    expect((await listener.callback).searchParams.get('code')).to.equal('c');
    // The browser's page waits for the CLI to have its tokens.
    listener.finish({ ok: true });
    expect(await (await answer).text()).to.include('the login is complete; you may close this window');
    listener.close();
    expect(await fetch(listener.redirectUri).then(() => 'open', () => 'closed')).to.equal('closed');
  });

  it('ignores a request with another state or none, and keeps listening for the login\'s own', async function () {
    const listener = await listenForCallback(0, 'the-state');
    let taken: URL | undefined;
    void listener.callback.then((url) => (taken = url));
    // What a page elsewhere in the browser can send, with an <img> to the port.
    for (const query of ['code=evil', 'code=evil&state=forged', 'error=access_denied', 'code=evil&state=the-stat', 'code=evil&state=']) {
      const res = await fetch(`${listener.redirectUri}?${query}`);
      expect(res.status, query).to.equal(400);
      expect(await res.text()).to.include('not the login svc is waiting for');
    }
    expect(taken, 'no request taken yet').to.equal(undefined);
    const answer = fetch(`${listener.redirectUri}?code=good&state=the-state`);
    expect((await listener.callback).searchParams.get('code')).to.equal('good');
    listener.finish({ ok: false, reason: 'invalid_grant <b>' });
    const page = await answer;
    expect(page.status).to.equal(400);
    expect(await page.text()).to.include('the login failed: invalid_grant &#60;b&#62;').and.not.include('complete');
    listener.close();
  });

  it('gives up after its timeout, with a line that says what to do', async function () {
    const listener = await listenForCallback(0, 's', 20);
    const err = await failure(listener.callback);
    expect(err).to.be.instanceOf(CliError);
    expect(err.message).to.equal("no answer from the browser within 0 minutes; run 'svc login' again");
  });

  it('names the port when it is taken', async function () {
    const first = await listenForCallback(0, 's');
    const port = Number(new URL(first.redirectUri).port);
    try {
      const err = await failure(listenForCallback(port, 's'));
      expect(err.message).to.equal(`cannot listen on 127.0.0.1:${port} for the SSO callback: it is in use; pick another with --sso-port`);
    } finally {
      first.close();
    }
  });
});

describe('cli/sso: the code flow', function () {
  it('is not ended by a request with another state: the login\'s own answer still comes through', async function () {
    const config = providerConfig({ authorization_endpoint: `${ISSUER}/auth` }, () => ({ status: 500, body: {} }));
    const open = (url: string): void => {
      const params = new URL(url).searchParams;
      const redirect = params.get('redirect_uri') as string;
      void (async () => {
        await fetch(`${redirect}?code=c&state=forged`);
        await fetch(`${redirect}?error=access_denied&error_description=own&state=${params.get('state') as string}`);
      })();
    };
    const err = await failure(codeFlowLogin(config, PROVIDER, { port: 0, open, say: () => undefined }));
    expect(err.message).to.equal('SSO login failed: access_denied (own)');
  });

  it('reports the provider refusing the login', async function () {
    const config = providerConfig({ authorization_endpoint: `${ISSUER}/auth` }, () => ({ status: 500, body: {} }));
    const open = (url: string): void => {
      const params = new URL(url).searchParams;
      void fetch(`${params.get('redirect_uri') as string}?error=access_denied&error_description=no&state=${params.get('state') as string}`);
    };
    const err = await failure(codeFlowLogin(config, PROVIDER, { port: 0, open, say: () => undefined }));
    expect(err.message).to.equal('SSO login failed: access_denied (no)');
  });
});

describe('cli/sso: when the ID token is renewed', function () {
  const now = 1_700_000_000_000;
  const token = (exp: number): string => new UnsecuredJWT({}).setExpirationTime(exp).encode();

  it('renews past expiry and within the margin, not before; never a token that is not a JWT', function () {
    expect(needsRefresh(token(now / 1000 - 1), now)).to.equal(true);
    expect(needsRefresh(token(now / 1000 + REFRESH_MARGIN_S - 1), now)).to.equal(true);
    expect(needsRefresh(token(now / 1000 + REFRESH_MARGIN_S + 1), now)).to.equal(false);
    expect(needsRefresh('opaque-token', now)).to.equal(false);
  });

  it('says the login has ended only on invalid_grant; temporarily_unavailable (400 or 503) is a failure to try again', async function () {
    const refreshing = (status: number, error: string) => failure(oidc.refreshTokenGrant(providerConfig({}, () => ({ status, body: { error, error_description: 'the directory is down' } })), 'rt'));
    const ended = refreshFailure(await refreshing(400, 'invalid_grant'), 'https://svc.example', ISSUER);
    expect(ended.message).to.equal('the SSO session has ended (invalid_grant); log in again: svc login https://svc.example --sso');
    const later = refreshFailure(await refreshing(400, 'temporarily_unavailable'), 'https://svc.example', ISSUER);
    expect(later.message).to.equal(`cannot renew the SSO login at ${ISSUER} now: temporarily_unavailable (the directory is down); try again later`);
    const down = refreshFailure(await refreshing(503, 'temporarily_unavailable'), 'https://svc.example', ISSUER);
    expect(down.message).to.equal(`cannot renew the SSO login at ${ISSUER} now: unexpected HTTP response status code: HTTP 503; try again later`);
  });
});

describe('cli/sso: the provider the server announces', function () {
  const settings = (body: unknown) => new ApiClient({ server: 'https://svc.example', fetch: scriptedFetch(() => ({ status: 200, body })).fetch });

  it('takes an external provider with cliClientID before clientID, and asks for openid and offline_access', async function () {
    const oidcConfig = { issuer: 'https://corp.example', clientID: 'web', cliClientID: 'cli', scopes: ['email', 'groups'] };
    expect(await ssoProvider(settings({ oidcConfig, idpConnectors: [] }))).to.deep.equal({
      issuer: 'https://corp.example', clientId: 'cli', scope: 'openid email groups offline_access',
    });
    const { cliClientID: _none, ...withoutCli } = oidcConfig;
    expect(await ssoProvider(settings({ oidcConfig: withoutCli, idpConnectors: [] }))).to.include({ clientId: 'web' });
  });

  it('takes the bundled provider at <server>/api/idp when it has connectors, and says so when there is none', async function () {
    expect(await ssoProvider(settings({ idpConnectors: [{ id: 'ldap', name: 'LDAP', type: 'ldap' }] }))).to.include({
      issuer: 'https://svc.example/api/idp', clientId: 'svc-cli',
    });
    const err = await failure(ssoProvider(settings({ idpConnectors: [] })));
    expect(err.message).to.equal('https://svc.example offers no single sign-on; log in with --username and --password');
  });
});

describe('cli/sso: the device flow', function () {
  const device = { device_code: 'dc', user_code: 'ABCD-EFGH', verification_uri: `${ISSUER}/device`, expires_in: 300, interval: 0.01 };

  function endingWith(error: string): oidc.Configuration {
    return providerConfig({ device_authorization_endpoint: `${ISSUER}/device/auth` }, (url) =>
      url.endsWith('/device/auth') ? { status: 200, body: device } : { status: 400, body: { error } });
  }

  it('prints where to go and the code, on stderr', async function () {
    const said: string[] = [];
    await failure(deviceFlowLogin(endingWith('access_denied'), PROVIDER, (line) => said.push(line)));
    expect(said).to.deep.equal([`To log in, visit ${ISSUER}/device and enter the code ABCD-EFGH`]);
  });

  it('ends with one line for a denied login and an expired code', async function () {
    expect((await failure(deviceFlowLogin(endingWith('access_denied'), PROVIDER, () => undefined))).message).to.equal('the login was denied in the browser');
    expect((await failure(deviceFlowLogin(endingWith('expired_token'), PROVIDER, () => undefined))).message).to.equal(
      "the device code expired before it was approved; run 'svc login' again",
    );
  });

  it('says so when the provider has no device endpoint', async function () {
    const err = await failure(deviceFlowLogin(providerConfig({}, () => ({ status: 500, body: {} })), PROVIDER, () => undefined));
    expect(err.message).to.equal(`the identity provider at ${ISSUER} offers no device login; run 'svc login --sso' without --no-browser`);
  });
});
