/**
 * The subject token's checks on their own (src/workload/verify.ts): the checks of signed claims
 * (audience, times with the skew, the cap on how far ahead a subject token may expire, the
 * entry's conditions) and the signature as bytes that the replay mark keys on. The signature
 * stage and the reading run with keys in test/workload/exchange.test.ts.
 */
import { expect } from 'chai';
import { base64url, CompactSign, createLocalJWKSet } from 'jose';
import { parseTemplate, type Template } from '../../src/workload/claim-path.js';
import type { WorkloadIssuer } from '../../src/workload/config.js';
import { CLOCK_SKEW_SECONDS } from '../../src/oidc/sso-verifier.js';
import type { IssuerKeys, VerificationKey } from '../../src/workload/keys.js';
import { checkSignedClaims, MAX_SUBJECT_TOKEN_BYTES, MAX_SUBJECT_TOKEN_REMAINING_SECONDS, readSubjectToken, shorten, signatureBytes, verifySignature, WorkloadRefused, type ReadToken } from '../../src/workload/verify.js';
import { makeSigningKey, signToken } from '../helpers/fake-oidc-keys.js';

const entry: WorkloadIssuer = {
  name: 'ci', issuer: 'https://ci.example', audiences: ['svc'], claims: [], subject: parseTemplate('{{sub}}') as Template, groups: [], maxTokenLifetimeMs: 600_000,
};

function refusal(run: () => unknown): WorkloadRefused {
  try {
    run();
  } catch (err: unknown) {
    if (err instanceof WorkloadRefused) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('workload: the subject token\'s checks', () => {
  const nowMs = Date.UTC(2026, 0, 1, 12);
  const now = nowMs / 1000;
  const claims = (exp: number) => ({ iss: entry.issuer, sub: 'job', aud: 'svc', iat: now, exp });

  it('refuses a subject token that expires more than 24 h from now: its replay mark would outlive any CI job', () => {
    expect(MAX_SUBJECT_TOKEN_REMAINING_SECONDS).to.equal(24 * 3600);
    const err = refusal(() => checkSignedClaims(entry, claims(now + 24 * 3600 + 1), nowMs));
    expect(err.check).to.equal('exp');
    expect(err.message).to.equal("check 'exp' failed: the subject token expires more than 24h from now; ask the issuer for a shorter-lived token");
    expect(checkSignedClaims(entry, claims(now + 24 * 3600), nowMs).exp, 'exactly 24 h is accepted').to.equal(now + 24 * 3600);
  });

  it('reads the signature as the bytes the verifier checked, whatever the unused bits of its last character', () => {
    const bytes = Buffer.from([0xde, 0xad, 0xbe, 0xef]);
    const canonical = `h.p.${bytes.toString('base64url')}`;   // 3q2-7w: 6 characters, 4 bits unused
    expect(canonical.endsWith('7w')).to.equal(true);
    const respelt = `h.p.${bytes.toString('base64url').slice(0, -1)}x`;
    expect(Buffer.from(base64url.decode('3q2-7x')).equals(bytes), 'the verifier takes the other spelling').to.equal(true);
    expect(signatureBytes(respelt)).to.equal(signatureBytes(canonical)).and.to.equal('3q2-7w');
  });

  it('wants an audience of the entry: a string or one of a list, never none', () => {
    expect(checkSignedClaims(entry, { ...claims(now + 60), aud: ['other', 'svc'] }, nowMs).exp).to.equal(now + 60);
    for (const aud of [undefined, [], 'other', ['other'], [42], '']) {
      const err = refusal(() => checkSignedClaims(entry, { ...claims(now + 60), aud }, nowMs));
      expect(err.check, JSON.stringify(aud)).to.equal('aud');
    }
    expect(refusal(() => checkSignedClaims(entry, { ...claims(now + 60), aud: undefined }, nowMs)).message).to.equal("check 'aud' failed: the subject token has no aud claim");
    expect(refusal(() => checkSignedClaims(entry, { ...claims(now + 60), aud: 'other' }, nowMs)).message).to.equal("check 'aud' failed: the token's audience is none of those workload issuer 'ci' accepts");
    expect(refusal(() => checkSignedClaims(entry, { ...claims(now + 60), aud: [42, null] }, nowMs)).message, 'non-strings are no audience').to.equal("check 'aud' failed: the subject token has no aud claim");
  });

  it(`allows ${CLOCK_SKEW_SECONDS} s of clock skew at each end, to the second, and wants exp and iat as numbers`, () => {
    const at = (extra: Record<string, unknown>) => () => checkSignedClaims(entry, { ...claims(now + 60), ...extra }, nowMs);
    expect(at({ exp: now - CLOCK_SKEW_SECONDS + 1 })()).to.have.property('exp', now - CLOCK_SKEW_SECONDS + 1);
    expect(refusal(at({ exp: now - CLOCK_SKEW_SECONDS })).message).to.equal("check 'exp' failed: the subject token has expired");
    expect(refusal(at({ exp: String(now + 60) })).message).to.equal("check 'exp' failed: the subject token has no numeric exp claim");
    expect(at({ nbf: now + CLOCK_SKEW_SECONDS })()).to.have.property('exp');
    expect(refusal(at({ nbf: now + CLOCK_SKEW_SECONDS + 1 })).message).to.equal("check 'nbf' failed: the subject token is not valid yet");
    expect(refusal(at({ nbf: 'soon' })).message).to.equal("check 'nbf' failed: the nbf claim is not a number");
    expect(at({ iat: now + CLOCK_SKEW_SECONDS })()).to.have.property('exp');
    expect(refusal(at({ iat: now + CLOCK_SKEW_SECONDS + 1 })).message).to.equal("check 'iat' failed: the subject token is issued in the future");
    expect(refusal(at({ iat: undefined })).message).to.equal("check 'iat' failed: the subject token has no numeric iat claim");
  });

  it('wants every claim condition of the entry, naming the first that does not hold', () => {
    const conditions: WorkloadIssuer = {
      ...entry,
      claims: [
        { path: ['repository'], source: 'repository', equals: 'org/app' },
        { path: ['ref'], source: 'ref', globs: ['refs/heads/main', 'refs/tags/v*'] },
      ],
    };
    const signed = (extra: Record<string, unknown>) => ({ ...claims(now + 60), repository: 'org/app', ref: 'refs/tags/v1.2', ...extra });
    expect(checkSignedClaims(conditions, signed({}), nowMs).claims).to.include({ ref: 'refs/tags/v1.2' });
    expect(refusal(() => checkSignedClaims(conditions, signed({ repository: 'org/other' }), nowMs)).message).to.equal("check 'claims' failed: claim 'repository' is not 'org/app'");
    expect(refusal(() => checkSignedClaims(conditions, signed({ ref: 'refs/heads/dev' }), nowMs)).message).to.equal("check 'claims' failed: claim 'ref' matches none of 'refs/heads/main', 'refs/tags/v*'");
    expect(refusal(() => checkSignedClaims(conditions, signed({ repository: undefined }), nowMs)).check).to.equal('claims');
    const anyRef: WorkloadIssuer = { ...entry, claims: [{ path: ['ref'], source: 'ref', globs: ['*'] }] };
    expect(refusal(() => checkSignedClaims(anyRef, signed({ ref: undefined }), nowMs)).message, 'a missing claim matches no glob, not even *').to.equal("check 'claims' failed: claim 'ref' matches none of '*'");
  });

  it('reads a token only as far as routing needs, refusing by name what is not a JWT of a configured issuer', () => {
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const header = part({ alg: 'RS256', kid: 'k1' });
    const token = (payload: unknown) => `${header}.${typeof payload === 'string' ? payload : part(payload)}.c2ln`;
    const read = readSubjectToken(token({ iss: entry.issuer, sub: 'job' }), [entry]);
    expect(read).to.deep.include({ entry, header: { alg: 'RS256', kid: 'k1' }, unverified: { iss: entry.issuer, sub: 'job' } });
    const cases: [string, string][] = [
      ['x'.repeat(MAX_SUBJECT_TOKEN_BYTES + 1), `check 'size' failed: the subject token is larger than ${MAX_SUBJECT_TOKEN_BYTES} bytes`],
      [`${header}.${part({ iss: entry.issuer })}`, "check 'format' failed: the subject token is not a signed JWT (three base64url parts)"],
      [`${header}.a.b.c`, "check 'format' failed: the subject token is not a signed JWT (three base64url parts)"],
      [token('bm90IGpzb24'), "check 'format' failed: the subject token is not a JWT (its header or payload is not base64url JSON)"],
      [`e30x.${part({ iss: entry.issuer })}.c2ln`, "check 'format' failed: the subject token is not a JWT (its header or payload is not base64url JSON)"],
      [token(['a']), "check 'format' failed: the subject token's payload is not a JSON object"],
      [token(null), "check 'format' failed: the subject token's payload is not a JSON object"],
      [token(5), "check 'format' failed: the subject token's payload is not a JSON object"],
      [token({ sub: 'job' }), "check 'iss' failed: the subject token has no iss claim"],
      [token({ iss: `https://elsewhere.example/${'p'.repeat(100)}` }), `check 'iss' failed: no workload issuer is configured for iss 'https://elsewhere.example/${'p'.repeat(54)}…'`],
    ];
    for (const [text, message] of cases) expect(refusal(() => readSubjectToken(text, [entry])).message, text.slice(0, 40)).to.equal(message);
    const unsigned = `${header}.${part({ iss: entry.issuer })}.`;
    const exact = unsigned + 'A'.repeat(MAX_SUBJECT_TOKEN_BYTES - unsigned.length);
    expect(readSubjectToken(exact, [entry]).entry, `a token of exactly ${MAX_SUBJECT_TOKEN_BYTES} bytes is read`).to.equal(entry);
    expect(refusal(() => readSubjectToken(`${exact}A`, [entry])).check).to.equal('size');
  });

  it('checks the algorithm against the issuer\'s before any key, and names a missing key', async () => {
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const token = (alg: unknown) => `${part({ alg, kid: 'k1' })}.${part({ iss: entry.issuer })}.c2ln`;
    let looked = 0;
    const keys: IssuerKeys = { algorithms: async () => ['RS256', 'ES256'], keyFor: async () => { looked++; return { missing: "no key of issuer 'ci' has kid 'k1'" }; } };
    const alg = await rejection(verifySignature(readSubjectToken(token('HS256'), [entry]), keys));
    expect(alg.message).to.equal("check 'alg' failed: alg 'HS256' is not one the issuer 'ci' publishes and svc accepts (RS256, ES256)");
    expect((await rejection(verifySignature(readSubjectToken(token(undefined), [entry]), keys))).message).to.match(/^check 'alg' failed: alg '\(none\)' is not one/);
    const none: IssuerKeys = { ...keys, algorithms: async () => [] };
    expect((await rejection(verifySignature(readSubjectToken(token('RS256'), [entry]), none))).message).to.equal("check 'alg' failed: alg 'RS256' is not one the issuer 'ci' publishes and svc accepts (none)");
    expect(looked, 'no key looked at for a refused algorithm').to.equal(0);
    const missing = await rejection(verifySignature(readSubjectToken(token('RS256'), [entry]), keys));
    expect([missing.check, missing.message]).to.deep.equal(['key', "check 'key' failed: no key of issuer 'ci' has kid 'k1'"]);
  });

  it('refuses a token whose signed iss is not the issuer it was routed to, and a signed payload that is not an object', async () => {
    const key = await makeSigningKey('k1');
    const lookup = createLocalJWKSet({ keys: [key.publicJwk] });
    const keys: IssuerKeys = { algorithms: async () => ['RS256'], keyFor: async (header) => ({ key: await lookup(header) }) };
    const routed = (token: string): ReadToken => ({ ...readSubjectToken(token, [entry]), token });
    const good = await signToken(key, { iss: entry.issuer, sub: 'job' });
    expect(await verifySignature(routed(good), keys)).to.deep.equal({ iss: entry.issuer, sub: 'job' });
    // The routing read one payload, the signature covers another: the signed iss decides.
    const other = await signToken(key, { iss: 'https://other.example', sub: 'job' });
    const spliced: ReadToken = { ...routed(good), token: other };
    expect((await rejection(verifySignature(spliced, keys))).message).to.equal("check 'iss' failed: the signed iss differs from the issuer the token was routed to");
    for (const payload of ['null', '5']) {
      const signedOther = await new CompactSign(new TextEncoder().encode(payload)).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(key.privateKey);
      expect((await rejection(verifySignature({ ...routed(good), token: signedOther }, keys))).message, payload).to.equal("check 'format' failed: the signed payload is not a JSON object");
    }
    // A key jose cannot use is the issuer's key set's fault, not the token's: an error, no refusal.
    const broken: IssuerKeys = { algorithms: async () => ['RS256'], keyFor: async () => ({ key: {} as VerificationKey }) };
    const err = await verifySignature(routed(good), broken).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(Error).and.not.be.instanceOf(WorkloadRefused);
    const list = await new CompactSign(new TextEncoder().encode('["a"]')).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(key.privateKey);
    expect((await rejection(verifySignature({ ...routed(good), token: list }, keys))).message).to.equal("check 'format' failed: the signed payload is not a JSON object");
    const text = await new CompactSign(new TextEncoder().encode('not json')).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(key.privateKey);
    expect((await rejection(verifySignature({ ...routed(good), token: text }, keys))).message).to.equal("check 'format' failed: the signed payload is not JSON");
    const forged = `${good.slice(0, good.lastIndexOf('.'))}.${Buffer.alloc(256).toString('base64url')}`;
    expect((await rejection(verifySignature({ ...routed(good), token: forged }, keys))).message).to.equal("check 'signature' failed: the signature does not verify with the issuer's key (ERR_JWS_SIGNATURE_VERIFICATION_FAILED)");
  });

  it('shortens a claim for a message or a log line past 80 characters only', () => {
    expect(shorten('x'.repeat(80))).to.equal('x'.repeat(80));
    expect(shorten('x'.repeat(81))).to.equal(`${'x'.repeat(80)}…`);
  });
});

async function rejection(promise: Promise<unknown>): Promise<WorkloadRefused> {
  try {
    await promise;
  } catch (err: unknown) {
    if (err instanceof WorkloadRefused) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}
