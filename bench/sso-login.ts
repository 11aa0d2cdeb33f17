/**
 * Full SSO logins per second through svc's bundled identity provider with the LDAP connector,
 * beside the same authorization-code flow against LemonLDAP::NG authenticating against the same
 * slapd; then refresh-token grants per second against svc. One run prints both and the targets:
 * logins >= 4 x LemonLDAP::NG's, refresh grants >= 1,000/s.
 *
 * A login is: authorization request (PKCE, state) → the provider's login page → the password form
 * POST → the redirect with the code → the code exchange with a client secret. Both sides are driven
 * by the same client code (openid-client builds the request and exchanges the code, validating the
 * ID token; a cookie-keeping fetch does the pages), N workers in parallel for a fixed time.
 * svc runs in this process (startServer, as the e2e tests do), so it shares its event loop and
 * the machine's cores with the load; LemonLDAP::NG runs as its own plackup process.
 * Refresh: each worker logs in once with offline_access, then chains its own refresh tokens
 * (oidc-provider rotates them, so a token is used once).
 *
 * Peers: scripts/peers/start-slapd.sh (fixtures/ldap/ldap-connector.ldif) and
 * scripts/peers/start-lemonldap-ng.sh (install: scripts/install-bench-deps.sh as root).
 * Usage: npx tsx bench/sso-login.ts [--duration 10] [--concurrency 8] [--no-llng]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as client from 'openid-client';
import { pino } from 'pino';
import YAML from 'yaml';
import { webClientSecret } from '../src/idp/clients.js';
import { startServer, type RunningServer } from '../src/main/server.js';
import { FormBrowser, isPage, type Page } from '../test/helpers/form-browser.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const PEERS = join(ROOT, 'scripts', 'peers');
const { values: opts } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '8' },
    'no-llng': { type: 'boolean', default: false },
  },
});
const DURATION_S = Math.min(Math.max(Number(opts.duration), 1), 120);
const CONCURRENCY = Math.min(Math.max(Math.trunc(Number(opts.concurrency)), 1), 256);
/** Hard cap on iterations per worker and phase, beside the time limit. */
const MAX_ITERATIONS = 1_000_000;
const USERS = [['alice', 'alice123'], ['bob', 'bob123']] as const;
const SECRET_KEY = 'sso-login-bench-secret-key-0123456789';
const LLNG_CLIENT = { id: 'bench', secret: 'bench-secret-0123456789' };
const log = pino({ level: 'silent' });

interface Peer { pidFile: string; dir: string }
const peers: Peer[] = [];
const tempDirs: string[] = [];
let server: RunningServer | undefined;

function run(script: string, args: readonly string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', [join(PEERS, script), ...args], { timeout: 60_000, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      if (err === null) resolve(stdout);
      else reject(new Error(`${script}: ${stderr.trim() || err.message}`));
    });
  });
}

async function startPeer(script: string, args: readonly string[], env: Record<string, string> = {}): Promise<Peer> {
  const dir = await mkdtemp(join(tmpdir(), `bench-${script.replace(/\.sh$/, '')}-`));
  tempDirs.push(dir);
  const out = await run(script, [dir, ...args], env);
  const peer = { pidFile: out.trim().split('\n').at(-1) ?? '', dir };
  peers.push(peer);
  return peer;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function cleanUp(): Promise<void> {
  await server?.close(1000).catch(() => undefined);
  server = undefined;
  for (const peer of peers.splice(0).reverse()) await run('stop-peer.sh', [peer.pidFile]).catch(() => undefined);
  for (const dir of tempDirs.splice(0)) await rm(dir, { recursive: true, force: true });
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void cleanUp().finally(() => process.exit(130));
  });
}

interface Flow {
  readonly rp: client.Configuration;
  readonly redirectUri: string;
  /** From the login page to the redirect with the code. */
  submit(browser: FormBrowser, page: Page, username: string, password: string): Promise<URL | Page>;
}

async function logIn(flow: Flow, username: string, password: string, scope: string): Promise<client.TokenEndpointResponse> {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const start = client.buildAuthorizationUrl(flow.rp, {
    redirect_uri: flow.redirectUri, scope, state,
    code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  });
  const browser = new FormBrowser();
  const form = await browser.go(start.href, flow.redirectUri);
  if (!isPage(form)) throw new Error(`expected the login page, got a redirect to ${form.href}`);
  const done = await flow.submit(browser, form, username, password);
  if (isPage(done)) throw new Error(`login refused (${done.status}): ${done.html.slice(0, 200)}`);
  const tokens = await client.authorizationCodeGrant(flow.rp, done, { pkceCodeVerifier: verifier, expectedState: state });
  if (tokens.access_token === '' || tokens.id_token === undefined) throw new Error('no access or ID token');
  return tokens;
}

interface Tally { ok: number; errors: number; seconds: number; firstError?: string }

/** N workers, each looping `step` until the time is up (or the iteration cap). */
async function load(workers: number, seconds: number, step: (worker: number, i: number) => Promise<void>): Promise<Tally> {
  const tally: Tally = { ok: 0, errors: 0, seconds: 0 };
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(Array.from({ length: workers }, async (_, w) => {
    for (let i = 0; i < MAX_ITERATIONS && performance.now() < deadline; i++) {
      try {
        await step(w, i);
        tally.ok++;
      } catch (err) {
        tally.errors++;
        tally.firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  }));
  tally.seconds = (performance.now() - started) / 1000;
  return tally;
}

const rate = (t: Tally) => t.ok / t.seconds;
const user = (i: number) => USERS[i % USERS.length] ?? USERS[0];

// --- peers and svc ---------------------------------------------------------------------------
const ldapPort = await freePort();
await startPeer('start-slapd.sh', [String(ldapPort)], { LDAPS: '0', USERS_LDIF: join(ROOT, 'fixtures', 'ldap', 'ldap-connector.ldif') });

const svcPort = await freePort();
const svcUrl = `http://127.0.0.1:${svcPort}`;
const configDir = await mkdtemp(join(tmpdir(), 'bench-svc-config-'));
tempDirs.push(configDir);
const ldap = {
  host: `127.0.0.1:${ldapPort}`, insecureNoSSL: true, bindDN: 'cn=reader,dc=example,dc=org', bindPW: '$ldap.bindPW',
  userSearch: { baseDN: 'ou=people,dc=example,dc=org', filter: '(objectClass=inetOrgPerson)', username: 'uid', idAttr: 'uid', emailAttr: 'mail', nameAttr: 'cn', preferredUsernameAttr: 'uid' },
  groupSearch: { baseDN: 'ou=groups,dc=example,dc=org', nameAttr: 'cn', userMatchers: [{ userAttr: 'DN', groupAttr: 'member' }] },
};
const manifest = (kind: string, name: string, key: string, data: Record<string, string>) =>
  YAML.stringify({ apiVersion: 'v1', kind, metadata: { name, ...(kind === 'Secret' ? { labels: { 'app.kubernetes.io/part-of': 'svc' } } : {}) }, [key]: data });
await writeFile(join(configDir, 'svc-cm.yaml'), manifest('ConfigMap', 'svc-cm', 'data', {
  url: svcUrl,
  'idp.config': YAML.stringify({ connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldap }] }),
}));
await writeFile(join(configDir, 'svc-secret.yaml'), manifest('Secret', 'svc-secret', 'stringData', { 'server.secretkey': SECRET_KEY, 'ldap.bindPW': 'readerpw' }));
server = await startServer({ configDir, host: '127.0.0.1', port: svcPort, log });

const insecure = { execute: [client.allowInsecureRequests] };
const svcFlow: Flow = {
  rp: await client.discovery(new URL(`${svcUrl}/api/idp`), 'svc', undefined, client.ClientSecretBasic(webClientSecret(SECRET_KEY)), insecure),
  redirectUri: `${svcUrl}/auth/callback`,
  submit: (browser, page, username, password) => browser.submit(page, { username, password }, `${svcUrl}/auth/callback`),
};

let llngFlow: Flow | undefined;
let llngMissing: string | undefined = opts['no-llng'] ? 'skipped (--no-llng)' : undefined;
if (llngMissing === undefined) {
  const llngPort = await freePort();
  const redirectUri = `http://127.0.0.1:${await freePort()}/callback`;
  try {
    await startPeer('start-lemonldap-ng.sh', [String(llngPort)], {
      LLNG_LDAP_URL: `ldap://127.0.0.1:${ldapPort}`, OIDC_CLIENT_ID: LLNG_CLIENT.id, OIDC_CLIENT_SECRET: LLNG_CLIENT.secret, OIDC_REDIRECT_URI: redirectUri,
    });
    llngFlow = {
      // client_secret_post: the portal answered client_secret_basic from openid-client with a 401.
      rp: await client.discovery(new URL(`http://127.0.0.1:${llngPort}/`), LLNG_CLIENT.id, undefined, client.ClientSecretPost(LLNG_CLIENT.secret), insecure),
      redirectUri,
      // The portal's form posts back to the authorize URL with its hidden fields (token is the CSRF one).
      submit: (browser, page, username, password) => {
        const body = new URLSearchParams({ user: username, password, timezone: '0' });
        for (const name of ['token', 'url', 'skin']) {
          const value = new RegExp(`name="${name}"[^>]*?value="([^"]*)"`).exec(page.html)?.[1];
          if (value !== undefined) body.set(name, value);
        }
        return browser.go(page.url, redirectUri, body);
      },
    };
  } catch (err) {
    llngMissing = err instanceof Error ? err.message.split('\n')[0] : String(err);
  }
}

try {
  const svcScope = 'openid profile email groups';
  // Warm-up: one login each, so a broken setup fails here and not as a column of errors.
  await logIn(svcFlow, 'alice', 'alice123', svcScope);
  if (llngFlow !== undefined) await logIn(llngFlow, 'alice', 'alice123', 'openid profile email');

  console.error(`svc logins: ${CONCURRENCY} workers, ${DURATION_S} s`);
  const svcLogins = await load(CONCURRENCY, DURATION_S, async (w, i) => {
    const [u, p] = user(w + i);
    await logIn(svcFlow, u, p, svcScope);
  });
  let llngLogins: Tally | undefined;
  if (llngFlow !== undefined) {
    const flow = llngFlow;
    console.error(`LemonLDAP::NG logins: ${CONCURRENCY} workers, ${DURATION_S} s`);
    llngLogins = await load(CONCURRENCY, DURATION_S, async (w, i) => {
      const [u, p] = user(w + i);
      await logIn(flow, u, p, 'openid profile email');
    });
  }

  console.error(`svc refresh grants: ${CONCURRENCY} workers, ${DURATION_S} s`);
  const chains = await Promise.all(Array.from({ length: CONCURRENCY }, async (_, w) => {
    const [u, p] = user(w);
    const tokens = await logIn(svcFlow, u, p, `${svcScope} offline_access`);
    if (tokens.refresh_token === undefined) throw new Error('no refresh token with offline_access');
    return tokens.refresh_token;
  }));
  const refreshes = await load(CONCURRENCY, DURATION_S, async (w) => {
    const tokens = await client.refreshTokenGrant(svcFlow.rp, chains[w] as string);
    if (tokens.refresh_token === undefined || tokens.access_token === '') throw new Error('refresh gave no new refresh token');
    chains[w] = tokens.refresh_token;
  });

  // --- report ----------------------------------------------------------------------------------
  const fmt = (n: number) => n.toFixed(1).padStart(9);
  const line = (t: Tally) => `${fmt(rate(t))} /s  (${t.ok} ok, ${t.errors} errors, ${t.seconds.toFixed(1)} s)`;
  const verdict = (ok: boolean) => (ok ? 'pass' : 'below target');
  console.log(`SSO logins, LDAP connector, ${CONCURRENCY} workers, ${DURATION_S} s each; svc in-process, loopback`);
  console.log(`svc logins            ${line(svcLogins)}`);
  let loginsPass: boolean | undefined;
  if (llngLogins !== undefined) {
    const ratio = rate(svcLogins) / rate(llngLogins);
    loginsPass = ratio >= 4 && svcLogins.errors === 0;
    console.log(`LemonLDAP::NG logins  ${line(llngLogins)}`);
    console.log(`ratio svc / LLNG      ${ratio.toFixed(2).padStart(9)} x   target >= 4 x       ${verdict(loginsPass)}`);
  } else {
    console.log(`LemonLDAP::NG logins  not measured: ${llngMissing ?? 'unknown'}`);
    console.log('ratio svc / LLNG      n/a            target >= 4 x       not measured');
  }
  const refreshPass = rate(refreshes) >= 1000 && refreshes.errors === 0;
  console.log(`svc refresh grants    ${line(refreshes)}   target >= 1000 /s   ${verdict(refreshPass)}`);
  for (const [name, t] of [['svc logins', svcLogins], ['LLNG logins', llngLogins], ['refresh', refreshes]] as const) {
    if (t?.firstError !== undefined) console.log(`first ${name} error: ${t.firstError}`);
  }
  process.exitCode = loginsPass !== false && refreshPass ? 0 : 1;
} finally {
  await cleanUp();
}
