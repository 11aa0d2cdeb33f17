import { expect } from 'chai';
import {
  decodePayload, encodePayload, IdpPayloadTooLarge, isLookupId, MAX_ID_LENGTH, ttlMsFor,
} from '../../../src/idp/storage/adapter-payload.js';

describe('idp: adapter payloads and bounds', function () {
  it('turns expiresIn seconds into a TTL of at least one second', function () {
    expect(ttlMsFor(undefined)).to.equal(undefined);
    expect(ttlMsFor(60)).to.equal(60_000);
    expect(ttlMsFor(1.2)).to.equal(2_000);
    expect(ttlMsFor(0)).to.equal(1_000);
    expect(ttlMsFor(-5)).to.equal(1_000);
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => ttlMsFor(bad), String(bad)).to.throw(RangeError, /^expiresIn must be a finite number of seconds/);
    }
  });

  it('counts the limit in bytes of JSON, not characters', function () {
    const payload = { accountId: 'é'.repeat(40) };   // 2 bytes each in UTF-8
    const bytes = Buffer.byteLength(JSON.stringify(payload));
    expect(decodePayload(encodePayload('Session', payload, bytes))).to.deep.equal(payload);
    expect(() => encodePayload('Session', payload, bytes - 1)).to.throw(IdpPayloadTooLarge,
      `identity provider Session payload of ${bytes} bytes is over the ${bytes - 1}-byte limit`);
  });

  it('takes a look-up id only when it is a non-empty string within the bound', function () {
    expect(isLookupId('abc')).to.equal(true);
    expect(isLookupId('a'.repeat(MAX_ID_LENGTH))).to.equal(true);
    for (const bad of ['', 'a'.repeat(MAX_ID_LENGTH + 1), undefined, 42, null]) {
      expect(isLookupId(bad), String(bad)).to.equal(false);
    }
  });
});
