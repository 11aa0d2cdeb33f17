import { expect } from 'chai';
import { SignJWT } from 'jose';
import { createTokenSigner, unverifiedIssuer, type TokenClaims } from '../../src/session/tokens.js';

const KEY = 'token-test-key-0123456789abcdef';

function signerAt(clock: { now: number }, key: { value: string | undefined }) {
  return createTokenSigner({ secretKey: () => key.value, now: () => clock.now });
}

async function rejection(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err: unknown) {
    return (err as Error).message;
  }
  throw new Error('expected a rejection');
}

describe('session/tokens', () => {
  const start = Date.UTC(2026, 0, 1) ;
  const claims: TokenClaims = { username: 'alice', kind: 'login', jti: 'j1', iat: start / 1000, exp: start / 1000 + 60 };

  it('signs the claims of the design and verifies them back', async () => {
    const clock = { now: start };
    const signer = signerAt(clock, { value: KEY });
    const token = await signer.sign(claims);
    const [header, payload] = token.split('.').slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>);
    expect(header).to.deep.equal({ alg: 'HS256', typ: 'JWT' });
    expect(payload).to.deep.equal({ iss: 'svc', sub: 'alice:login', jti: 'j1', iat: claims.iat, nbf: claims.iat, exp: claims.exp });
    expect(await signer.verify(token)).to.deep.equal(claims);
  });

  it("carries a session's password binding (pwh) and verifies it back", async () => {
    const signer = signerAt({ now: start }, { value: KEY });
    const bound: TokenClaims = { ...claims, pwh: signer.passwordBinding('$2b$10$hash') };
    const token = await signer.sign(bound);
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
    expect(payload['pwh']).to.equal(bound.pwh);
    expect(await signer.verify(token)).to.deep.equal(bound);
  });

  it('applies the time rules again when a verified token comes back later', async () => {
    const clock = { now: start };
    const signer = signerAt(clock, { value: KEY });
    const token = await signer.sign(claims);
    await signer.verify(token);
    clock.now = start + 60_000;
    expect(await rejection(signer.verify(token))).to.equal('token has expired; log in again');
    clock.now = start - 5_000;
    expect(await rejection(signer.verify(token))).to.equal('token is not valid yet');
  });

  it('refuses a token issued in the future on its first verification too, also without nbf', async () => {
    const clock = { now: start };
    const signer = signerAt(clock, { value: KEY });
    const key = new TextEncoder().encode(KEY);
    const future = claims.iat + 3600;
    const noNbf = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer('svc').setSubject('alice:login').setJti('j2').setIssuedAt(future).sign(key);
    expect(await rejection(signer.verify(noNbf))).to.equal('token is not valid yet');
    const pastNbf = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer('svc').setSubject('alice:login').setJti('j3').setIssuedAt(future).setNotBefore(claims.iat).sign(key);
    expect(await rejection(signer.verify(pastNbf))).to.equal('token is not valid yet');
    // Once its time has come it is accepted, as on any later verification.
    clock.now = future * 1000;
    expect((await signer.verify(noNbf)).jti).to.equal('j2');
  });

  it('stops accepting a verified token once the key changes', async () => {
    const clock = { now: start };
    const key = { value: KEY as string | undefined };
    const signer = signerAt(clock, key);
    const token = await signer.sign(claims);
    await signer.verify(token);
    key.value = 'rotated-key-0123456789abcdef0123';
    expect(await rejection(signer.verify(token))).to.equal('token is invalid');
    key.value = undefined;
    expect(await rejection(signer.verify(token))).to.equal('server.secretkey is missing from svc-secret: tokens cannot be issued or checked');
  });

  it('refuses another algorithm, another issuer and a bad signature', async () => {
    const clock = { now: start };
    const signer = signerAt(clock, { value: KEY });
    const key = new TextEncoder().encode(KEY);
    const hs512 = await new SignJWT({ jti: 'x' }).setProtectedHeader({ alg: 'HS512' }).setIssuer('svc').setSubject('alice:login').setIssuedAt(claims.iat).sign(key);
    const otherIssuer = await new SignJWT({ jti: 'x' }).setProtectedHeader({ alg: 'HS256' }).setIssuer('other').setSubject('alice:login').setIssuedAt(claims.iat).sign(key);
    const good = await signer.sign(claims);
    const tampered = `${good.slice(0, -2)}${good.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const token of [hs512, otherIssuer, tampered]) expect(await rejection(signer.verify(token))).to.equal('token is invalid');
  });

  it('verifies a token again from its cache, and an API token without expiry', async () => {
    const clock = { now: start };
    const signer = signerAt(clock, { value: KEY });
    const token = await signer.sign(claims);
    expect(await signer.verify(token)).to.deep.equal(claims);
    expect(await signer.verify(token)).to.deep.equal(claims);
    expect(signer.knownClaims(token)).to.deep.equal(claims);
    const forever: TokenClaims = { username: 'ci', kind: 'apiKey', jti: 'k1', iat: claims.iat, exp: undefined };
    const apiToken = await signer.sign(forever);
    const payload = JSON.parse(Buffer.from(apiToken.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
    expect(payload).to.not.have.property('exp');
    expect(await signer.verify(apiToken)).to.deep.equal(forever);
    clock.now = start + 10 * 365 * 86_400_000;
    expect(await signer.verify(apiToken)).to.deep.equal(forever);
  });

  it('forgets a verified token nobody presented for ten minutes while other tokens arrive, and checks its signature again', async () => {
    const clock = { now: start };
    const signer = signerAt(clock, { value: KEY });
    const hour: TokenClaims = { ...claims, exp: claims.iat + 3600 };
    const token = await signer.sign(hour);
    await signer.verify(token);
    for (let minute = 1; minute <= 11; minute++) {
      clock.now = start + minute * 60_000;
      await signer.verify(await signer.sign({ ...hour, jti: `other-${minute}` }));
    }
    expect(signer.knownClaims(token)).to.equal(undefined);
    expect(await signer.verify(token)).to.deep.equal(hour);
    expect(signer.knownClaims(token)).to.deep.equal(hour);
  });

  it('says why on the first verification: expired, or not valid yet by its nbf', async () => {
    const clock = { now: start };
    const signer = signerAt(clock, { value: KEY });
    const key = new TextEncoder().encode(KEY);
    const base = () => new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer('svc').setSubject('alice:login').setJti('t');
    const expired = await base().setIssuedAt(claims.iat - 120).setExpirationTime(claims.iat - 60).sign(key);
    expect(await rejection(signer.verify(expired))).to.equal('token has expired; log in again');
    const laterNbf = await base().setIssuedAt(claims.iat - 60).setNotBefore(claims.iat + 3600).sign(key);
    expect(await rejection(signer.verify(laterNbf))).to.equal('token is not valid yet');
  });

  it('refuses a well-signed token without sub, jti or iat, or whose subject is not <name>:login or <name>:apiKey', async () => {
    const signer = signerAt({ now: start }, { value: KEY });
    const key = new TextEncoder().encode(KEY);
    const token = (sub: string | undefined, jti: string | undefined, iat: number | undefined) => {
      const jwt = new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer('svc');
      if (sub !== undefined) jwt.setSubject(sub);
      if (jti !== undefined) jwt.setJti(jti);
      if (iat !== undefined) jwt.setIssuedAt(iat);
      return jwt.sign(key);
    };
    for (const [sub, jti, iat] of [[undefined, 'j', claims.iat], ['alice:login', undefined, claims.iat], ['alice:login', 'j', undefined]] as const) {
      expect(await rejection(signer.verify(await token(sub, jti, iat)))).to.equal('token is invalid');
    }
    for (const sub of ['alice:admin', ':login', 'alice', 'alice:', 'alice:session']) {
      expect(await rejection(signer.verify(await token(sub, 'j', claims.iat))), sub).to.equal('token subject is not <name>:login or <name>:apiKey');
    }
    expect((await signer.verify(await token('dom:ain:apiKey', 'j', claims.iat))).username).to.equal('dom:ain');
  });

  it('refuses to sign or verify without server.secretkey, empty or missing', async () => {
    for (const value of ['', undefined]) {
      const signer = signerAt({ now: start }, { value });
      expect(await rejection(signer.sign(claims))).to.equal('server.secretkey is missing from svc-secret: tokens cannot be issued or checked');
    }
  });

  it('reads the issuer of a token without checking it, and nothing from what is not a JWT or has no string iss', async () => {
    const key = new TextEncoder().encode('any-key-0123456789abcdef01234567');
    expect(unverifiedIssuer(await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer('https://idp.example').sign(key))).to.equal('https://idp.example');
    expect(unverifiedIssuer(await new SignJWT({ iss: 42 } as never).setProtectedHeader({ alg: 'HS256' }).sign(key))).to.equal(undefined);
    expect(unverifiedIssuer('not a token')).to.equal(undefined);
  });
});
