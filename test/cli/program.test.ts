import { expect } from 'chai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { run } from '../../src/cli/program.js';
import { fakeIo, scriptedFetch, type RecordedRequest } from './fake-io.js';

const SERVER = 'http://svc.test:8080';

describe('cli/program: errors, exit codes, flags and environment', () => {
  let home: string;
  beforeEach(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'svc-cli-home-'));
  });
  afterEach(async () => {
    await rm(home, { recursive: true, force: true });
  });

  async function svc(args: string[], reply: (r: RecordedRequest) => { status: number; body?: unknown; text?: string }, env: Record<string, string> = {}) {
    const { fetch, requests } = scriptedFetch(reply);
    const io = fakeIo({ HOME: home, ...env }, fetch);
    const code = await run(args, io.io);
    return { code, stdout: io.stdout(), stderr: io.stderr(), requests };
  }

  it('maps an API error body to one stderr line and exit 1', async () => {
    const r = await svc(['login', SERVER, '--username', 'admin', '--password', 'bad'], () => ({
      status: 401,
      body: { error: 'invalid_credentials', message: 'invalid username or password' },
    }));
    expect(r).to.include({ code: 1, stdout: '', stderr: 'svc: invalid username or password\n' });
  });

  it('tells an unauthenticated user to log in again', async () => {
    const r = await svc(['account', 'list'], () => ({ status: 401, body: { error: 'unauthenticated', message: 'token is revoked' } }), {
      SVC_SERVER: SERVER,
      SVC_AUTH_TOKEN: 'tok',
    });
    expect(r).to.include({ code: 1, stderr: `svc: token is revoked (run 'svc login ${SERVER}')\n` });
  });

  it('reports a non-JSON error by status, never by body', async () => {
    const r = await svc(['account', 'list'], () => ({ status: 502, text: '<html>Bad Gateway</html>' }), {
      SVC_SERVER: SERVER,
      SVC_AUTH_TOKEN: 'tok',
    });
    expect(r).to.include({ code: 1, stderr: 'svc: the server answered 502 Bad Gateway\n' });
  });

  it('reports an unreachable server with its address and the cause, in one line', async () => {
    const io = fakeIo({ HOME: home }, () => Promise.reject(new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }) })));
    const code = await run(['login', SERVER, '--username', 'a', '--password', 'b'], io.io);
    expect(code).to.equal(1);
    expect(io.stderr()).to.equal(`svc: cannot reach ${SERVER}: connect ECONNREFUSED 127.0.0.1:9\n`);
  });

  it('suggests --insecure for a self-signed certificate', async () => {
    const cause = Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    const io = fakeIo({ HOME: home }, () => Promise.reject(new TypeError('fetch failed', { cause })));
    expect(await run(['login', 'https://x:1', '--username', 'a', '--password', 'b'], io.io)).to.equal(1);
    expect(io.stderr()).to.equal('svc: cannot reach https://x:1: self-signed certificate (pass --insecure to skip certificate verification)\n');
  });

  it('suggests --plaintext when the server answers plain http to TLS (a real server), and keeps --insecure for certificates', async () => {
    const plain = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    try {
      const server = `https://127.0.0.1:${(plain.address() as AddressInfo).port}`;
      const io = fakeIo({ HOME: home });
      expect(await run(['login', server, '--username', 'a', '--password', 'b'], io.io)).to.equal(1);
      expect(io.stderr()).to.equal(`svc: cannot reach ${server}: the server speaks plain http, not TLS (log in with HOST:PORT --plaintext, or an http:// URL)\n`);
    } finally {
      plain.close();
    }
  });

  it('turns usage mistakes into one line and exit 1', async () => {
    const none = () => ({ status: 500 });
    expect(await svc(['account', 'bogus'], none)).to.include({ code: 1, stderr: "svc: unknown command 'bogus'\n" });
    expect(await svc(['login'], none)).to.include({ code: 1, stderr: "svc: missing required argument 'server'\n" });
    expect(await svc(['account', 'list', '--nope'], none)).to.include({ code: 1, stderr: "svc: unknown option '--nope'\n" });
    expect(await svc(['account', 'list'], none)).to.include({ code: 1, stderr: "svc: no server: run 'svc login <server>', pass --server or set SVC_SERVER\n" });
    expect(await svc(['account', 'list', '--server', SERVER], none)).to.include({
      code: 1,
      stderr: `svc: not logged in to ${SERVER}: run 'svc login ${SERVER}' or set SVC_AUTH_TOKEN\n`,
    });
    expect(await svc(['login', 'ftp://x', '--username', 'a', '--password', 'b'], none)).to.include({
      code: 1,
      stderr: "svc: 'ftp://x' is not a server address (the scheme must be http or https)\n",
    });
    const noSso = () => ({ status: 200, body: { url: SERVER, idpConnectors: [], userLoginsDisabled: false } });
    expect(await svc(['login', SERVER, '--sso'], noSso)).to.include({
      code: 1,
      stderr: `svc: ${SERVER} offers no single sign-on; log in with --username and --password\n`,
    });
    expect(await svc(['login', SERVER, '--sso', '--username', 'a'], none)).to.include({
      code: 1,
      stderr: 'svc: --sso logs in at the identity provider; leave out --username and --password\n',
    });
    expect(await svc(['login', SERVER, '--no-browser', '--username', 'a', '--password', 'b'], none)).to.include({
      code: 1,
      stderr: 'svc: --no-browser goes with --sso\n',
    });
    expect(await svc(['login', SERVER, '--sso', '--sso-port', 'http'], none)).to.include({
      code: 1,
      stderr: "svc: --sso-port must be a port number (0-65535), not 'http'\n",
    });
  });

  it('asks for the flag when a password is missing and stdin is not a terminal', async () => {
    const r = await svc(['login', SERVER, '--username', 'admin'], () => ({ status: 500 }));
    expect(r).to.include({ code: 1, stderr: 'svc: --password is required (stdin is not a terminal, so svc cannot prompt for it)\n' });
    expect(r.requests).to.have.length(0);
  });

  it('answers a missing command with one line and exit 1, not the whole help', async () => {
    const none = () => ({ status: 500 });
    expect(await svc([], none)).to.include({ code: 1, stdout: '', stderr: 'svc: missing command (see svc --help)\n' });
    expect(await svc(['account'], none)).to.include({ code: 1, stdout: '', stderr: 'svc: missing command (see svc account --help)\n' });
    const help = await svc(['account', '--help'], none);
    expect(help).to.include({ code: 0, stderr: '' });
    expect(help.stdout).to.include('Usage: svc account');
  });

  it('exits 0 with help on stdout for --help', async () => {
    const r = await svc(['--help'], () => ({ status: 500 }));
    expect(r.code).to.equal(0);
    expect(r.stdout).to.include('Usage: svc');
    expect(r.stderr).to.equal('');
  });

  it('logs in, stores the token 0600 and sends it as a bearer token afterwards', async () => {
    const login = await svc(['login', 'svc.test:8080', '--plaintext', '--username', 'admin', '--password', 'pw'], () => ({ status: 200, body: { token: 'T1' } }));
    expect(login.code).to.equal(0);
    expect(login.requests[0]).to.deep.include({ method: 'POST', url: `${SERVER}/api/v1/session`, body: { username: 'admin', password: 'pw' } });
    const file = path.join(home, '.config', 'svc', 'config');
    expect((await stat(file)).mode & 0o777).to.equal(0o600);
    expect(await readFile(file, 'utf8')).to.include('auth-token: T1');
    const list = await svc(['account', 'list', '-o', 'json'], () => ({ status: 200, body: { items: [] } }));
    expect(list).to.include({ code: 0, stdout: '{\n  "items": []\n}\n' });
    expect(list.requests[0]?.headers['authorization']).to.equal('Bearer T1');
  });

  it('prefers --server/--auth-token over SVC_SERVER/SVC_AUTH_TOKEN over the config file', async () => {
    await svc(['login', SERVER, '--username', 'admin', '--password', 'pw'], () => ({ status: 200, body: { token: 'FILE' } }));
    const fromEnv = await svc(['account', 'can-i', 'get', 'accounts', 'x'], () => ({ status: 200, body: { value: 'no' } }), {
      SVC_SERVER: 'http://env.test',
      SVC_AUTH_TOKEN: 'ENV',
    });
    expect(fromEnv).to.include({ code: 0, stdout: 'no\n' });
    expect(fromEnv.requests[0]).to.deep.include({ url: 'http://env.test/api/v1/account/can-i/accounts/get/x' });
    expect(fromEnv.requests[0]?.headers['authorization']).to.equal('Bearer ENV');
    const fromFlags = await svc(
      ['--server', 'http://flag.test', '--auth-token', 'FLAG', 'account', 'can-i', 'update', 'accounts', 'a/b'],
      () => ({ status: 200, body: { value: 'yes' } }),
      { SVC_SERVER: 'http://env.test', SVC_AUTH_TOKEN: 'ENV' },
    );
    expect(fromFlags).to.include({ code: 0, stdout: 'yes\n' });
    expect(fromFlags.requests[0]).to.deep.include({ url: 'http://flag.test/api/v1/account/can-i/accounts/update/a%2Fb' });
    expect(fromFlags.requests[0]?.headers['authorization']).to.equal('Bearer FLAG');
    const fromFile = await svc(['account', 'get', '--account', 'bob', '-o', 'yaml'], () => ({
      status: 200,
      body: { name: 'bob', enabled: true, capabilities: [], tokens: [] },
    }));
    expect(fromFile.requests[0]?.headers['authorization']).to.equal('Bearer FILE');
    expect(fromFile.stdout).to.equal('name: bob\nenabled: true\ncapabilities: []\ntokens: []\n');
  });

  it('sends --expires-in as seconds and defaults --account to the logged-in user', async () => {
    const r = await svc(['account', 'generate-token', '--expires-in', '1d2h', '--id', 'ci'], (req) =>
      req.url.endsWith('/userinfo')
        ? { status: 200, body: { loggedIn: true, username: 'alice', iss: 'svc', groups: [] } }
        : { status: 200, body: { token: 'API' } },
    { SVC_SERVER: SERVER, SVC_AUTH_TOKEN: 'tok' });
    expect(r).to.include({ code: 0, stdout: 'API\n', stderr: '' });
    expect(r.requests[1]).to.deep.include({ method: 'POST', url: `${SERVER}/api/v1/account/alice/token`, body: { id: 'ci', expiresIn: 93_600 } });
    const bad = await svc(['account', 'generate-token', '--expires-in', 'soon'], () => ({ status: 500 }), { SVC_SERVER: SERVER, SVC_AUTH_TOKEN: 'tok' });
    expect(bad).to.include({ code: 1, stderr: "svc: --expires-in: 'soon' is not a duration (for example 30m, 24h, 7d, or 0 for no expiry)\n" });
  });

  it('makes a single sign-on user a personal API token, which needs --expires-in, and deletes one by id', async () => {
    const sso = (req: RecordedRequest) => req.url.endsWith('/userinfo')
      ? { status: 200, body: { loggedIn: true, username: 'CgNib2I', displayName: 'bob', iss: 'https://svc.test/api/idp', groups: ['devs'] } }
      : { status: 200, body: { id: 'id-1', token: 'SSO-TOKEN', expiresAt: '2030-01-01T00:00:00.000Z' } };
    const env = { SVC_SERVER: SERVER, SVC_AUTH_TOKEN: 'tok' };
    const made = await svc(['account', 'generate-token', '--expires-in', '30d', '--name', 'ci'], sso, env);
    expect(made).to.include({ code: 0, stdout: 'SSO-TOKEN\n', stderr: '' });
    expect(made.requests[1]).to.deep.include({ method: 'POST', url: `${SERVER}/api/v1/session/tokens`, body: { name: 'ci', expiresIn: 2_592_000 } });
    const none = await svc(['account', 'generate-token'], sso, env);
    expect(none).to.include({ code: 1, stderr: 'svc: --expires-in is required for single sign-on users: their tokens always expire (at most users.ssoTokens.maxLifetime of the server)\n' });
    expect(none.requests.map((r) => r.method)).to.deep.equal(['GET']);
    const gone = await svc(['account', 'delete-token', 'id-1'], sso, env);
    expect(gone).to.include({ code: 0 });
    expect(gone.requests[1]).to.deep.include({ method: 'DELETE', url: `${SERVER}/api/v1/session/tokens/id-1` });
  });

  it('forgets the token on logout even when the server already rejects it', async () => {
    await svc(['login', SERVER, '--username', 'admin', '--password', 'pw'], () => ({ status: 200, body: { token: 'T1' } }));
    const out = await svc(['logout'], () => ({ status: 401, body: { error: 'unauthenticated', message: 'token is revoked' } }));
    expect(out).to.include({ code: 0, stdout: `Logged out from '${SERVER}'\n` });
    expect(await readFile(path.join(home, '.config', 'svc', 'config'), 'utf8')).to.not.include('T1');
  });

  it('fails logout, but still forgets the token, when the server cannot revoke it', async () => {
    await svc(['login', SERVER, '--username', 'admin', '--password', 'pw'], () => ({ status: 200, body: { token: 'T1' } }));
    const out = await svc(['logout'], () => ({ status: 503, body: { error: 'unavailable', message: 'state backend unreachable' } }));
    expect(out).to.include({ code: 1, stderr: 'svc: token removed locally, but the server did not revoke it: state backend unreachable\n' });
    expect(await readFile(path.join(home, '.config', 'svc', 'config'), 'utf8')).to.not.include('T1');
  });
});
