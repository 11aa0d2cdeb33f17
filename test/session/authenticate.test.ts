/**
 * The authenticator's two entry points agree: `known` (synchronous, the proxy's hot path) gives
 * the principal `authenticate` gave, applies the same account rules and revocations, and steps
 * aside (undefined) whenever it would need to await something.
 */
import { expect } from 'chai';
import pino from 'pino';
import type { AccountSettings } from '../../src/accounts/config.js';
import { Unauthenticated } from '../../src/errors.js';
import { createAuthenticator } from '../../src/session/authenticate.js';
import { createLocalVerifier } from '../../src/session/local-verifier.js';
import { createRevocation, type Revocation } from '../../src/session/revocation.js';
import { createTokenSigner } from '../../src/session/tokens.js';
import { createMemoryState } from '../../src/state/memory.js';
import type { StateBackend } from '../../src/state/state.js';
import type { Principal } from '../../src/principal.js';
import { createTestVerifier, mintTestToken } from '../helpers/test-issuer.js';

const log = pino({ level: 'silent' });
/** No record of revocations was lost: the epoch refuses nothing. */
const noEpoch = { refusal: () => undefined, onMoved: () => () => undefined };

/** The message of the Unauthenticated that `run` throws, or undefined when it passes. */
async function refusal(run: () => unknown): Promise<string | undefined> {
  try {
    await run();
    return undefined;
  } catch (err: unknown) {
    expect(err).to.be.instanceOf(Unauthenticated);
    return (err as Error).message;
  }
}

describe('session/authenticate: known() and authenticate()', () => {
  const signer = createTokenSigner({ secretKey: () => 'authenticate-test-key-0123456789', now: Date.now });
  let account: AccountSettings;
  let revocation: Revocation;
  const now = Math.floor(Date.now() / 1000);
  const sessionOf = (jti: string) => signer.sign({ username: 'alice', kind: 'apiKey', jti, iat: now, exp: now + 3600 });

  beforeEach(async () => {
    account = { name: 'alice', enabled: true, capabilities: ['apiKey'], tokens: [] };
    revocation = await createRevocation({ state: createMemoryState(), log, now: Date.now });
  });

  function authenticator(rev: Revocation = revocation) {
    return createAuthenticator({ verifiers: [createLocalVerifier({ signer, accounts: () => new Map([['alice', account]]), disabledAt: () => undefined })], revocation: rev, epoch: noEpoch });
  }

  it('knows nothing of a token until authenticate() verified it, then gives the same principal', async () => {
    const auth = authenticator();
    const token = await sessionOf('t1');
    account = { ...account, tokens: [{ id: 't1', jti: 't1', iat: now }] };
    expect(auth.known(token)).to.equal(undefined);
    const principal = await auth.authenticate(token);
    expect(principal).to.include({ username: 'alice', kind: 'apiKey', tokenId: 't1' });
    expect(auth.known(token)).to.equal(principal);
  });

  it('applies the account rules on every call: a disabled account or a deleted token is refused by both', async () => {
    const auth = authenticator();
    const token = await sessionOf('t2');
    account = { ...account, tokens: [{ id: 't2', jti: 't2', iat: now }] };
    await auth.authenticate(token);
    account = { ...account, enabled: false };
    expect(await refusal(() => auth.known(token))).to.equal("account 'alice' is disabled");
    expect(await refusal(() => auth.authenticate(token))).to.equal("account 'alice' is disabled");
    account = { ...account, enabled: true, tokens: [] };
    expect(await refusal(() => auth.known(token))).to.equal("this API token of account 'alice' was deleted");
  });

  it('refuses a revoked token without awaiting, when the revocation list is complete', async () => {
    const auth = authenticator();
    const token = await sessionOf('t3');
    account = { ...account, tokens: [{ id: 't3', jti: 't3', iat: now }] };
    await auth.authenticate(token);
    await revocation.revoke('t3', now + 3600);
    expect(await refusal(() => auth.known(token))).to.equal('token is revoked; log in again');
    expect(await refusal(() => auth.authenticate(token))).to.equal('token is revoked; log in again');
  });

  it('gives a session and an API token their kind, svc as issuer, no groups, and refuses a disabled account on the first verification', async () => {
    const auth = authenticator();
    account = { ...account, capabilities: ['apiKey', 'login'], tokens: [{ id: 'k', jti: 'k', iat: now }] };
    const session = await signer.sign({ username: 'alice', kind: 'login', jti: 's1', iat: now, exp: now + 3600 });
    expect(await auth.authenticate(session)).to.deep.equal({ username: 'alice', groups: [], issuer: 'svc', kind: 'session', tokenId: 's1', expiresAt: now + 3600, issuedAt: now });
    expect(await auth.authenticate(await sessionOf('k'))).to.deep.include({ kind: 'apiKey', groups: [], tokenId: 'k' });
    account = { ...account, enabled: false };
    const later = await signer.sign({ username: 'alice', kind: 'login', jti: 's2', iat: now, exp: now + 3600 });
    expect(await refusal(() => auth.authenticate(later))).to.equal("account 'alice' is disabled");
  });

  it('refuses what is not a token, and a token of an issuer no verifier answers for', async () => {
    const auth = authenticator();
    expect(await refusal(() => auth.authenticate('not-a-token'))).to.equal('token is invalid');
    const foreign = await mintTestToken('sso-user', []);
    expect(await refusal(() => auth.authenticate(foreign))).to.equal('token issuer is not accepted');
  });

  it('asks each verifier in turn for a known token, and verifies a token only once', async () => {
    const sso = createTestVerifier();
    const auth = createAuthenticator({ verifiers: [createLocalVerifier({ signer, accounts: () => new Map([['alice', account]]), disabledAt: () => undefined }), sso], revocation, epoch: noEpoch });
    const token = await mintTestToken('sso-user', ['g']);
    const principal = await auth.authenticate(token);
    expect(auth.known(token)).to.equal(principal);
    expect(await auth.authenticate(token)).to.equal(principal);
    expect(sso.verifications()).to.equal(1);
  });

  it('refuses two verifiers for one issuer', () => {
    expect(() => createAuthenticator({ verifiers: [createTestVerifier(), createTestVerifier()], revocation, epoch: noEpoch })).to.throw("two token verifiers for issuer 'https://issuer.test.invalid'");
  });

  it('tells its listeners each revoked token id', async () => {
    const heard: string[] = [];
    const stop = authenticator().onRevoked((jti) => heard.push(jti));
    await revocation.revoke('r1', undefined);
    stop();
    await revocation.revoke('r2', undefined);
    expect(heard).to.deep.equal(['r1']);
  });

  it('steps aside (undefined) while the revocation list is incomplete, and authenticate() asks the backend', async () => {
    let asked = 0;
    const incomplete: Revocation = {
      revoke: async () => undefined,
      onRevoked: () => () => undefined,
      loadedOnce: () => true,
      isRevoked: async () => {
        asked++;
        return true;
      },
      revokedNow: () => undefined,
      close: async () => undefined,
    };
    const auth = authenticator(incomplete);
    const token = await sessionOf('t4');
    account = { ...account, tokens: [{ id: 't4', jti: 't4', iat: now }] };
    expect(await refusal(() => auth.authenticate(token))).to.equal('token is revoked; log in again');
    expect(asked).to.equal(1);
    expect(auth.known(token)).to.equal(undefined);
  });
});

/**
 * An SSO token (the tests' own issuer, test-issuer.ts, standing for the bundled provider's and
 * an external provider's ID tokens) revoked by a logout stays refused wherever it is presented
 * next: on a replica that never saw it, after a restart, and after the verifier's cache let it
 * go. Each of these goes through authenticate(), not the fast path of a replica that has the
 * token cached, which the end-to-end logout tests exercise.
 */
describe('session/authenticate: a revoked SSO token', () => {
  const REVOKED = 'token is revoked; log in again';
  let closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.reverse()) await close();
    closers = [];
  });

  /** One replica: its own verifier (and cache) and revocation list over the shared state. */
  async function replica(state: StateBackend) {
    const revocation = await createRevocation({ state, log, now: Date.now });
    closers.push(() => revocation.close());
    const verifier = createTestVerifier();
    return { revocation, verifier, auth: createAuthenticator({ verifiers: [verifier], revocation, epoch: noEpoch }) };
  }

  function sharedState(): StateBackend {
    const state = createMemoryState();
    closers.push(() => state.close());
    return state;
  }

  async function loggedOut(on: Awaited<ReturnType<typeof replica>>): Promise<string> {
    const token = await mintTestToken('sso-user', ['sso-team']);
    const principal = await on.auth.authenticate(token);
    expect(principal).to.include({ username: 'sso-user', kind: 'sso' });
    await on.revocation.revoke(principal.tokenId, principal.expiresAt);
    return token;
  }

  it('is refused by another replica that never saw it, by authenticate() alone', async () => {
    const state = sharedState();
    const [a, b] = [await replica(state), await replica(state)];
    const token = await loggedOut(a);
    expect(b.auth.known(token)).to.equal(undefined); // not seen there: the caller awaits authenticate()
    expect(await refusal(() => b.auth.authenticate(token))).to.equal(REVOKED);
    expect(b.verifier.verifications()).to.equal(1);
  });

  it('is refused after a restart (a new replica over the same state)', async () => {
    const state = sharedState();
    const before = await replica(state);
    const token = await loggedOut(before);
    await before.revocation.close();
    const after = await replica(state);
    expect(await refusal(() => after.auth.authenticate(token))).to.equal(REVOKED);
  });

  it('is refused once the verifier has dropped it from its cache', async () => {
    const state = sharedState();
    const a = await replica(state);
    const token = await loggedOut(a);
    expect(await refusal(async () => a.auth.known(token))).to.equal(REVOKED); // cached: the fast path refuses
    // The same revocation list in front of a verifier that no longer has the token (a bounded cache let it go).
    const dropped = createAuthenticator({ verifiers: [createTestVerifier()], revocation: a.revocation, epoch: noEpoch });
    expect(dropped.known(token)).to.equal(undefined);
    expect(await refusal(() => dropped.authenticate(token))).to.equal(REVOKED);
  });

  it('is refused while the revocation list is incomplete: authenticate() asks the backend', async () => {
    const asked: string[] = [];
    const incomplete: Revocation = {
      revoke: async () => undefined,
      onRevoked: () => () => undefined,
      loadedOnce: () => true,
      isRevoked: async (jti) => {
        asked.push(jti);
        return true;
      },
      revokedNow: () => undefined,
      close: async () => undefined,
    };
    const auth = createAuthenticator({ verifiers: [createTestVerifier()], revocation: incomplete, epoch: noEpoch });
    const token = await mintTestToken('sso-user', ['sso-team']);
    expect(await refusal(() => auth.authenticate(token))).to.equal(REVOKED);
    expect(asked).to.have.length(1);
    expect(await refusal(() => auth.authenticate(token))).to.equal(REVOKED); // seen now, still asked
    expect(asked).to.have.length(2);
  });
});

describe('session/authenticate: the revocations epoch', () => {
  const cutoffMs = Date.UTC(2026, 0, 2, 3, 4, 5);
  /** Session tokens issued before cutoffMs are refused, as revocations-epoch.ts does after a loss. */
  const epoch = { refusal: (p: Principal) => (p.kind === 'session' || p.kind === 'sso') && (p.issuedAt ?? 0) * 1000 < cutoffMs ? 'lost at cutoff' : undefined, onMoved: () => () => undefined };
  const signer = createTokenSigner({ secretKey: () => 'authenticate-test-key-0123456789', now: () => cutoffMs + 3_600_000 });
  const account: AccountSettings = { name: 'alice', enabled: true, capabilities: ['login', 'apiKey'], tokens: [] };

  it('refuses a session token issued before the cutoff on both paths, and keeps one issued after', async () => {
    const revocation = await createRevocation({ state: createMemoryState(), log, now: Date.now });
    const accounts = () => new Map([['alice', account]]);
    const auth = createAuthenticator({ verifiers: [createLocalVerifier({ signer, accounts, disabledAt: () => undefined })], revocation, epoch });
    const iatBefore = Math.floor(cutoffMs / 1000) - 1;
    const old = await signer.sign({ username: 'alice', kind: 'login', jti: 'old', iat: iatBefore, exp: iatBefore + 86_400 });
    const iatAfter = Math.ceil(cutoffMs / 1000);
    const fresh = await signer.sign({ username: 'alice', kind: 'login', jti: 'new', iat: iatAfter, exp: iatAfter + 86_400 });
    expect(await refusal(() => auth.authenticate(old))).to.equal('lost at cutoff');
    expect(await refusal(async () => auth.known(old))).to.equal('lost at cutoff');
    expect((await auth.authenticate(fresh)).issuedAt).to.equal(iatAfter);
    expect(auth.known(fresh)?.tokenId).to.equal('new');
    await revocation.close();
  });
});
