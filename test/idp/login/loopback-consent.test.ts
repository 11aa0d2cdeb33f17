/** Which authorizations are asked: a public client's loopback redirect, whatever its port. */
import { expect } from 'chai';
import { consentPortOf, loopbackPort } from '../../../src/idp/login/loopback-consent.js';

describe('idp/loopback-consent', () => {
  it('reads the port of an http loopback redirect, and nothing else', () => {
    expect(loopbackPort('http://127.0.0.1:53117/callback')).to.equal('53117');
    expect(loopbackPort('http://localhost:8085/auth/callback')).to.equal('8085');
    expect(loopbackPort('http://[::1]:9000/cb')).to.equal('9000');
    expect(loopbackPort('http://127.0.0.1/cb')).to.equal('80');
    for (const other of ['https://127.0.0.1:53117/cb', 'http://127.0.0.2:1/cb', 'http://localhost.example.org/cb', 'http://app.internal/cb', 'com.example.app:/cb', 'not a url', undefined, 5]) {
      expect(loopbackPort(other), String(other)).to.equal(undefined);
    }
  });

  it('asks for public clients only', () => {
    expect(consentPortOf({ clientAuthMethod: 'none' }, 'http://127.0.0.1:1/cb')).to.equal('1');
    expect(consentPortOf({ clientAuthMethod: 'client_secret_basic' }, 'http://127.0.0.1:1/cb')).to.equal(undefined);
    expect(consentPortOf(undefined, 'http://127.0.0.1:1/cb')).to.equal(undefined);
  });
});
