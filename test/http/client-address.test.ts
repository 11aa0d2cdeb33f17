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

  it('refuses every malformed form of a prefix, for IPv4 up to 32 bits and IPv6 up to 128', function () {
    const refused = (raw: string): string | undefined => { try { parseTrustedProxies(raw); return undefined; } catch (e: unknown) { return e instanceof TrustedProxiesInvalid ? e.message : String(e); } };
    expect(refused('10.0.0.0/32')).to.equal(undefined);
    expect(refused('fd00::/128')).to.equal(undefined);
    expect(refused('fd00::/64')).to.equal(undefined);
    expect(refused('fd00::/129')).to.contain("'fd00::/129' has a prefix length that is not 0-128");
    expect(refused('10.0.0.0/33')).to.contain('not 0-32');
    for (const raw of ['10.0.0.0/x8', '10.0.0.0/8x', '10.0.0.0/0008', '10.0.0.0/', '10.0.0.0/8/8', '/8']) {
      expect(refused(raw), raw).to.be.a('string').and.to.contain(`'${raw}'`);
    }
    expect(new TrustedProxiesInvalid('x', 'why').name).to.equal('TrustedProxiesInvalid');
  });

  it('trusts an IPv6 proxy by its range, and says what it trusts', function () {
    expect(proxies.described).to.equal('127.0.0.1, 10.0.0.0/8, fd00::/8');
    expect(proxies.has('fd12::5')).to.equal(true);
    expect(proxies.has('fe80::5')).to.equal(false);
    expect(proxies.has('::ffff:10.2.3.4'), 'an IPv4 peer on a dual-stack socket').to.equal(true);
    expect(proxies.has('not-an-address')).to.equal(false);
    expect(proxies.has('')).to.equal(false);
    expect(parseTrustedProxies('').has('127.0.0.1')).to.equal(false);
    expect(clientAddressOf('fd12::5', '2001:db8::7', proxies)).to.equal('2001:db8::7');
    expect(clientAddressOf(undefined, '198.51.100.7', proxies), 'a closed socket').to.equal('');
  });

  it('reads at most 16 hops of X-Forwarded-For: a longer chain of proxies stops at the last one read', function () {
    const chain = (n: number) => Array.from({ length: n }, (_, i) => `10.0.0.${i + 1}`);
    // 16 trusted hops after a client address: the walk reads 16 entries and stops on a proxy.
    expect(clientAddressOf('127.0.0.1', ['198.51.100.7', ...chain(15)].join(', '), proxies)).to.equal('198.51.100.7');
    expect(clientAddressOf('127.0.0.1', ['198.51.100.7', ...chain(16)].join(', '), proxies)).to.equal('10.0.0.1');
    expect(clientAddressOf('127.0.0.1', ['198.51.100.7', ...chain(17)].join(', '), proxies)).to.equal('10.0.0.2');
    // Every hop a proxy: the leftmost one read is the source.
    expect(clientAddressOf('127.0.0.1', '10.0.0.3, 10.0.0.4', proxies)).to.equal('10.0.0.3');
    expect(clientAddressOf('127.0.0.1', ' , 198.51.100.7', proxies), 'an empty entry stops the walk').to.equal('198.51.100.7');
  });

  it('maps only a whole IPv4-mapped address to IPv4', function () {
    expect(clientAddressOf('::ffff:198.51.100.17', undefined, proxies)).to.equal('198.51.100.17');
    expect(clientAddressOf('::FFFF:198.51.100.7', undefined, proxies)).to.equal('198.51.100.7');
    expect(clientAddressOf('1::ffff:198.51.100.7', undefined, proxies), 'not a mapped address').to.equal('1::ffff:198.51.100.7');
    expect(clientAddressOf('::ffff:198.51.100.7x', undefined, proxies)).to.equal('::ffff:198.51.100.7x');
  });

  it('expands every IPv6 spelling before taking its /64', function () {
    expect(sourceOf('2001:db8::')).to.equal('2001:db8:0:0::/64');
    expect(sourceOf('2001:db8:1:2:3:4:5:6')).to.equal('2001:db8:1:2::/64');
    expect(sourceOf('::2001:db8:1:2:3')).to.equal('0:0:0:2001::/64');
    expect(sourceOf('2001:db8:1:2::%eth0'), 'a zone').to.equal('2001:db8:1:2::/64');
    expect(sourceOf('1:2:3::4')).to.equal('1:2:3:0::/64');
    expect(sourceOf('1:2:3:4:5:6:1.2.3.4'), 'an embedded IPv4 tail, uncompressed').to.equal('1:2:3:4::/64');
    expect(sourceOf('::192.0.2.33'), 'an embedded IPv4 tail after ::').to.equal('0:0:0:0::/64');
    expect(sourceOf('1:2::192.0.2.33')).to.equal('1:2:0:0::/64');
    expect(sourceOf('1:2:3:4::192.0.2.33')).to.equal('1:2:3:4::/64');
  });

  it('takes a trusted peer without X-Forwarded-For as the source, and trusts an IPv6 proxy by its address', function () {
    expect(clientAddressOf('127.0.0.1', undefined, proxies)).to.equal('127.0.0.1');
    const v6 = parseTrustedProxies('2001:db8::1');
    expect(v6.has('2001:db8::1')).to.equal(true);
    expect(v6.has('2001:db8::2')).to.equal(false);
    expect(clientAddressOf('2001:db8::1', '198.51.100.7', v6)).to.equal('198.51.100.7');
  });
});
