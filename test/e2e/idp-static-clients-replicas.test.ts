/**
 * Static clients change while two replicas (separate processes sharing Redis and one config dir)
 * run: a client added to idp.config is served by both without a restart, a changed one (its
 * redirect URI, its secret) is served as changed, and a removed one is refused, on each replica.
 *
 * Each replica is asked directly: the authorization endpoint (a known client with a registered
 * redirect URI goes on to the login, 303; anything else is a 400 page) and the token endpoint
 * (the client's secret: a right one reaches the code check, invalid_grant; a wrong one or an
 * unknown client is invalid_client). The connector is never reached. Wrong secrets at one replica
 * lock the client at the other too: the throttle's count is in Redis.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';
import { DEFAULT_MAX_FAIL_COUNT } from '../../src/session/limits.js';
import { waitFor } from '../helpers/accounts-fixture.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { startReplica, stopReplica, type Replica } from '../helpers/replica-process.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'idp-static-clients-replicas-secret-key-0123456789';
const CONNECTORS = [{ type: 'ldap', id: 'corp', name: 'Corp', config: { host: 'ldap.invalid', userSearch: { baseDN: 'ou=people', username: 'uid', idAttr: 'uid' } } }];
const SECRETS = { 'server.secretkey': SECRET_KEY, 'wiki.secret': 'first-secret-0123456789', 'wiki.secret2': 'second-secret-0123456789' };
/** Longer than the store's polling and a replica's reload, shorter than a test's patience. */
const CHANGE_MS = 15_000;

type Outcome = 'login' | 'refused';

describe('e2e: static clients added, changed and removed while two replicas run (Redis)', function () {
  cleanUpTempDirs();
  this.timeout(90_000);
  let redis: RedisPeer;
  let replicas: Replica[];
  let dir: string;
  let url: string;

  const cm = (staticClients: unknown[]) => configMap('svc-cm', { url, 'idp.config': YAML.stringify({ connectors: CONNECTORS, staticClients }) });
  const setClients = (staticClients: unknown[]) => writeFile(join(dir, 'svc-cm.yaml'), cm(staticClients));

  before(async function () {
    redis = await startRedis();
    url = `http://127.0.0.1:${await freePort()}`;
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url, 'idp.config': YAML.stringify({ connectors: CONNECTORS }) }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', SECRETS),
    });
    replicas = await Promise.all([startReplica(dir, redis.url), startReplica(dir, redis.url)]);
  });

  after(async function () {
    await Promise.all((replicas ?? []).map((r) => stopReplica(r)));
    await redis?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  async function authorize(replica: Replica, clientId: string, redirectUri: string): Promise<Outcome> {
    const res = await fetch(`${replica.url}/api/idp/auth?${new URLSearchParams({
      client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid', state: 's',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256',
    })}`, { redirect: 'manual' });
    await res.arrayBuffer();
    if (res.status === 303 && String(res.headers.get('location')).includes('/api/idp/interaction/')) return 'login';
    expect(res.status, `${clientId} at ${replica.url}`).to.equal(400);
    expect(res.headers.get('location')).to.equal(null);
    return 'refused';
  }

  /** invalid_grant: the client and its secret were accepted; invalid_client: they were not. */
  async function tokenError(replica: Replica, clientId: string, clientSecret: string): Promise<string> {
    const res = await fetch(`${replica.url}/api/idp/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'not-a-code', redirect_uri: 'https://wiki.example.org/cb' }),
    });
    return String(((await res.json()) as { error?: string }).error);
  }

  async function onEveryReplica(what: string, check: (replica: Replica) => Promise<boolean>): Promise<void> {
    await Promise.all(replicas.map((replica) => waitFor(() => check(replica), `${what} on ${replica.url}`, CHANGE_MS)));
  }

  it('refuses an unknown client on both replicas', async function () {
    for (const replica of replicas) {
      expect(await authorize(replica, 'wiki', 'https://wiki.example.org/cb')).to.equal('refused');
      expect(await tokenError(replica, 'wiki', SECRETS['wiki.secret'])).to.equal('invalid_client');
    }
  });

  it('serves a client added to idp.config on both replicas, without a restart', async function () {
    await setClients([{ id: 'wiki', name: 'Wiki', secret: '$wiki.secret', redirectURIs: ['https://wiki.example.org/cb'] }]);
    await onEveryReplica('the new client', async (r) => (await authorize(r, 'wiki', 'https://wiki.example.org/cb')) === 'login');
    for (const replica of replicas) {
      expect(await tokenError(replica, 'wiki', SECRETS['wiki.secret'])).to.equal('invalid_grant');
      expect(await tokenError(replica, 'wiki', 'wrong')).to.equal('invalid_client');
      expect(await authorize(replica, 'wiki', 'https://elsewhere.example.org/cb')).to.equal('refused');
    }
  });

  it('serves a changed client as changed: its new redirect URI and secret, not the old ones', async function () {
    await setClients([{ id: 'wiki', name: 'Wiki', secret: '$wiki.secret2', redirectURIs: ['https://wiki.example.org/new'] }]);
    await onEveryReplica('the changed client', async (r) => (await authorize(r, 'wiki', 'https://wiki.example.org/new')) === 'login');
    for (const replica of replicas) {
      expect(await authorize(replica, 'wiki', 'https://wiki.example.org/cb')).to.equal('refused');
      expect(await tokenError(replica, 'wiki', SECRETS['wiki.secret2'])).to.equal('invalid_grant');
      expect(await tokenError(replica, 'wiki', SECRETS['wiki.secret'])).to.equal('invalid_client');
    }
  });

  it('keeps the last good version of a client changed into a bad one', async function () {
    await setClients([
      { id: 'wiki', name: 'Wiki', secret: '$wiki.secret2', redirectURIs: ['https://wiki.example.org/bad#fragment'] },
      { id: 'marker', public: true, redirectURIs: ['http://127.0.0.1/cb'] },
    ]);
    // The good client added with it shows the change has been read.
    await onEveryReplica('the marker client', async (r) => (await authorize(r, 'marker', 'http://127.0.0.1/cb')) === 'login');
    for (const replica of replicas) expect(await authorize(replica, 'wiki', 'https://wiki.example.org/new')).to.equal('login');
  });

  it('refuses a removed client on both replicas', async function () {
    await setClients([{ id: 'marker', public: true, redirectURIs: ['http://127.0.0.1/cb'] }]);
    await onEveryReplica('the removal', async (r) => (await authorize(r, 'wiki', 'https://wiki.example.org/new')) === 'refused');
    for (const replica of replicas) {
      expect(await tokenError(replica, 'wiki', SECRETS['wiki.secret2'])).to.equal('invalid_client');
      expect(await authorize(replica, 'marker', 'http://127.0.0.1/cb')).to.equal('login');
    }
  });

  it('locks a client on both replicas after too many wrong secrets at one (the count is in Redis)', async function () {
    await setClients([{ id: 'locked', name: 'Locked', secret: '$wiki.secret', redirectURIs: ['https://wiki.example.org/cb'] }]);
    await onEveryReplica('the new client', async (r) => (await authorize(r, 'locked', 'https://wiki.example.org/cb')) === 'login');
    const [first, second] = replicas as [Replica, Replica];
    for (let i = 0; i < DEFAULT_MAX_FAIL_COUNT; i += 1) expect(await tokenError(first, 'locked', `guess-${i}`)).to.equal('invalid_client');
    const res = await fetch(`${second.url}/api/idp/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`locked:${SECRETS['wiki.secret']}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'not-a-code', redirect_uri: 'https://wiki.example.org/cb' }),
    });
    expect(res.status).to.equal(429);
    expect(Number(res.headers.get('retry-after'))).to.be.greaterThan(0);
    expect(((await res.json()) as { error: string }).error).to.equal('invalid_client');
  });
});
