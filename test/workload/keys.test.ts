/**
 * An issuer's key cache against the GitHub Actions stand-in over HTTPS: its discovery and key
 * set are read once, a token naming an unknown key fetches the set again at most once a minute
 * (the clock is injected), and an issuer that cannot be reached is Unavailable, not a refusal.
 */
import { expect } from 'chai';
import { Unavailable } from '../../src/errors.js';
import { createTlsFetch, type TlsFetch } from '../../src/lib/tls-fetch.js';
import type { WorkloadIssuer } from '../../src/workload/config.js';
import { createIssuerKeys } from '../../src/workload/keys.js';
import { startFakeGithubActions, type FakeGithubActions } from '../helpers/fake-github-actions.js';
import { makeSigningKey } from '../helpers/fake-oidc-keys.js';

describe('workload issuer keys', function () {
  this.timeout(20_000);
  let github: FakeGithubActions;
  let tls: TlsFetch;
  let entry: WorkloadIssuer;
  let now: number;

  before(async () => {
    github = await startFakeGithubActions();
    tls = createTlsFetch({ rootCAs: [github.caPem] });
  });
  beforeEach(() => {
    github.publishKeys([github.key]);
    now = 1_000_000;
    entry = { name: 'github', issuer: github.issuer, audiences: ['svc'], claims: [], subject: { source: '{{sub}}', parts: [] }, groups: [], maxTokenLifetimeMs: 3_600_000 };
  });
  after(async () => {
    await tls.close();
    await github.close();
  });

  const keysFor = (e: WorkloadIssuer = entry) => createIssuerKeys(e, { fetch: tls.fetch, now: () => now });

  it('reads the algorithms the discovery document publishes and finds the key by kid', async () => {
    const keys = keysFor();
    expect(await keys.algorithms()).to.deep.equal(['RS256']);
    const found = await keys.keyFor({ alg: 'RS256', kid: github.key.kid });
    expect(found).to.have.property('key');
  });

  it('fetches the set again for an unknown kid at most once a minute, and then finds a rotated key', async () => {
    const keys = keysFor();
    const start = github.jwksFetches;
    await keys.algorithms();
    expect(github.jwksFetches - start).to.equal(1);

    const rotated = await makeSigningKey('rotated');
    github.publishKeys([github.key, rotated]);
    // Within the minute: no fetch, the key is not known yet.
    now += 30_000;
    expect(await keys.keyFor({ alg: 'RS256', kid: 'rotated' })).to.have.property('missing');
    expect(github.jwksFetches - start).to.equal(1);
    // A minute after the last fetch: one fetch, which finds it.
    now += 30_000;
    expect(await keys.keyFor({ alg: 'RS256', kid: 'rotated' })).to.have.property('key');
    expect(github.jwksFetches - start).to.equal(2);
    // A kid the issuer never published: refused after one more fetch, then none for a minute.
    now += 60_000;
    const missing = await keys.keyFor({ alg: 'RS256', kid: 'forged-1' });
    expect(missing).to.deep.equal({ missing: "no key of the issuer's key set matches the token's kid 'forged-1' and alg 'RS256'" });
    expect(github.jwksFetches - start).to.equal(3);
    for (let i = 2; i < 20; i++) await keys.keyFor({ alg: 'RS256', kid: `forged-${i}` });
    expect(github.jwksFetches - start).to.equal(3);
  });

  it('takes the algorithms from the keys when the entry names a jwksURL instead of discovery', async () => {
    const keys = keysFor({ ...entry, jwksURL: `${github.issuer}/.well-known/jwks` });
    expect(await keys.algorithms()).to.deep.equal(['RS256']);
  });

  it('is Unavailable when the discovery names another issuer, or the issuer cannot be reached or trusted', async () => {
    await expectUnavailable(keysFor({ ...entry, issuer: `${github.issuer}/` }), /^the discovery document of workload issuer 'github' names another issuer/);
    await expectUnavailable(keysFor({ ...entry, issuer: 'https://127.0.0.1:1' }), /^the discovery document of workload issuer 'github' cannot be read from https:\/\/127\.0\.0\.1:1\/\.well-known\/openid-configuration: /);
    const untrusting = createTlsFetch();
    try {
      await expectUnavailable(createIssuerKeys(entry, { fetch: untrusting.fetch, now: () => now }), /certificate verification failed/);
    } finally {
      await untrusting.close();
    }
  });

  it('never uses keys older than ten minutes: an issuer down by then cannot be checked, and is not asked again for 5 s', async () => {
    const issuer = await startFakeGithubActions();
    const own = createTlsFetch({ rootCAs: [issuer.caPem] });
    try {
      const keys = createIssuerKeys({ ...entry, issuer: issuer.issuer }, { fetch: own.fetch, now: () => now });
      expect(await keys.keyFor({ alg: 'RS256', kid: issuer.key.kid })).to.have.property('key');
      await issuer.goDown();
      now += 9 * 60_000;
      expect(await keys.keyFor({ alg: 'RS256', kid: issuer.key.kid })).to.have.property('key');
      now += 60_000;
      await expectUnavailable(keys, /cannot be read from/);
      const started = Date.now();
      await expectUnavailable(keys, /cannot be read from/);
      expect(Date.now() - started).to.be.below(50);
    } finally {
      await own.close();
    }
  });
});

async function expectUnavailable(keys: ReturnType<typeof createIssuerKeys>, message: RegExp): Promise<void> {
  try {
    await keys.algorithms();
  } catch (err: unknown) {
    expect(err).to.be.instanceOf(Unavailable);
    expect((err as Error).message).to.match(message);
    return;
  }
  expect.fail('the keys loaded');
}
