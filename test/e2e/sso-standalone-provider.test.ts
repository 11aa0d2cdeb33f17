/**
 * svc against oidc-provider running as a process of its own over HTTPS with a test CA
 * (test/helpers/standalone-provider.ts, started once for the file): the browser login through
 * /auth/login with rights by group, a clear certificate error without rootCA and a login with
 * the skip switch, the provider restarted with a new signing key and svc
 * fetching its keys again for the unknown `kid`, and `svc login --sso` with the CLI's client
 * (cliClientID): PKCE with the loopback listener, and the device flow the provider announces.
 */
import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import YAML from 'yaml';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { startCli } from '../helpers/cli-process.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { SsoBrowser } from '../helpers/sso-browser.js';
import { SECRET_KEY, userInfo } from '../helpers/sso-setup.js';
import { STANDALONE_CLIENT_SECRET, startStandaloneProvider, type StandaloneProvider } from '../helpers/standalone-provider-process.js';
import { makeTestCa, type TestCa } from '../helpers/test-ca.js';
import { echoExtension, SSO_POLICY } from '../helpers/test-issuer.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** jose's cool-down between two JWKS fetches (docs/sso.md), and a little more. */
const JWKS_COOLDOWN_MS = 5_100;

describe('e2e: SSO against a standalone oidc-provider process over HTTPS', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let ca: TestCa;
  let provider: StandaloneProvider;
  let echo: Backend;
  let svc: TestServer;
  let svcUrl: string;
  /** For a second svc with other TLS settings (also a redirect URI of the provider's client). */
  let otherPort: number;
  let agent: Agent;
  let home: string;
  const cliEnv = (): Record<string, string> => ({ NODE_EXTRA_CA_CERTS: join(home, 'ca.pem') });
  const browser = (): SsoBrowser => new SsoBrowser((url, init) => undiciFetch(url, { ...(init as object), dispatcher: agent }) as unknown as Promise<Response>, provider.issuer);

  before(async () => {
    ca = makeTestCa();
    agent = new Agent({ connect: { ca: ca.caPem } });
    const port = await freePort();
    otherPort = await freePort();
    svcUrl = `http://127.0.0.1:${port}`;
    provider = await startStandaloneProvider(ca, [`${svcUrl}/auth/callback`, `http://127.0.0.1:${otherPort}/auth/callback`], { alice: ['sso-team'], bob: ['other'] });
    echo = await echoBackend('echo');
    svc = await startSvc(port, 'rootCA');
    home = makeTempDir('svc-home-standalone-');
    writeFileSync(join(home, 'ca.pem'), ca.caPem);
  });
  after(async () => {
    await svc?.close(1000);
    await provider?.stop();
    await echo?.close();
    await agent?.close();
    if (home !== undefined) rmSync(home, { recursive: true, force: true });
  });

  function startSvc(port: number, tls: 'rootCA' | 'none' | 'skip'): Promise<TestServer> {
    const url = `http://127.0.0.1:${port}`;
    const oidc = {
      name: 'Corp', issuer: provider.issuer, clientID: 'svc', clientSecret: '$oidc.clientSecret', cliClientID: 'svc-cli',
      ...(tls === 'rootCA' ? { rootCA: ca.caPem } : {}),
    };
    const dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', {
        url, 'oidc.config': YAML.stringify(oidc), 'extension.config': echoExtension(echo.url),
        ...(tls === 'skip' ? { 'oidc.tls.insecure.skip.verify': 'true' } : {}),
      }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': SSO_POLICY }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY, 'admin.password': '', 'oidc.clientSecret': STANDALONE_CLIENT_SECRET }),
    });
    return startTestServer(dir, { port });
  }

  async function login(account: string, url = svcUrl): Promise<{ token: string; request: (path: string) => Promise<Response> }> {
    const b = browser();
    const { url: landed, res } = await b.browse(`${url}/auth/login?return_url=%2Fapps`, account);
    const token = b.cookie(url, 'svc.token');
    if (token === undefined) throw new Error(`no svc.token after the login (landed on ${landed}): ${res?.status} ${await res?.text()}`);
    await res?.body?.cancel();
    expect(landed).to.equal(`${url}/apps`);
    return { token, request: (path) => b.request(`${url}${path}`) };
  }

  it('logs in through /auth/login; the token works through the proxy for its group only', async () => {
    const alice = await login('alice');
    const { expiresAt, ...info } = await userInfo(svcUrl, alice.token);
    // username: the sub, what rights name; displayName: the readable name (here the email claim).
    expect(info).to.deep.equal({ loggedIn: true, username: 'alice', displayName: 'alice@example.com', iss: provider.issuer, groups: ['sso-team'] });
    expect(expiresAt, 'the session ends when the ID token does').to.equal(JSON.parse(Buffer.from(alice.token.split('.')[1] ?? '', 'base64url').toString()).exp);
    expect((await alice.request('/api/v1/extensions/echo/hello')).status).to.equal(200);
    const bob = await login('bob');
    expect((await bob.request('/api/v1/extensions/echo/hello')).status).to.equal(403);
  });

  it('fails with a clear certificate error without rootCA, and logs in with the skip switch', async () => {
    const otherUrl = `http://127.0.0.1:${otherPort}`;
    const strict = await startSvc(otherPort, 'none');
    try {
      const res = await fetch(`${otherUrl}/auth/login`, { redirect: 'manual' });
      expect(res.status).to.equal(503);
      expect(((await res.json()) as { message: string }).message).to.match(/certificate verification failed: UNABLE_TO_VERIFY_LEAF_SIGNATURE/);
    } finally {
      await strict.close(1000);
    }
    const skip = await startSvc(otherPort, 'skip');
    try {
      const alice = await login('alice', otherUrl);
      expect((await userInfo(otherUrl, alice.token))['groups']).to.deep.equal(['sso-team']);
      expect(skip.logs()).to.include('oidc.tls.insecure.skip.verify is true');
    } finally {
      await skip.close(1000);
    }
  });

  it('fetches the keys again when the restarted provider signs with a new key', async () => {
    const jwksFetches = (): number => provider.requests.filter((p) => p === '/jwks').length;
    const first = await login('alice');
    const before = jwksFetches();
    await login('bob');
    expect(jwksFetches(), 'known keys are kept').to.equal(before);

    await provider.restartWithNewKey();
    await sleep(JWKS_COOLDOWN_MS);
    const second = await login('alice');
    expect(decodeProtectedHeader(second.token).kid).to.equal('key-2');
    expect(decodeProtectedHeader(first.token).kid).to.equal('key-1');
    expect(jwksFetches()).to.equal(before + 1);
    expect((await userInfo(svcUrl, second.token))['username']).to.equal('alice');
    expect((await userInfo(svcUrl, first.token))['username']).to.equal('alice');
  });

  it('svc login --sso: PKCE with the loopback listener and cliClientID; svc accepts the token', async () => {
    const port = await freePort();
    const cli = startCli(home, ['login', svcUrl, '--sso', '--sso-port', String(port)], cliEnv());
    const [visit] = await cli.waitFor(/^https:\/\/127\.0\.0\.1:\d+\/auth\?\S+$/m);
    const authorize = new URL(visit);
    expect(authorize.origin).to.equal(provider.issuer);
    expect(authorize.searchParams.get('client_id')).to.equal('svc-cli');
    expect(authorize.searchParams.get('redirect_uri')).to.equal(`http://127.0.0.1:${port}/auth/callback`);
    expect(authorize.searchParams.get('code_challenge_method')).to.equal('S256');
    const { url, res } = await browser().browse(visit, 'alice');
    expect(url).to.match(new RegExp(`^http://127\\.0\\.0\\.1:${port}/auth/callback\\?`));
    expect(await res?.text()).to.include('you may close this window');

    const result = await cli.done;
    expect(result.code, result.stderr).to.equal(0);
    // The CLI names the user by the email claim when there is no preferred_username.
    expect(result.stdout).to.equal(`'alice@example.com' logged in successfully\nContext '${svcUrl}' updated\n`);
    const token = await storedToken();
    expect(decodeJwt(token)['aud']).to.equal('svc-cli');
    expect(await userInfo(svcUrl, token)).to.deep.include({ loggedIn: true, username: 'alice', groups: ['sso-team'] });
  });

  it('svc login --sso --no-browser: the device flow the provider announces, approved in the browser', async () => {
    const cli = startCli(home, ['login', svcUrl, '--sso', '--no-browser'], cliEnv());
    const [, verification, userCode] = (await cli.waitFor(/visit (\S+) and enter the code (\S+)/)) as unknown as [string, string, string];
    expect(new URL(verification).origin).to.equal(provider.issuer);
    const b = browser();
    const input = await page(b, verification);
    const confirm = await submit(b, input, { user_code: userCode });
    const approved = await submit(b, confirm, {});
    // The device page (/device/<uid>) sends the browser to the login, then to the consent, each
    // coming back to it; the last time it says the device is signed in.
    let next = approved.url;
    let done = '';
    for (let round = 0; round < 5 && done === ''; round++) {
      const { url } = await b.browse(next, 'alice', (u) => new URL(u).pathname.startsWith('/device/'));
      const res = await b.request(url);
      const location = res.headers.get('location');
      if (location === null) done = await res.text();
      else next = new URL(location, url).href;
    }
    expect(done).to.include('Sign-in Success');

    const result = await cli.done;
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.equal(`'alice@example.com' logged in successfully\nContext '${svcUrl}' updated\n`);
    expect(await userInfo(svcUrl, await storedToken())).to.deep.include({ loggedIn: true, username: 'alice' });
  });

  async function storedToken(): Promise<string> {
    const config = YAML.parse(await readFile(join(home, '.config', 'svc', 'config'), 'utf8')) as { users: { 'auth-token'?: string }[] };
    const token = config.users[0]?.['auth-token'];
    if (token === undefined) throw new Error('no auth-token stored');
    return token;
  }
});

interface FormPage {
  readonly url: string;
  readonly html: string;
}

async function page(b: SsoBrowser, url: string): Promise<FormPage> {
  const res = await b.request(url);
  return { url, html: await res.text() };
}

/** Posts the page's first form with its hidden inputs and `fields`; returns the next page, or (html '') where it redirects to. */
async function submit(b: SsoBrowser, from: FormPage, fields: Record<string, string>): Promise<FormPage> {
  const form = /<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/.exec(from.html);
  if (form === null) throw new Error(`no form on ${from.url}: ${from.html.slice(0, 300)}`);
  const body = new URLSearchParams();
  for (const m of (form[2] ?? '').matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) body.set(m[1] as string, m[2] as string);
  for (const [k, v] of Object.entries(fields)) body.set(k, v);
  const url = new URL(form[1] ?? '', from.url).href;
  const res = await b.request(url, { method: 'POST', body });
  const location = res.headers.get('location');
  if (location === null) return { url, html: await res.text() };
  await res.body?.cancel();
  return { url: new URL(location, url).href, html: '' };
}
