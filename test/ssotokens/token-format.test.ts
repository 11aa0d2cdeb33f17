/**
 * The personal API tokens of SSO users are never taken for svc's own tokens, either way: another
 * issuer and another key. An SSO user named like a local account gets none of its rights.
 */
import { expect } from 'chai';
import { SignJWT } from 'jose';
import { Unauthenticated } from '../../src/errors.js';
import { rbacSubjectsOf, type Principal } from '../../src/principal.js';
import { createTokenSigner } from '../../src/session/tokens.js';
import { createSsoTokenFormat, SSO_TOKEN_ISSUER } from '../../src/ssotokens/token-format.js';

const KEY = 'token-format-test-key-0123456789abcdef';
const now = () => 1_700_000_000_000;
const iat = 1_700_000_000;

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err: unknown) {
    expect(err).to.be.instanceOf(Unauthenticated);
    return (err as Error).message;
  }
  throw new Error('expected a refusal');
}

describe('ssotokens/token-format', function () {
  const format = createSsoTokenFormat({ secretKey: () => KEY, now });
  const local = createTokenSigner({ secretKey: () => KEY, now });

  it('signs and verifies its own tokens, which always expire', async function () {
    const token = await format.sign({ sub: 'bob-sub', jti: 'j1', iat, exp: iat + 60 });
    expect(await format.verify(token)).to.deep.equal({ sub: 'bob-sub', jti: 'j1', iat, exp: iat + 60 });
    expect(format.knownClaims(token)?.jti).to.equal('j1');
    const later = createSsoTokenFormat({ secretKey: () => KEY, now: () => now() + 61_000 });
    expect(await refusal(later.verify(token))).to.equal('token has expired; make a new one');
  });

  it('refuses a local account\'s token, even one claiming its issuer', async function () {
    const apiKey = await local.sign({ username: 'admin', kind: 'apiKey', jti: 'j', iat, exp: undefined });
    expect(await refusal(format.verify(apiKey))).to.equal('token is invalid');
    // Signed with server.secretkey itself (the local key) under this kind's issuer: still refused.
    const forged = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer(SSO_TOKEN_ISSUER).setSubject('admin').setJti('j').setIssuedAt(iat).setExpirationTime(iat + 60).sign(new TextEncoder().encode(KEY));
    expect(await refusal(format.verify(forged))).to.equal('token is invalid');
  });

  it('is refused by svc\'s own verifier, even when its subject is <account>:apiKey', async function () {
    const token = await format.sign({ sub: 'admin:apiKey', jti: 'j', iat, exp: iat + 60 });
    expect(await refusal(local.verify(token))).to.equal('token is invalid');
  });

  it('gives an SSO user named like a local account none of its rights', function () {
    const principal: Principal = { username: 'admin', groups: ['alice', 'devs'], issuer: 'http://svc/api/idp', kind: 'ssoApiKey', tokenId: 'j', expiresAt: iat + 60 };
    expect(rbacSubjectsOf(principal, new Set(['alice']))).to.deep.equal(['devs']);
  });
});
