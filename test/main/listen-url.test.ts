import { expect } from 'chai';
import { firstStartUrl, listenUrl, urlListenMismatch } from '../../src/main/listen-url.js';

describe('listen-url', () => {
  it('writes the listen address as the first url; the wildcard is reached on loopback, https with TLS', () => {
    expect(firstStartUrl({ host: '127.0.0.1', port: 9123, tls: false })).to.equal('http://127.0.0.1:9123');
    expect(firstStartUrl({ host: '0.0.0.0', port: 9123, tls: true })).to.equal('https://127.0.0.1:9123');
    expect(listenUrl({ host: '::1', port: 9, tls: false })).to.equal('http://[::1]:9');
    expect(firstStartUrl({ host: '127.0.0.1', port: 0, tls: false }), 'port not known yet').to.equal('http://127.0.0.1:8080');
  });

  it('names a loopback url on another port or scheme than the listener, and nothing else', () => {
    const listen = { host: '127.0.0.1', port: 9123, tls: false };
    expect(urlListenMismatch('http://127.0.0.1:8080', listen)).to.equal(
      'url http://127.0.0.1:8080 is on loopback but this server listens on http://127.0.0.1:9123: unless a proxy or load balancer at http://127.0.0.1:8080 forwards to svc, browsers sent to url after an SSO login will not reach it; set url in svc-cm to the address users reach svc at (the balancer\'s when there is one, http://127.0.0.1:9123 only when users reach this server directly)',
    );
    expect(urlListenMismatch('http://localhost:8080', { ...listen, host: '0.0.0.0' })).to.be.a('string');
    expect(urlListenMismatch('https://127.0.0.1:9123', listen), 'scheme').to.be.a('string');
    expect(urlListenMismatch('http://127.0.0.1:9123', listen)).to.equal(undefined);
    expect(urlListenMismatch('http://localhost:9123/', listen)).to.equal(undefined);
    expect(urlListenMismatch('https://svc.example.com', listen), 'a name in front: not ours to judge').to.equal(undefined);
    expect(urlListenMismatch('http://127.0.0.1:8080', { ...listen, host: '10.0.0.5' }), 'listening elsewhere only').to.equal(undefined);
  });

  it('behind a load balancer, never tells two replicas to set url to two different addresses', () => {
    // Two replicas (or workers' processes) on 31081 and 31082 behind a balancer on 8080.
    const advice = [31081, 31082].map((port) => urlListenMismatch('http://127.0.0.1:8080', { host: '127.0.0.1', port, tls: false }) ?? '');
    for (const line of advice) {
      expect(line).to.include('set url in svc-cm to the address users reach svc at');
      expect(line).not.to.match(/set url in svc-cm to http/);
    }
  });
});
