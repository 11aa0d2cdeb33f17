/** TOTP as authenticator apps compute it. */
import { expect } from 'chai';
import { codeAt, matchingStep, totpStep } from '../../src/second-factor/totp.js';

describe('second-factor/totp', () => {
  const secret = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
  const t = 1_800_000_015_000;
  it('matches the codes of one step either way and no further (RFC 6238, 30 s, SHA-1, 6 digits)', () => {
    expect(matchingStep(secret, codeAt(secret, t), t)).to.equal(totpStep(t));
    expect(matchingStep(secret, codeAt(secret, t - 30_000), t)).to.equal(totpStep(t) - 1);
    expect(matchingStep(secret, codeAt(secret, t + 30_000), t)).to.equal(totpStep(t) + 1);
    expect(matchingStep(secret, codeAt(secret, t - 60_000), t)).to.equal(undefined);
    expect(matchingStep(secret, 'abcdef', t)).to.equal(undefined);
  });

  it('gives the RFC 6238 test vector (SHA-1, T = 59 s) in six digits', () => {
    // RFC 6238 appendix B: secret "12345678901234567890", 59 s -> 94287082 (8 digits); 6 digits: 287082.
    expect(codeAt('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', 59_000)).to.equal('287082');
  });
});
