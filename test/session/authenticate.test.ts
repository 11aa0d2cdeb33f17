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

const log = pino({ level: 'silent' });

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
    return createAuthenticator({ verifiers: [createLocalVerifier({ signer, accounts: () => new Map([['alice', account]]), disabledAt: () => undefined })], revocation: rev });
  }

  async function refusal(run: () => unknown): Promise<string | undefined> {
    try {
      await run();
      return undefined;
    } catch (err: unknown) {
      expect(err).to.be.instanceOf(Unauthenticated);
      return (err as Error).message;
    }
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

  it('steps aside (undefined) while the revocation list is incomplete, and authenticate() asks the backend', async () => {
    let asked = 0;
    const incomplete: Revocation = {
      revoke: async () => undefined,
      onRevoked: () => () => undefined,
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
