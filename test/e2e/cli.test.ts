/**
 * The `svc` CLI as a user runs it: a real process (compiled `src/cli/main.ts`) in a
 * temporary HOME, against a real server started in this process on a free loopback port.
 * The steps build on each other (log in, then use the stored token, …), so they run in order.
 */
import bcrypt from 'bcryptjs';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { ROOT, runEntry, type RunResult, CLI_ENTRY } from '../helpers/run.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const ADMIN_PASSWORD = 'admin-Pa55word';
const ALICE_PASSWORD = 'alice-Pa55word';
const ALICE_NEW_PASSWORD = 'alice-N3w-password';
const execFileAsync = promisify(execFile);
const JWT = /^[\w-]+\.[\w-]+\.[\w-]+$/;

describe('e2e: the svc CLI against a running server', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let server: TestServer;
  let configDir: string;
  let adminHome: string;
  let aliceHome: string;

  before(async () => {
    configDir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { 'accounts.alice': 'apiKey, login' }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.default': 'role:readonly', 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', {
        'server.secretkey': randomBytes(32).toString('base64'),
        'admin.password': bcrypt.hashSync(ADMIN_PASSWORD, 4),
        'admin.passwordMtime': '2024-01-01T00:00:00Z',
        'accounts.alice.password': bcrypt.hashSync(ALICE_PASSWORD, 4),
        'accounts.alice.passwordMtime': '2024-01-01T00:00:00Z',
      }),
    });
    adminHome = makeTempDir('svc-home-admin-');
    aliceHome = makeTempDir('svc-home-alice-');
    server = await startTestServer(configDir, { env: {} });
  });

  after(async () => {
    await server?.close(1000);
    for (const dir of [configDir, adminHome, aliceHome]) if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `svc` with only HOME (and PATH) from the environment, plus `env`. */
  function svc(home: string, args: readonly string[], env: Record<string, string> = {}): Promise<RunResult> {
    const clean: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: home, ...env };
    return runEntry(CLI_ENTRY, args, clean);
  }

  function expectOneErrorLine(result: RunResult, line: string): void {
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stdout).to.equal('');
    expect(result.stderr).to.equal(`svc: ${line}\n`);
  }

  const configFile = (home: string): string => join(home, '.config', 'svc', 'config');

  async function storedToken(home: string): Promise<string | undefined> {
    const config = YAML.parse(await readFile(configFile(home), 'utf8')) as { users?: { 'auth-token'?: string }[] };
    return config.users?.[0]?.['auth-token'];
  }

  it('refuses a wrong password with one line on stderr and exit 1, storing nothing', async () => {
    const result = await svc(adminHome, ['login', server.url, '--username', 'admin', '--password', 'wrong']);
    expectOneErrorLine(result, 'invalid username or password');
    await stat(configFile(adminHome)).then(
      () => expect.fail('a failed login wrote the config file'),
      (err: NodeJS.ErrnoException) => expect(err.code).to.equal('ENOENT'),
    );
  });

  it('logs in and stores the token in a 0600 file in a 0700 directory', async () => {
    const result = await svc(adminHome, ['login', server.url, '--username', 'admin', '--password', ADMIN_PASSWORD]);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.equal(`'admin' logged in successfully\nContext '${server.url}' updated\n`);
    expect((await stat(configFile(adminHome))).mode & 0o777).to.equal(0o600);
    expect((await stat(join(adminHome, '.config', 'svc'))).mode & 0o777).to.equal(0o700);
    expect(await storedToken(adminHome)).to.match(JWT);
  });

  it('lists accounts as a table, JSON, YAML and wide', async () => {
    // Four reads that change nothing: run together.
    const [table, json, yaml, wide] = await Promise.all([
      svc(adminHome, ['account', 'list']),
      svc(adminHome, ['account', 'list', '-o', 'json']),
      svc(adminHome, ['account', 'list', '-o', 'yaml']),
      svc(adminHome, ['account', 'list', '-o', 'wide']),
    ]);
    expect(table.code, table.stderr).to.equal(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).to.match(/^NAME\s+ENABLED\s+CAPABILITIES$/);
    expect(lines.slice(1).map((l) => l.split(/\s{3,}/))).to.deep.include.members([
      ['admin', 'true', 'login'],
      ['alice', 'true', 'apiKey, login'],
    ]);

    expect(json.code, json.stderr).to.equal(0);
    const items = (JSON.parse(json.stdout) as { items: { name: string; enabled: boolean; capabilities: string[] }[] }).items;
    expect(items.find((a) => a.name === 'alice')).to.deep.include({ enabled: true, capabilities: ['apiKey', 'login'] });

    expect(yaml.code, yaml.stderr).to.equal(0);
    expect((YAML.parse(yaml.stdout) as { items: unknown[] }).items).to.deep.equal(items);

    expect(wide.code, wide.stderr).to.equal(0);
    expect(wide.stdout.split('\n')[0]).to.match(/^NAME\s+ENABLED\s+CAPABILITIES\s+TOKENS\s+NEXT EXPIRY$/);
    expect(wide.stdout).to.match(/\nalice\s+true\s+apiKey, login\s+0\s+-\n/);
  });

  it('gets the logged-in account by default, and another one with --account', async () => {
    // Three reads that change nothing: run together.
    const [me, alice, nobody] = await Promise.all([
      svc(adminHome, ['account', 'get']),
      svc(adminHome, ['account', 'get', '--account', 'alice', '-o', 'json']),
      svc(adminHome, ['account', 'get', '--account', 'nobody']),
    ]);
    expect(me.code, me.stderr).to.equal(0);
    expect(me.stdout).to.match(/^Name:\s+admin\nEnabled:\s+true\nCapabilities:\s+login\n\nTokens:\nNONE\n$/);
    expect(alice.code, alice.stderr).to.equal(0);
    expect(JSON.parse(alice.stdout)).to.deep.equal({ name: 'alice', enabled: true, capabilities: ['apiKey', 'login'], tokens: [] });
    expectOneErrorLine(nobody, "account 'nobody' does not exist");
  });

  let apiToken = '';

  it('generates an API token that prints alone and works as SVC_AUTH_TOKEN', async () => {
    const generated = await svc(adminHome, ['account', 'generate-token', '--account', 'alice', '--id', 'ci', '--expires-in', '1h']);
    expect(generated.code, generated.stderr).to.equal(0);
    expect(generated.stdout).to.match(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    apiToken = generated.stdout.trim();

    const viaEnv = await svc(aliceHome, ['account', 'get', '-o', 'json'], { SVC_SERVER: server.url, SVC_AUTH_TOKEN: apiToken });
    expect(viaEnv.code, viaEnv.stderr).to.equal(0);
    const account = JSON.parse(viaEnv.stdout) as { name: string; tokens: { id: string; issuedAt: number; expiresAt: number }[] };
    expect(account.name).to.equal('alice');
    expect(account.tokens.map((t) => t.id)).to.deep.equal(['ci']);
    const [token] = account.tokens;
    expect(token!.expiresAt - token!.issuedAt).to.equal(3600);
  });

  it('deletes the API token, after which it no longer works', async () => {
    const deleted = await svc(adminHome, ['account', 'delete-token', '--account', 'alice', 'ci']);
    expect(deleted.code, deleted.stderr).to.equal(0);
    // The deleted token's use and a second delete, both after the first: run together.
    const [after, again] = await Promise.all([
      svc(aliceHome, ['account', 'get'], { SVC_SERVER: server.url, SVC_AUTH_TOKEN: apiToken }),
      svc(adminHome, ['account', 'delete-token', '--account', 'alice', 'ci']),
    ]);
    expect(after.code).to.equal(1);
    expect(after.stdout).to.equal('');
    expect(after.stderr).to.equal(`svc: the server does not accept the token (expired, revoked or deleted) (run 'svc login ${server.url}')\n`);
    expect(after.stderr).to.not.include(apiToken);
    expectOneErrorLine(again, "token with id 'ci' does not exist for account 'alice'");
  });

  it('answers can-i with yes or no and exit 0 either way', async () => {
    const login = await svc(aliceHome, ['login', server.url, '--username', 'alice', '--password', ALICE_PASSWORD]);
    expect(login.code, login.stderr).to.equal(0);
    // Three questions that change nothing: run together.
    const [adminYes, aliceNo, aliceYes] = await Promise.all([
      svc(adminHome, ['account', 'can-i', 'update', 'accounts', 'alice']),
      svc(aliceHome, ['account', 'can-i', 'update', 'accounts', 'admin']),
      svc(aliceHome, ['account', 'can-i', 'get', 'accounts', 'admin']),
    ]);
    expect(adminYes).to.deep.include({ code: 0, stdout: 'yes\n', stderr: '' });
    expect(aliceNo).to.deep.include({ code: 0, stdout: 'no\n', stderr: '' });
    expect(aliceYes).to.deep.include({ code: 0, stdout: 'yes\n', stderr: '' });
  });

  it('updates the own password, keeps the stored context working, and the new password logs in', async () => {
    const before = await storedToken(aliceHome);
    const updated = await svc(aliceHome, [
      'account', 'update-password', '--current-password', ALICE_PASSWORD, '--new-password', ALICE_NEW_PASSWORD,
    ]);
    expect(updated.code, updated.stderr).to.equal(0);
    expect(updated.stdout).to.equal(`Password updated\nContext '${server.url}' updated\n`);
    expect(await storedToken(aliceHome)).to.match(JWT).and.not.equal(before);
    // The stored context, the old session and the old password, none of which writes anything
    // (a refused login stores nothing): run together.
    const [still, old, oldPassword] = await Promise.all([
      svc(aliceHome, ['account', 'get']),
      // The session from before the change is dead.
      svc(aliceHome, ['account', 'get'], { SVC_SERVER: server.url, SVC_AUTH_TOKEN: before ?? '' }),
      svc(aliceHome, ['login', server.url, '--username', 'alice', '--password', ALICE_PASSWORD]),
    ]);
    expect(still.code, still.stderr).to.equal(0);
    expect(still.stdout).to.match(/^Name:\s+alice\n/);
    expect(old.code).to.equal(1);
    expectOneErrorLine(oldPassword, 'invalid username or password');
    const again = await svc(aliceHome, ['login', server.url, '--username', 'alice', '--password', ALICE_NEW_PASSWORD]);
    expect(again.code, again.stderr).to.equal(0);
  });

  it('asks for the flag when a password is missing and stdin is not a terminal', async () => {
    expectOneErrorLine(
      await svc(aliceHome, ['account', 'update-password', '--new-password', 'x-y-z-123456']),
      '--current-password is required (stdin is not a terminal, so svc cannot prompt for it)',
    );
  });

  it("prints the client's version, and the logged-in server's from /api/version", async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    // Three reads that change nothing: run together.
    const [both, client, nowhere] = await Promise.all([
      svc(adminHome, ['version']),
      svc(adminHome, ['version', '--client']),
      svc(makeTempDir('svc-home-none-'), ['version']),
    ]);
    expect(both.code, both.stderr).to.equal(0);
    expect(both.stdout).to.equal(`svc: ${version}\nsvc-server: ${version} (${server.url})\n`);
    expect(client.stdout).to.equal(`svc: ${version}\n`);
    expect(nowhere.stdout, 'no server known: the client only').to.equal(`svc: ${version}\n`);
  });

  it('logs out: the token is revoked on the server and removed from the file', async () => {
    const token = await storedToken(adminHome);
    expect(token).to.match(JWT);
    const out = await svc(adminHome, ['logout']);
    expect(out.code, out.stderr).to.equal(0);
    expect(out.stdout).to.equal(`Logged out from '${server.url}'\n`);
    expect(await storedToken(adminHome)).to.equal(undefined);
    expect((await stat(configFile(adminHome))).mode & 0o777).to.equal(0o600);

    // Two reads after the logout: run together.
    const [notLoggedIn, revoked] = await Promise.all([
      svc(adminHome, ['account', 'list']),
      svc(adminHome, ['account', 'list'], { SVC_AUTH_TOKEN: token ?? '' }),
    ]);
    expectOneErrorLine(notLoggedIn, `not logged in to ${server.url}: run 'svc login ${server.url}' or set SVC_AUTH_TOKEN`);
    expect(revoked.code).to.equal(1);
    expect(revoked.stdout).to.equal('');
    expect(revoked.stderr).to.match(new RegExp(`^svc: [^\\n]+ \\(run 'svc login ${server.url}'\\)\\n$`));
    expect(revoked.stderr).to.not.include(token ?? 'no token');
  });
});

describe('e2e: the svc CLI against a server with a self-signed certificate', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let server: TestServer;
  let dir: string;
  let home: string;

  before(async () => {
    dir = makeTempDir('svc-cli-tls-');
    home = join(dir, 'home');
    const certFile = join(dir, 'cert.pem');
    const keyFile = join(dir, 'key.pem');
    await execFileAsync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile,
    ]);
    const configDir = join(dir, 'config');
    mkdirSync(configDir);
    writeFileSync(join(configDir, 'svc-secret.yaml'), secret('svc-secret', {
      'server.secretkey': randomBytes(32).toString('base64'),
      'admin.password': bcrypt.hashSync(ADMIN_PASSWORD, 4),
      'admin.passwordMtime': '2024-01-01T00:00:00Z',
    }));
    writeFileSync(join(configDir, 'svc-cm.yaml'), configMap('svc-cm', {}));
    writeFileSync(join(configDir, 'svc-rbac-cm.yaml'), configMap('svc-rbac-cm', {}));
    server = await startTestServer(configDir, { env: {}, tls: { certFile, keyFile } });
  });

  after(async () => {
    await server?.close(1000);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const svc = (args: readonly string[]): Promise<RunResult> => runEntry(CLI_ENTRY, args, { PATH: process.env['PATH'], HOME: home });

  it('refuses the certificate unless --insecure, then remembers the switch for the server', async () => {
    expect(server.url).to.match(/^https:/);
    const refused = await svc(['login', server.url, '--username', 'admin', '--password', ADMIN_PASSWORD]);
    expect(refused.code).to.equal(1);
    // Node 24's own message names --use-system-ca (NODE_OPTIONS) for a CA in the system store.
    expect(refused.stderr).to.equal(`svc: cannot reach ${server.url}: self-signed certificate; if the root CA is installed locally, try running Node.js with --use-system-ca (pass --insecure to skip certificate verification)\n`);

    const login = await svc(['login', server.url, '--insecure', '--username', 'admin', '--password', ADMIN_PASSWORD]);
    expect(login.code, login.stderr).to.equal(0);
    const get = await svc(['account', 'get', '-o', 'json']);
    expect(get.code, get.stderr).to.equal(0);
    expect(JSON.parse(get.stdout)).to.deep.include({ name: 'admin' });
  });
});
