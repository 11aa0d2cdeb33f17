/**
 * checkAssertion (connectors/saml/assertion.ts) on parsed assertions as node-saml gives them
 * (xml2js: attributes under `$`, children as arrays): the bearer confirmation answers this login's
 * request, for svc's ACS, in its window, as are the Conditions, with 30 s of skew. The signed
 * fixtures go through the whole connector in saml.test.ts.
 */
import { expect } from 'chai';
import { checkAssertion } from '../../../connectors/saml/assertion.js';
import { REFUSED } from '../../../connectors/saml/errors.js';

const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const ACS = 'https://svc.example.org/api/idp/callback';
const NOW = new Date('2026-01-01T12:00:00Z');
const expectations = { requestId: '_req1', acs: ACS, now: NOW };
const DATA = { InResponseTo: '_req1', Recipient: ACS, NotOnOrAfter: '2026-01-01T12:05:00Z' };

function parsed(confirmations: { Method?: string; data?: Record<string, string>[] }[], conditions: Record<string, string>[] | null = [{ NotBefore: '2026-01-01T11:59:00Z', NotOnOrAfter: '2026-01-01T12:05:00Z' }]) {
  return {
    Assertion: {
      Subject: [{ SubjectConfirmation: confirmations.map((c) => ({ ...(c.Method !== undefined ? { $: { Method: c.Method } } : {}), SubjectConfirmationData: (c.data ?? []).map((d) => ({ $: d })) })) }],
      ...(conditions !== null ? { Conditions: conditions.map((c) => ({ $: c })) } : {}),
    },
  };
}

function refusal(value: unknown, now = NOW): { message: string; reason: string } | undefined {
  try {
    checkAssertion(value, { ...expectations, now });
    return undefined;
  } catch (err: unknown) {
    return { message: (err as Error).message, reason: (err as { reason: string }).reason };
  }
}

describe('saml assertion: the checks svc makes itself', () => {
  it('passes a bearer confirmation for this request and the ACS, in its window', () => {
    expect(refusal(parsed([{ Method: BEARER, data: [DATA] }]))).to.equal(undefined);
  });

  it('refuses what holds no assertion, or no bearer confirmation data', () => {
    for (const value of [null, undefined, {}, { Response: {} }]) {
      expect(refusal(value)).to.deep.equal({ message: REFUSED.unverified, reason: 'the signed content holds no assertion' });
    }
    const none = { message: REFUSED.unverified, reason: 'the assertion has no bearer SubjectConfirmationData' };
    expect(refusal({ Assertion: {} })).to.deep.equal(none);
    expect(refusal({ Assertion: { Subject: 'x' } })).to.deep.equal(none);
    expect(refusal(parsed([{ Method: 'urn:oasis:names:tc:SAML:2.0:cm:holder-of-key', data: [DATA] }]))).to.deep.equal(none);
    expect(refusal(parsed([{ data: [DATA] }]))).to.deep.equal(none);
    expect(refusal(parsed([{ Method: BEARER }]))).to.deep.equal(none);
  });

  it('takes the bearer confirmation among others, and the one for this request among several', () => {
    const other = { ...DATA, InResponseTo: '_other' };
    expect(refusal(parsed([{ Method: 'urn:x', data: [{ ...DATA, Recipient: 'https://evil' }] }, { Method: BEARER, data: [other, DATA] }]))).to.equal(undefined);
  });

  it('names the request it answers, or says it answers none', () => {
    expect(refusal(parsed([{ Method: BEARER, data: [{ ...DATA, InResponseTo: '_other' }] }]))).to.deep.equal({ message: REFUSED.otherRequest, reason: "the assertion answers request _other, not this login's _req1" });
    const { InResponseTo: _irt, ...unsolicited } = DATA;
    expect(refusal(parsed([{ Method: BEARER, data: [unsolicited] }]))?.message).to.equal(REFUSED.unsolicited);
  });

  it('names the Recipient when it is not the ACS, or missing', () => {
    expect(refusal(parsed([{ Method: BEARER, data: [{ ...DATA, Recipient: 'https://other/acs' }] }]))?.reason).to.equal(`the assertion's Recipient is https://other/acs, not ${ACS}`);
    const { Recipient: _r, ...noRecipient } = DATA;
    expect(refusal(parsed([{ Method: BEARER, data: [noRecipient] }]))?.reason).to.equal(`the assertion's Recipient is (none), not ${ACS}`);
  });

  it('requires NotOnOrAfter on the confirmation, and exactly one Conditions', () => {
    const { NotOnOrAfter: _n, ...open } = DATA;
    expect(refusal(parsed([{ Method: BEARER, data: [open] }]))).to.deep.equal({ message: REFUSED.unverified, reason: 'the bearer SubjectConfirmationData has no NotOnOrAfter' });
    expect(refusal(parsed([{ Method: BEARER, data: [DATA] }], []))?.reason).to.equal('the assertion has 0 Conditions; one is expected');
    expect(refusal(parsed([{ Method: BEARER, data: [DATA] }], null))?.reason).to.equal('the assertion has 0 Conditions; one is expected');
    expect(refusal(parsed([{ Method: BEARER, data: [DATA] }], [{}, {}]))?.reason).to.equal('the assertion has 2 Conditions; one is expected');
    expect(refusal(parsed([{ Method: BEARER, data: [DATA] }], [{}]))).to.equal(undefined); // a Conditions without times bounds nothing more
  });

  it('allows 30 s of skew at each end of both windows, and not a millisecond more', () => {
    const at = (iso: string) => new Date(Date.parse(iso));
    const windowed = parsed([{ Method: BEARER, data: [{ ...DATA, NotBefore: '2026-01-01T12:01:00Z' }] }], [{}]);
    expect(refusal(windowed, at('2026-01-01T12:00:30Z'))).to.equal(undefined);
    expect(refusal(windowed, at('2026-01-01T12:00:29.999Z'))).to.deep.equal({
      message: REFUSED.expired,
      reason: 'SubjectConfirmationData NotBefore 2026-01-01T12:01:00Z is in the future (now 2026-01-01T12:00:29.999Z, skew 30 s)',
    });
    expect(refusal(windowed, at('2026-01-01T12:05:29.999Z'))).to.equal(undefined);
    expect(refusal(windowed, at('2026-01-01T12:05:30Z'))).to.deep.equal({
      message: REFUSED.expired,
      reason: 'SubjectConfirmationData NotOnOrAfter 2026-01-01T12:05:00Z has passed (now 2026-01-01T12:05:30.000Z, skew 30 s)',
    });
    const conditions = parsed([{ Method: BEARER, data: [{ ...DATA, NotOnOrAfter: '2026-01-01T13:00:00Z' }] }], [{ NotBefore: '2026-01-01T12:01:00Z', NotOnOrAfter: '2026-01-01T12:02:00Z' }]);
    expect(refusal(conditions, at('2026-01-01T12:00:29Z'))?.reason).to.equal('Conditions NotBefore 2026-01-01T12:01:00Z is in the future (now 2026-01-01T12:00:29.000Z, skew 30 s)');
    expect(refusal(conditions, at('2026-01-01T12:02:30Z'))?.reason).to.equal('Conditions NotOnOrAfter 2026-01-01T12:02:00Z has passed (now 2026-01-01T12:02:30.000Z, skew 30 s)');
    expect(refusal(conditions, at('2026-01-01T12:01:30Z'))).to.equal(undefined);
  });

  it('takes a Conditions element without attributes (xml2js gives it no $) as bounding nothing more', () => {
    const value = parsed([{ Method: BEARER, data: [DATA] }], null);
    expect(refusal({ Assertion: { ...value.Assertion, Conditions: [{}] } })).to.equal(undefined);
  });

  it('names the attribute whose time is not one', () => {
    expect(refusal(parsed([{ Method: BEARER, data: [{ ...DATA, NotBefore: 'soon' }] }], [{}]))?.reason).to.equal('SubjectConfirmationData NotBefore is not a UTC xs:dateTime: soon');
  });

  it('reads times only as UTC xs:dateTime, with an optional fraction', () => {
    const confirm = (NotOnOrAfter: string) => refusal(parsed([{ Method: BEARER, data: [{ ...DATA, NotOnOrAfter }] }], [{}]));
    expect(confirm('2026-01-01T12:05:00.5Z')).to.equal(undefined);
    expect(confirm('2026-01-01T12:05:00.125Z')).to.equal(undefined);
    for (const bad of ['2026-01-01T12:05:00', '2026-01-01T12:05:00+00:00', 'x2026-01-01T12:05:00Z', '2026-01-01T12:05:00Zx', '2026-01-01T12:05:00.Z', '2026-01-01T12:05:00.aZ', '2026-01-01 12:05:00Z', '2026-13-45T12:05:00Z']) {
      expect(confirm(bad), bad).to.deep.equal({ message: REFUSED.unverified, reason: `SubjectConfirmationData NotOnOrAfter is not a UTC xs:dateTime: ${bad}` });
    }
  });
});
