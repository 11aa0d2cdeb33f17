import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { createCookieKeys } from '../../src/lib/cookie-keys.js';

/** Keygrip's default signature, computed independently: HMAC-SHA1, base64 made URL-safe, no padding. */
const keygripSign = (key: string, data: string): string =>
  createHmac('sha1', key).update(data).digest('base64').replace(/\/|\+|=/g, (c) => ({ '/': '_', '+': '-', '=': '' })[c] ?? c);

describe('cookie keys', () => {
  const data = '_interaction=AbCdEf0123456789; path=/api/idp/interaction/AbCdEf0123456789';

  it("sign with the first key exactly as Keygrip does, so cookies signed before keep verifying", () => {
    const keys = createCookieKeys(['new-key-0123456789', 'old-key-0123456789']);
    expect(keys.sign(data)).to.equal(keygripSign('new-key-0123456789', data));
    expect(keys.sign('ü')).to.equal(keygripSign('new-key-0123456789', 'ü'));
  });

  it('give the position of the key that signed, for every key listed, and -1 for any other digest', () => {
    const keys = createCookieKeys(['new-key-0123456789', 'old-key-0123456789']);
    expect(keys.index(data, keygripSign('new-key-0123456789', data))).to.equal(0);
    expect(keys.index(data, keygripSign('old-key-0123456789', data))).to.equal(1);
    expect(keys.verify(data, keygripSign('old-key-0123456789', data))).to.equal(true);
    expect(keys.index(data, keygripSign('retired-key-0123456789', data))).to.equal(-1);
    expect(keys.index(`${data}x`, keygripSign('new-key-0123456789', data))).to.equal(-1);
    const good = keygripSign('new-key-0123456789', data);
    expect(keys.index(data, `${good.slice(0, -1)}${good.endsWith('A') ? 'B' : 'A'}`)).to.equal(-1);
    expect(keys.index(data, good.slice(0, -1))).to.equal(-1);
    expect(keys.index(data, '')).to.equal(-1);
    expect(keys.verify(data, `${good}A`)).to.equal(false);
  });

  it('refuse an empty key list, as Keygrip does', () => {
    expect(() => createCookieKeys([])).to.throw('at least one cookie key is needed');
  });
});
