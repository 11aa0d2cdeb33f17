import { expect } from 'chai';
import { clientAddressOf, parseTrustedProxies, sourceOf, TrustedProxiesInvalid } from '../../src/http/client-address.js';

describe('http: client address and trusted proxies', function () {
  const proxies = parseTrustedProxies(' 127.0.0.1, 10.0.0.0/8 ,fd00::/8');

  it('trusts no proxy by default: the peer is the source whatever X-Forwarded-For says', function () {
    const none = parseTrustedProxies(undefined);
    expect(none.described).to.equal('none');
    expect(clientAddressOf('127.0.0.1', '198.51.100.7', none)).to.equal('127.0.0.1');
    expect(clientAddressOf('::ffff:127.0.0.1', undefined, none)).to.equal('127.0.0.1');
  });

  it('reads X-Forwarded-For only from a trusted peer, from the right, up to the first untrusted hop', function () {
    expect(clientAddressOf('127.0.0.1', '198.51.100.7', proxies)).to.equal('198.51.100.7');
    expect(clientAddressOf('192.0.2.9', '198.51.100.7', proxies), 'untrusted peer').to.equal('192.0.2.9');
    // The client wrote the first entry itself: only what the proxies appended counts.
    expect(clientAddressOf('127.0.0.1', '203.0.113.1, 198.51.100.7, 10.1.2.3', proxies)).to.equal('198.51.100.7');
    expect(clientAddressOf('::ffff:10.0.0.5', ['203.0.113.1', '198.51.100.7'], proxies)).to.equal('198.51.100.7');
  });

  it('stops at the last trusted hop on a malformed entry, never at a value the client chose', function () {
    expect(clientAddressOf('127.0.0.1', 'not-an-ip', proxies)).to.equal('127.0.0.1');
    expect(clientAddressOf('127.0.0.1', '203.0.113.1, garbage, 10.0.0.9', proxies)).to.equal('10.0.0.9');
  });

  it('refuses a bad entry, naming the key and the entry', function () {
    for (const [raw, why] of [
      ['10.0.0.0/33', 'has a prefix length that is not 0-32'],
      ['proxy.example', 'is not an IP address or CIDR range'],
      ['0.0.0.0/0', 'trusts every address'],
    ] as const) {
      const err = (() => { try { parseTrustedProxies(`127.0.0.1,${raw}`); } catch (e: unknown) { return e; } return undefined; })();
      expect(err, raw).to.be.instanceOf(TrustedProxiesInvalid);
      expect((err as Error).message).to.contain(`SVC_TRUSTED_PROXIES: '${raw}' ${why}`);
    }
  });

  it('keys IPv4 by address and IPv6 by its /64', function () {
    expect(sourceOf('198.51.100.7')).to.equal('198.51.100.7');
    expect(sourceOf('2001:db8:1:2:aaaa::1')).to.equal('2001:db8:1:2::/64');
    expect(sourceOf('2001:0db8:0001:0002:bbbb:0:0:2')).to.equal('2001:db8:1:2::/64');
    expect(sourceOf('::1')).to.equal('0:0:0:0::/64');
    expect(sourceOf('')).to.equal('unknown');
  });
});
