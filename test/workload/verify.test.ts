/**
 * The subject token's checks on their own (src/workload/verify.ts): the cap on how far ahead a
 * subject token may expire, and the signature as bytes that the replay mark keys on.
 */
import { expect } from 'chai';
import { base64url } from 'jose';
import { parseTemplate, type Template } from '../../src/workload/claim-path.js';
import type { WorkloadIssuer } from '../../src/workload/config.js';
import { checkSignedClaims, MAX_SUBJECT_TOKEN_REMAINING_SECONDS, signatureBytes, WorkloadRefused } from '../../src/workload/verify.js';

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
});
