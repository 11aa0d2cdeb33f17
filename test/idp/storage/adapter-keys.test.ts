/**
 * The refs the identity provider's adapter stores ids under (src/idp/storage/adapter-keys.ts),
 * against known answers: the suite computes its expected keys with createIdRefs itself, so a
 * change to the derivation (a shorter derived key, another salt or info) would pass there
 * unnoticed. The values below were computed apart from svc (RFC 5869 HKDF-SHA256, then
 * HMAC-SHA256, in another language); a change that alters them also ends every stored login.
 */
import { expect } from 'chai';
import { createHmac, hkdfSync } from 'node:crypto';
import { createIdRefs } from '../../../src/idp/storage/adapter-keys.js';

const SERVER_KEY = 'known-answer server key';

describe('idp/storage/adapter-keys: refs of ids', function () {
  it('match the known answers of HKDF-SHA256 (32 bytes, salt svc-idp) then HMAC-SHA256', function () {
    const ref = createIdRefs(SERVER_KEY);
    expect(ref('refresh-token-id-1')).to.equal('nfrXlH8AeCwnYUfe_8YFvT3ALsWaLDPVJ_BItd4wBcg');
    expect(ref('')).to.equal('a6kngsd8RWEfWhjzFzNgAfgDEk-HLHPn7w6Uvwzry_Q');
  });

  it('differ under another server key, and are 43 base64url characters', function () {
    const a = createIdRefs(SERVER_KEY)('refresh-token-id-1');
    const b = createIdRefs(`${SERVER_KEY}.`)('refresh-token-id-1');
    expect(b).to.not.equal(a);
    expect(b).to.match(/^[A-Za-z0-9_-]{43}$/);
  });

  it('are the HMAC-SHA256 of the id under the key derived from server.secretkey', function () {
    const id = 'AbCdEf0123456789AbCdEf0123456789AbCdEf01234';
    const key = hkdfSync('sha256', 'server-key-0123456789', 'svc-idp', 'svc idp-record-id v1', 32);
    expect(createIdRefs('server-key-0123456789')(id)).to.equal(createHmac('sha256', Buffer.from(key)).update(id, 'utf8').digest('base64url'));
  });

  it('give the same answers when asked again (recent refs are remembered), for short and long ids', function () {
    const ref = createIdRefs(SERVER_KEY);
    const long = 'y'.repeat(300);
    const first = [ref('refresh-token-id-1'), ref(long), ref('')];
    for (let i = 0; i < 3; i++) expect([ref('refresh-token-id-1'), ref(long), ref('')]).to.deep.equal(first);
    expect(first[0]).to.equal('nfrXlH8AeCwnYUfe_8YFvT3ALsWaLDPVJ_BItd4wBcg');
    expect(createIdRefs(`${SERVER_KEY}.`)('refresh-token-id-1')).to.not.equal(first[0]);
  });

  it('answer a ref asked again without a new HMAC (at most half the CPU of one)', function () {
    const ref = createIdRefs(SERVER_KEY);
    const ids = Array.from({ length: 20_000 }, (_, i) => `id-${i}-${'z'.repeat(36)}`);
    const cpu = (f: () => void): number => {
      const start = process.cpuUsage();
      f();
      const used = process.cpuUsage(start);
      return used.user + used.system;
    };
    // Distinct ids (none remembered yet) against one id asked as often.
    const fresh = cpu(() => ids.forEach((id) => ref(id)));
    const again = cpu(() => ids.forEach(() => ref('the-same-id-0123456789')));
    expect(again).to.be.below(fresh / 2);
  });
});
