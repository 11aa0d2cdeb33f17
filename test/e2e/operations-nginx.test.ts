/**
 * docs/operations.md's nginx example, run: the ```nginx block of the doc, with only the two
 * replica addresses, the listen line and the certificate paths replaced, in front of two svc
 * processes on one Redis and one config dir (real nginx, real redis-server). A login through it,
 * the session on both replicas, a logout through it that holds on both, /metrics not served
 * through it, logins going on while one replica is stopped, and the runbook's recovery of a
 * locked-out admin with `svc-server login unlock`.
 */
import { expect } from 'chai';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Agent, fetch } from 'undici';
import { runLoginUnlock } from '../../src/commands/login-unlock.js';
import { accountsConfigDir, PASSWORDS } from '../helpers/accounts-fixture.js';
import { freePort, startPeer, startRedis, type Peer, type RedisPeer } from '../helpers/peers.js';
import { startReplica, stopReplica, type Replica } from '../helpers/replica-process.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const DOC = new URL('../../docs/operations.md', import.meta.url);

/** The doc's one ```nginx block, as written. */
function docNginxConfig(): string {
  const blocks = [...readFileSync(DOC, 'utf8').matchAll(/```nginx\n([\s\S]*?)```/g)].map((m) => m[1] as string);
  expect(blocks, 'docs/operations.md has one nginx block').to.have.length(1);
  return blocks[0] as string;
}

/** Replaces `from` (which must occur exactly once, so the doc and the test cannot drift apart) with `to`. */
function replaceOnce(text: string, from: string, to: string): string {
  expect(text.split(from).length - 1, `'${from}' in the doc's nginx block`).to.equal(1);
  return text.replace(from, to);
}

const hostPort = (url: string): string => new URL(url).host;

/** JSON, or the text as it came (nginx's own pages are HTML). */
function parseBody(text: string): Record<string, unknown> {
  if (text === '') return {};
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { text };
  }
}

describe('e2e: docs/operations.md nginx example, in front of two replicas on one Redis', function () {
  cleanUpTempDirs();
  this.timeout(90_000);
  let redis: RedisPeer;
  let nginx: Peer;
  let work: string;
  let dir: string;
  let a: Replica;
  let b: Replica;
  let base: string;
  let agent: Agent;

  interface Reply {
    status: number;
    body: Record<string, unknown>;
    setCookie: string[];
  }
  async function call(url: string, method: string, path: string, options: { token?: string; body?: unknown } = {}): Promise<Reply> {
    const headers: Record<string, string> = {};
    if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(url + path, { method, headers, dispatcher: agent, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: parseBody(text), setCookie: res.headers.getSetCookie() };
  }
  const loginThrough = (password: string) => call(base, 'POST', '/api/v1/session', { body: { username: 'admin', password } });
  const who = async (url: string, token: string) => (await call(url, 'GET', '/api/v1/session/userinfo', { token })).body['username'] ?? 'anonymous';

  before(async function () {
    redis = await startRedis();
    const port = await freePort();
    base = `https://127.0.0.1:${String(port)}`;
    work = makeTempDir('svc-ops-nginx-');
    const ca = makeTestCa();
    agent = new Agent({ connect: { ca: ca.caPem } });
    writeFileSync(join(work, 'svc.crt'), ca.certPem);
    writeFileSync(join(work, 'svc.key'), ca.keyPem, { mode: 0o600 });
    dir = accountsConfigDir({ cm: { url: base } });
    const env = { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '3' };
    [a, b] = await Promise.all([startReplica(dir, redis.url, env), startReplica(dir, redis.url, env)]);
    let site = docNginxConfig();
    site = replaceOnce(site, '10.0.0.11:8080', hostPort(a.url));
    site = replaceOnce(site, '10.0.0.12:8080', hostPort(b.url));
    site = replaceOnce(site, 'listen 443 ssl;', `listen 127.0.0.1:${String(port)} ssl;`);
    site = replaceOnce(site, '/etc/nginx/tls/svc.crt', join(work, 'svc.crt'));
    site = replaceOnce(site, '/etc/nginx/tls/svc.key', join(work, 'svc.key'));
    writeFileSync(join(work, 'svc.conf'), site);
    nginx = await startPeer('start-nginx-site.sh', [String(port), join(work, 'svc.conf')]);
  });

  after(async function () {
    await nginx?.stop();
    await Promise.all([stopReplica(a), stopReplica(b)]);
    await redis?.stop();
    await agent?.close();
    rmSync(work, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('logs in through nginx; the session works on both replicas; a logout through nginx holds on both', async function () {
    const login = await loginThrough(PASSWORDS.admin);
    expect(login.status).to.equal(200);
    const token = String(login.body['token']);
    // `url` is https: the cookie is Secure although svc itself speaks plain http behind nginx.
    expect(login.setCookie.join('\n')).to.match(/svc\.token=[^;]+;.*secure/i);
    for (let i = 0; i < 4; i++) expect(await who(base, token), `through nginx, request ${i}`).to.equal('admin');
    for (const replica of [a, b]) expect(await who(replica.url, token), replica.url).to.equal('admin');
    // nginx keeps /metrics to itself.
    expect((await call(base, 'GET', '/metrics')).status).to.equal(404);

    const logout = await call(base, 'DELETE', '/api/v1/session', { token });
    expect(logout.body).to.deep.equal({ revoked: true });
    for (const replica of [a, b]) expect(await who(replica.url, token), `after logout, ${replica.url}`).to.equal('anonymous');
    expect(await who(base, token)).to.equal('anonymous');
  });

  it('a locked-out admin is let in again by svc-server login unlock, as the runbook says', async function () {
    for (let i = 0; i < 3; i++) expect((await loginThrough(`wrong-${i}`)).status).to.equal(401);
    expect((await loginThrough(PASSWORDS.admin)).status, 'locked on every replica').to.equal(429);
    let out = '';
    const sink = new Writable({ write(chunk: Buffer, _e, done) { out += chunk.toString(); done(); } });
    expect(await runLoginUnlock(redis.url, 'admin', sink, sink)).to.equal(0);
    // The three failures and the refused attempt while locked.
    expect(out).to.equal('"admin": lockout lifted; 4 counted attempt(s) forgotten\n');
    expect((await loginThrough(PASSWORDS.admin)).status).to.equal(200);
  });

  it('with one replica stopped, nginx sends every login to the other', async function () {
    await stopReplica(a);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await loginThrough(PASSWORDS.admin)).status);
    expect(statuses).to.deep.equal([200, 200, 200, 200, 200, 200]);
  });
});
