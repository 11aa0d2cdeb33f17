/**
 * `svc login --sso` end to end: a real svc with the bundled provider at /api/idp and a fake
 * password connector, the CLI as a real process (SVC_NO_BROWSER_OPEN=1, the test plays the
 * browser: it reads the URL the CLI prints, fills the password form, allows the CLI on the page
 * that names its port and lands on the CLI's loopback listener), the device flow approved on the device page, and the refresh of an
 * expired ID token (the CLI run in-process with its clock moved a day ahead).
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as client from 'openid-client';
import YAML from 'yaml';
import { run } from '../../src/cli/program.js';
import { fakeIo } from '../cli/fake-io.js';
import { SECRET_KEY } from '../helpers/accounts-fixture.js';
import { fakePasswordConnector, singleConnector } from '../helpers/fake-password-connector.js';
import { startCli, type RunningCli } from '../helpers/cli-process.js';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const ALICE = { userId: 'u-alice', username: 'Alice Example', preferredUsername: 'alice', email: 'alice@example.com', emailVerified: true, groups: ['dev'] };
const DAY_MS = 24 * 60 * 60 * 1000;
const IDP_CONFIG = YAML.stringify({ connectors: [{ type: 'ldap', id: 'directory', name: 'Directory', config: { host: 'ldap.invalid', userSearch: { baseDN: 'ou=people', username: 'uid', idAttr: 'uid' } } }] });

interface StoredUser {
  'auth-token'?: string;
  'refresh-token'?: string;
}

describe('e2e: svc login --sso with the bundled identity provider', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let server: TestServer;
  let url: string;
  let home: string;
  /**
   * The device flow's CLI, in a home of its own, started in the hook: the CLI waits the
   * provider's poll interval (5 s) before it asks whether the code was approved, and that wait
   * runs beside the tests before its own, which changes nothing of theirs until it is approved.
   */
  let deviceHome: string;
  let device: RunningCli;
  let deviceCode: Promise<RegExpMatchArray>;
  const connector = fakePasswordConnector({ alice: { password: 'alice-pw', identity: ALICE } });
  const configFile = (at = home): string => join(at, '.config', 'svc', 'config');
  const stored = async (at = home): Promise<StoredUser> => (YAML.parse(await readFile(configFile(at), 'utf8')) as { users: StoredUser[] }).users[0] ?? {};

  before(async function () {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url, 'idp.config': IDP_CONFIG }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': 'g, dev, role:admin\n' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY }),
    });
    server = await startTestServer(dir, { port, idp: { connectors: () => singleConnector('directory', connector) } });
    home = makeTempDir('svc-home-sso-');
    deviceHome = makeTempDir('svc-home-sso-device-');
    device = startCli(deviceHome, ['login', url, '--sso', '--no-browser']);
    deviceCode = device.waitFor(/visit (\S+) and enter the code (\S+)/);
    deviceCode.catch(() => undefined); // awaited by its test
  });

  after(async function () {
    device?.stop();
    await device?.done;
    await server?.close();
    for (const dir of [home, deviceHome]) if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** The CLI in-process, with its clock `aheadMs` in the future, in the HOME `at`. */
  async function svcAt(aheadMs: number, args: readonly string[], at = home): Promise<{ code: number; stdout: string; stderr: string }> {
    const io = fakeIo({ HOME: at });
    const code = await run(args, { ...io.io, now: () => Date.now() + aheadMs });
    return { code, stdout: io.stdout(), stderr: io.stderr() };
  }

  it('logs in through the browser: the loopback listener takes the callback, then closes', async function () {
    const port = await freePort();
    const cli = startCli(home, ['login', url, '--sso', '--sso-port', String(port)]);
    const [visit] = await cli.waitFor(/^http:\/\/127\.0\.0\.1:\d+\/api\/idp\/\S+$/m);
    const redirectUri = `http://127.0.0.1:${port}/auth/callback`;
    expect(new URL(visit).searchParams.get('redirect_uri')).to.equal(redirectUri);
    const browser = new FormBrowser();
    const form = await browser.go(visit, redirectUri);
    if (!isPage(form)) throw new Error('expected the password form');
    const asked = await browser.submit(form, { username: 'alice', password: 'alice-pw' }, redirectUri);
    if (!isPage(asked)) throw new Error('expected the page that asks before the CLI gets its tokens');
    expect(asked.html).to.include(`listening on port <strong>${port}</strong>`);
    const landing = await browser.submit(asked, { decision: 'allow' }, redirectUri);
    expect(landing).to.be.instanceOf(URL);
    const page = await fetch((landing as URL).href);
    expect(await page.text()).to.include('you may close this window');

    const result = await cli.done;
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.equal(`'alice' logged in successfully\nContext '${url}' updated\n`);
    expect(result.stderr).to.equal(`To log in, visit:\n${visit}\n`);
    expect((await stat(configFile())).mode & 0o777).to.equal(0o600);
    const user = await stored();
    expect(user['refresh-token']).to.be.a('string');
    expect(result.stderr).to.not.include(user['auth-token']).and.not.include(user['refresh-token']);
    const again = await fetch(redirectUri).then(() => 'open', () => 'closed');
    expect(again).to.equal('closed');

    const can = await svcAt(0, ['account', 'can-i', 'update', 'accounts', 'bob']);
    expect(can, can.stderr).to.deep.equal({ code: 0, stdout: 'yes\n', stderr: '' });

    // Who am I: the opaque sub (what rights name) and the readable name, as argocd account get-user-info.
    const sub = (JSON.parse(Buffer.from((user['auth-token'] as string).split('.')[1] as string, 'base64url').toString()) as { sub: string }).sub;
    expect(sub).to.not.equal('alice');
    const info = await svcAt(0, ['account', 'get-user-info']);
    expect(info, info.stderr).to.deep.equal({ code: 0, stdout: `Logged In: true\nUsername: ${sub}\nName: alice\nIssuer: ${url}/api/idp\nGroups: dev\n`, stderr: '' });
    const api = await fetch(`${url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${user['auth-token'] as string}` } });
    expect(await api.json()).to.deep.include({ loggedIn: true, username: sub, displayName: 'alice' });
    const get = await svcAt(0, ['account', 'get']);
    expect(get).to.deep.equal({ code: 1, stdout: '', stderr: `svc: 'alice' (${sub}) logged in through single sign-on and has no local account: use 'svc account get-user-info' (or --account <name> for a local account)\n` });
  });

  /** Plays the browser up to the CLI's callback URL, which it returns unvisited. */
  async function browseToCallback(visit: string): Promise<URL> {
    const redirectUri = new URL(visit).searchParams.get('redirect_uri') as string;
    const browser = new FormBrowser();
    const form = await browser.go(visit, redirectUri);
    if (!isPage(form)) throw new Error('expected the password form');
    const asked = await browser.submit(form, { username: 'alice', password: 'alice-pw' }, redirectUri);
    if (!isPage(asked)) throw new Error('expected the page that asks before the CLI gets its tokens');
    const landing = await browser.submit(asked, { decision: 'allow' }, redirectUri);
    if (!(landing instanceof URL)) throw new Error('expected the redirect to the CLI');
    return landing;
  }

  it('--sso-port 0: the redirect URI carries the port bound, in the request and at the code exchange', async function () {
    const cli = startCli(home, ['login', url, '--sso', '--sso-port', '0']);
    const [visit] = await cli.waitFor(/^http:\/\/127\.0\.0\.1:\d+\/api\/idp\/\S+$/m);
    const redirectUri = new URL(new URL(visit).searchParams.get('redirect_uri') as string);
    expect(redirectUri.port).to.match(/^[1-9]\d*$/);
    const landing = await browseToCallback(visit);
    expect(landing.origin).to.equal(redirectUri.origin);
    const page = await fetch(landing.href);
    expect(page.status).to.equal(200);
    expect(await page.text()).to.include('the login is complete');
    const result = await cli.done;
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.equal(`'alice' logged in successfully\nContext '${url}' updated\n`);
  });

  it('a refused code exchange: the page says the login failed, and the CLI says why', async function () {
    const cli = startCli(home, ['login', url, '--sso', '--sso-port', '0']);
    const [visit] = await cli.waitFor(/^http:\/\/127\.0\.0\.1:\d+\/api\/idp\/\S+$/m);
    const landing = await browseToCallback(visit);
    landing.searchParams.set('code', 'not-the-code');
    const page = await fetch(landing.href);
    const html = await page.text();
    expect(page.status).to.equal(400);
    expect(html).to.include('the login failed: invalid_grant').and.not.include('the login is complete');
    const result = await cli.done;
    expect(result.code).to.equal(1);
    const redirectUri = `${landing.origin}/auth/callback`;
    expect(result.stderr).to.include(`svc: SSO login failed: invalid_grant (grant request is invalid): the provider refused the authorization code for ${redirectUri} (used already, expired, or issued for another redirect URI)\n`);
  });

  it('refreshes an ID token that has expired before the command, and stores the new tokens', async function () {
    const before = await stored();
    // ID tokens carry whole seconds: one renewed in the login's second could be byte-identical,
    // so the refresh waits until the second the stored one was issued in has passed.
    const { iat } = JSON.parse(Buffer.from((before['auth-token'] as string).split('.')[1] as string, 'base64url').toString()) as { iat: number };
    while (Math.floor(Date.now() / 1000) <= iat) await new Promise((resolve) => setTimeout(resolve, 20));
    const refreshes = connector.refreshes();
    const can = await svcAt(DAY_MS, ['account', 'can-i', 'update', 'accounts', 'bob']);
    expect(can, can.stderr).to.deep.equal({ code: 0, stdout: 'yes\n', stderr: '' });
    expect(connector.refreshes()).to.equal(refreshes + 1);
    const after = await stored();
    expect(after['auth-token']).to.be.a('string').and.not.equal(before['auth-token']);
    expect(after['refresh-token']).to.be.a('string').and.not.equal(before['refresh-token']);
    expect((await stat(configFile())).mode & 0o777).to.equal(0o600);

    const unchanged = await svcAt(0, ['account', 'can-i', 'update', 'accounts', 'bob']);
    expect(unchanged.code).to.equal(0);
    expect(connector.refreshes()).to.equal(refreshes + 1);
  });

  it('says "log in again" in one line when the provider refuses the refresh', async function () {
    const saved = connector.users.get('alice');
    connector.users.delete('alice');
    try {
      const refused = await svcAt(DAY_MS, ['account', 'can-i', 'update', 'accounts', 'bob']);
      expect(refused).to.deep.equal({ code: 1, stdout: '', stderr: `svc: the SSO session has ended (invalid_grant); log in again: svc login ${url} --sso\n` });
    } finally {
      if (saved !== undefined) connector.users.set('alice', saved);
    }
  });

  it('logs in with the device flow (--no-browser), the user approving the code on the device page', async function () {
    const [, verification, userCode] = (await deviceCode) as unknown as [string, string, string];
    const browser = new FormBrowser();
    const input = (await browser.go(verification, 'about:')) as Page;
    const confirm = (await browser.submit(input, { user_code: userCode }, 'about:')) as Page;
    const form = (await browser.submit(confirm, {}, 'about:')) as Page;
    const done = (await browser.submit(form, { username: 'alice', password: 'alice-pw' }, 'about:')) as Page;
    expect(done.html).to.include('You are logged in on your device');
    const result = await device.done;
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.equal(`'alice' logged in successfully\nContext '${url}' updated\n`);
    const can = await svcAt(0, ['account', 'can-i', 'update', 'accounts', 'bob'], deviceHome);
    expect(can.stdout).to.equal('yes\n');
  });

  it('logout revokes the refresh token at the provider and forgets both tokens', async function () {
    // The last login, the device flow's.
    const { 'refresh-token': refreshToken } = await stored(deviceHome);
    const out = await svcAt(0, ['logout'], deviceHome);
    expect(out, out.stderr).to.deep.equal({ code: 0, stdout: `Logged out from '${url}'\n`, stderr: '' });
    expect(await stored(deviceHome)).to.not.have.any.keys('auth-token', 'refresh-token');
    const cli = await client.discovery(new URL(`${url}/api/idp`), 'svc-cli', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    const refused = await client.refreshTokenGrant(cli, refreshToken as string).catch((e: unknown) => e);
    expect(refused).to.have.property('error', 'invalid_grant');
  });
});

describe('e2e: svc login --sso against a server with a self-signed certificate', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let server: TestServer;
  let dir: string;
  let url: string;

  before(async function () {
    dir = makeTempDir('svc-cli-sso-tls-');
    const certFile = join(dir, 'cert.pem');
    const keyFile = join(dir, 'key.pem');
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile,
    ]);
    const port = await freePort();
    url = `https://127.0.0.1:${port}`;
    const configDir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url, 'idp.config': IDP_CONFIG }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY }),
    });
    const connector = fakePasswordConnector({ alice: { password: 'alice-pw', identity: ALICE } });
    server = await startTestServer(configDir, { port, tls: { certFile, keyFile }, idp: { connectors: () => singleConnector('directory', connector) } });
  });

  after(async function () {
    await server?.close(1000);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses the certificate unless --insecure, which then reaches the provider too', async function () {
    const refused = await startCli(join(dir, 'home'), ['login', url, '--sso', '--no-browser']).done;
    expect(refused.code).to.equal(1);
    // Node 24's own message names --use-system-ca (NODE_OPTIONS) for a CA in the system store.
    expect(refused.stderr).to.equal(`svc: cannot reach ${url}: self-signed certificate; if the root CA is installed locally, try running Node.js with --use-system-ca (pass --insecure to skip certificate verification)\n`);

    const cli = startCli(join(dir, 'home'), ['login', url, '--sso', '--no-browser', '--insecure']);
    try {
      const [, verification] = (await cli.waitFor(/visit (\S+) and enter the code/)) as unknown as [string, string];
      expect(verification).to.equal(`${url}/api/idp/device`);
    } finally {
      cli.stop();
    }
  });
});
