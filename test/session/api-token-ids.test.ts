/** A local API token's principal carries its record's id (the one its owner sees), looked up once per principal. */
import { expect } from 'chai';
import type { AccountSettings, ApiTokenRecord } from '../../src/accounts/account.js';
import { withApiTokenIds } from '../../src/session/api-token-ids.js';
import { Unauthenticated } from '../../src/errors.js';
import type { Principal } from '../../src/principal.js';
import type { TokenVerifier } from '../../src/session/token-verifier.js';

const apiToken: Principal = { username: 'alice', groups: [], issuer: 'svc', kind: 'apiKey', tokenId: 'jti-1', expiresAt: undefined, issuedAt: 100 };
const legacy: Principal = { ...apiToken, tokenId: 'old-ci' };
const session: Principal = { ...apiToken, kind: 'session', tokenId: 'jti-session' };

/** A verifier that hands out the same principal object per token, as the local one does. */
function fixedVerifier(byToken: Readonly<Record<string, Principal>>): TokenVerifier {
  return {
    issuer: 'svc',
    known: (token) => byToken[token],
    verify: async (token) => byToken[token] ?? Promise.reject(new Unauthenticated('unknown token')),
  };
}

function accountsWith(tokens: readonly ApiTokenRecord[]): () => ReadonlyMap<string, AccountSettings> {
  const alice: AccountSettings = { name: 'alice', enabled: true, capabilities: ['apiKey', 'login'], tokens };
  return () => new Map([['alice', alice]]);
}

describe('api token ids', () => {
  const verifier = fixedVerifier({ a: apiToken, old: legacy, s: session });

  it('names an API token by its record id, not its jti, and gives the same object on every use', async () => {
    const named = withApiTokenIds(verifier, accountsWith([{ id: 'other', jti: 'jti-2', iat: 100 }, { id: 'ci-token', jti: 'jti-1', iat: 100 }]));
    const first = await named.verify('a');
    expect(first).to.deep.equal({ ...apiToken, apiTokenId: 'ci-token' });
    expect(named.known('a'), 'the fast path, the same object').to.equal(first);
    expect(await named.verify('a')).to.equal(first);
  });

  it('names a record written before tokens had a jti by its id, which was the jti', async () => {
    const named = withApiTokenIds(verifier, accountsWith([{ id: 'old-ci', iat: 100 }]));
    expect((await named.verify('old')).apiTokenId).to.equal('old-ci');
  });

  it('leaves sessions as they are, and unknown tokens unknown', async () => {
    const named = withApiTokenIds(verifier, accountsWith([]));
    expect(await named.verify('s')).to.equal(session);
    expect(named.known('nothing')).to.equal(undefined);
  });

  it('refuses an API token whose record is gone by the time it is named', async () => {
    const named = withApiTokenIds(verifier, accountsWith([{ id: 'ci-token', jti: 'jti-9', iat: 100 }]));
    const err = await named.verify('a').catch((e: unknown) => e);
    expect(err).to.be.instanceOf(Unauthenticated);
    expect((err as Error).message).to.equal("this API token of account 'alice' was deleted");
    expect(() => named.known('a')).to.throw(Unauthenticated, "this API token of account 'alice' was deleted");
  });
});
