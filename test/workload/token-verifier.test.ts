import { expect } from 'chai';
import { isSelf } from '../../src/accounts/account-queries.js';
import { Unauthenticated } from '../../src/errors.js';
import { createTokenSigner } from '../../src/session/tokens.js';
import { parseTemplate, type Template } from '../../src/workload/claim-path.js';
import type { WorkloadIssuer } from '../../src/workload/config.js';
import { createWorkloadVerifier } from '../../src/workload/token-verifier.js';
import { createWorkloadTokens } from '../../src/workload/tokens.js';

const SECRET = 's'.repeat(32);

describe('workload tokens as a token verifier', () => {
  const now = () => Date.now();
  const entry: WorkloadIssuer = { name: 'ci', issuer: 'https://ci.example', audiences: ['svc'], claims: [], subject: parseTemplate('{{sub}}') as Template, groups: [], maxTokenLifetimeMs: 600_000 };
  let issuers: WorkloadIssuer[];
  let accounts: Map<string, unknown>;
  const tokens = createWorkloadTokens({ secretKey: () => SECRET, now });
  const verifier = createWorkloadVerifier({ tokens, issuers: () => issuers, localAccounts: () => accounts });
  const issue = (username: string, groups: readonly string[] = []) => {
    const iat = Math.floor(now() / 1000);
    return tokens.issue({ username, groups, entry: 'ci', iat, exp: iat + 600 });
  };

  beforeEach(() => {
    issuers = [entry];
    accounts = new Map();
  });

  it('gives a workload principal with the issuer\'s URL, served from the fast path once verified', async () => {
    const { token, jti } = await issue('workload:ci:job');
    const principal = await verifier.verify(token);
    expect(principal).to.include({ username: 'workload:ci:job', kind: 'workload', issuer: 'https://ci.example', tokenId: jti });
    // A logout revokes it in state alone: the cutoff of a lost record of revocations reads its iat.
    expect(principal.issuedAt).to.be.a('number').and.to.be.closeTo(now() / 1000, 5);
    expect(verifier.known(token)).to.equal(principal);
  });

  it('refuses the tokens of an entry removed from workload.config', async () => {
    const { token } = await issue('workload:ci:job');
    await verifier.verify(token);
    issuers = [];
    expect(() => verifier.known(token)).to.throw(Unauthenticated, "the workload issuer 'ci' is no longer configured; its tokens are refused");
  });

  it('drops at use a group named like a local account added after the exchange', async () => {
    const { token } = await issue('workload:ci:job', ['deployers', 'ci-bot']);
    expect((await verifier.verify(token)).groups).to.deep.equal(['deployers', 'ci-bot']);
    accounts = new Map([['ci-bot', {}]]);
    expect(verifier.known(token)?.groups).to.deep.equal(['deployers']);
  });

  it('is signed with a key of its own: svc\'s session signer refuses a workload token, and the other way round', async () => {
    const signer = createTokenSigner({ secretKey: () => SECRET, now });
    const { token } = await issue('workload:ci:job');
    await signer.verify(token).then(() => expect.fail('accepted'), (err: unknown) => expect(err).to.be.instanceOf(Unauthenticated));
    const session = await signer.sign({ username: 'admin', kind: 'login', jti: 'j', iat: Math.floor(now() / 1000), exp: Math.floor(now() / 1000) + 60 });
    await verifier.verify(session).then(() => expect.fail('accepted'), (err: unknown) => expect((err as Error).message).to.equal('token is invalid'));
  });

  it('is never an account itself, whatever its name', async () => {
    const principal = await verifier.verify((await issue('workload:ci:job')).token);
    expect(isSelf({ ...principal, username: 'admin' }, 'admin')).to.equal(false);
  });
});
