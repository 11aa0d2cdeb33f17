import { expect } from 'chai';
import { createHmac, createSecretKey, hkdfSync } from 'node:crypto';
import { createIdRefs } from '../../../src/idp/storage/adapter-keys.js';
import { costRatio } from '../../helpers/cpu-cost.js';

describe('adapter keys: id refs', () => {
  const id = 'AbCdEf0123456789AbCdEf0123456789AbCdEf01234';

  it("are the HMAC-SHA256 of the id under the key derived from server.secretkey, and differ with another key", () => {
    const key = hkdfSync('sha256', 'server-key-0123456789', 'svc-idp', 'svc idp-record-id v1', 32);
    const ref = createIdRefs('server-key-0123456789');
    expect(ref(id)).to.equal(createHmac('sha256', Buffer.from(key)).update(id, 'utf8').digest('base64url'));
    expect(ref(id)).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(createIdRefs('other-key-0123456789')(id)).to.not.equal(ref(id));
  });

  it('cost about one HMAC with a key object: the derived key is not handed over raw at every call', function () {
    this.timeout(30_000);
    const ref = createIdRefs('server-key-0123456789');
    const keyObject = createSecretKey(Buffer.alloc(32, 7));
    // A raw key cost about 10 times a key object's HMAC on Node 24 (two thrown errors per call).
    expect(costRatio(() => ref(id), () => createHmac('sha256', keyObject).update(id, 'utf8').digest('base64url'))).to.be.below(2);
  });
});
