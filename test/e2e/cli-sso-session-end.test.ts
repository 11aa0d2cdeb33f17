/**
 * A command-line SSO session ended from svc's sessions list takes the CLI's refresh token with
 * it. `svc login --sso` (the CLI as its own process, the test playing the browser) through the
 * bundled provider's LDAP connector (real slapd), on two svc replicas sharing Redis behind a
 * forwarder: the CLI's ID token is used on one replica, its session ended from another session
 * of the same user (or by an admin with `?account=`) on the other, and then the CLI's refresh at
 * the provider is refused (invalid_grant) and its ID token is refused (401) on both replicas.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import YAML from 'yaml';
import { personKey, ssoPerson } from '../../src/person.js';
import { waitFor } from '../helpers/accounts-fixture.js';
import { startCli } from '../helpers/cli-process.js';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { startLdapReplicas, type LdapReplicas, type ReplicaName as Name } from '../helpers/ldap-replicas.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const SECRET_KEY = 'cli-sso-session-end-e2e-secret-key-0123456789';
const CLI_AGENT = { 'user-agent': 'svc/0.0.0-test' };

interface SessionItem {
  readonly id: string;
  readonly client: string;
  readonly current: boolean;
}

describe('e2e: a CLI SSO session ended from svc ends its refresh token too (two replicas, real slapd)', function () {
  cleanUpTempDirs();
  this.timeout(90_000);
  let lb: LdapReplicas;
  let url: string;

  before(async function () {
    // bob (group qa) administers accounts: he ends alice's sessions with ?account=.
    lb = await startLdapReplicas({ secretKey: SECRET_KEY, policy: 'p, qa, accounts, update, *, allow\n' });
    url = lb.url;
  });

  after(async function () {
    await lb?.close();
  });

  /** Runs `step` with every request through the forwarder sent to replica `name`. */
  async function on<T>(name: Name, step: () => Promise<T>): Promise<T> {
    lb.to(name);
    return step();
  }

  const page = (value: URL | Page): Page => {
    if (!isPage(value)) throw new Error(`expected a page, got a redirect to ${value.href}`);
    return value;
  };

  /** `svc login --sso` as its own process, the login's browser played on replica a: the tokens it stored. */
  async function cliLogin(username: string, password: string): Promise<{ idToken: string; refreshToken: string }> {
    const home = makeTempDir('svc-home-cli-end-');
    lb.to('a');
    const cli = startCli(home, ['login', url, '--sso', '--sso-port', '0']);
    const [visit] = await cli.waitFor(/^http:\/\/127\.0\.0\.1:\d+\/api\/idp\/\S+$/m);
    const redirectUri = new URL(visit).searchParams.get('redirect_uri') as string;
    const browser = new FormBrowser();
    const asked = await browser.submit(page(await browser.go(visit, redirectUri)), { username, password }, redirectUri);
    const landing = await browser.submit(page(asked), { decision: 'allow' }, redirectUri);
    if (!(landing instanceof URL)) throw new Error('expected the redirect to the CLI');
    await (await fetch(landing.href)).text();
    const result = await cli.done;
    expect(result.code, result.stderr).to.equal(0);
    const config = YAML.parse(await readFile(join(home, '.config', 'svc', 'config'), 'utf8')) as { users: { 'auth-token': string; 'refresh-token': string }[] };
    const user = config.users[0];
    if (user === undefined) throw new Error('no user in the CLI config');
    return { idToken: user['auth-token'], refreshToken: user['refresh-token'] };
  }

  /** A login at svc's web UI in a browser of its own (another provider session): svc's session token. */
  async function webLogin(username: string, password: string): Promise<string> {
    const browser = new CookieBrowser();
    await on('a', async () => browser.submit(page(await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`)), { username, password }, `${url}/apps`));
    return browser.cookie('svc.token');
  }

  const bearer = (token: string, extra: Record<string, string> = {}) => ({ headers: { authorization: `Bearer ${token}`, ...extra } });
  const statusOf = async (name: Name, token: string): Promise<number> => on(name, async () => (await fetch(`${url}/api/v1/session/list`, bearer(token))).status);

  /** The CLI's token used on replica b (its session recorded there), and found in the list on replica a. */
  async function cliSessionId(cliToken: string, listWith: string, account?: string): Promise<string> {
    expect(await on('b', async () => (await fetch(`${url}/api/v1/session/list`, bearer(cliToken, CLI_AGENT))).status)).to.equal(200);
    let found: SessionItem | undefined;
    const query = account === undefined ? '' : `?account=${encodeURIComponent(account)}`;
    await waitFor(async () => {
      const listed = (await on('a', async () => (await fetch(`${url}/api/v1/session/list${query}`, bearer(listWith))).json())) as { items: SessionItem[] };
      found = listed.items.find((i) => i.client === 'cli');
      return found !== undefined;
    }, 'the CLI session listed');
    return (found as SessionItem).id;
  }

  async function refreshRefused(refreshToken: string): Promise<unknown> {
    const cli = await client.discovery(new URL(`${url}/api/idp`), 'svc-cli', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    return on('b', () => client.refreshTokenGrant(cli, refreshToken).then(() => 'refreshed', (e: unknown) => e));
  }

  it('the user ends the CLI session from a browser session: the CLI\'s refresh is refused, its token too, on both replicas', async function () {
    const { idToken, refreshToken } = await cliLogin('alice', 'alice123');
    const web = await webLogin('alice', 'alice123');
    const id = await cliSessionId(idToken, web);

    const res = await on('a', () => fetch(`${url}/api/v1/session/${encodeURIComponent(id)}`, { method: 'DELETE', ...bearer(web) }));
    expect(res.status).to.equal(200);

    expect(await refreshRefused(refreshToken)).to.have.property('error', 'invalid_grant');
    expect(await statusOf('a', idToken)).to.equal(401);
    expect(await statusOf('b', idToken)).to.equal(401);
    expect(await statusOf('b', web), 'the browser session that ended it stays').to.equal(200);
  });

  it('an admin ends another account\'s CLI session with ?account=: its refresh is refused', async function () {
    const { idToken, refreshToken } = await cliLogin('alice', 'alice123');
    const admin = await webLogin('bob', 'bob123');
    const claims = decodeJwt(idToken);
    // An SSO user is named by their person key: a bare name is always a local account.
    const account = personKey(ssoPerson(claims.iss as string, claims.sub as string));
    const id = await cliSessionId(idToken, admin, account);

    const res = await on('b', () => fetch(`${url}/api/v1/session/${encodeURIComponent(id)}?account=${encodeURIComponent(account)}`, { method: 'DELETE', ...bearer(admin) }));
    expect(res.status).to.equal(200);

    expect(await refreshRefused(refreshToken)).to.have.property('error', 'invalid_grant');
    expect(await statusOf('a', idToken)).to.equal(401);
  });
});

/** A FormBrowser that hands out one of its cookies (svc's session token, for the API). */
class CookieBrowser extends FormBrowser {
  cookie(name: string): string {
    const found = this.cookieHeader().split('; ').find((c) => c.startsWith(`${name}=`));
    if (found === undefined) throw new Error(`no cookie ${name}`);
    return decodeURIComponent(found.slice(name.length + 1));
  }
}
